// The clock of the lease holder's deadlines (docs/counters.md, holder rule 4). A lease is spent
// from only until requestSentAt + ttl on the holder's clock, and the leader expires it after
// ttl * (1 + drift) + margin of its own monotonic clock (Theorem 2). performance.now() is
// monotonic but, on Linux (CLOCK_MONOTONIC), stands still while the machine or VM is suspended:
// a holder resumed after a suspend longer than the ttl would go on spending a lease the leader
// had already expired. The wall clock keeps running through a suspend but may be stepped.
//
// So the holder's clock advances, at each reading, by the monotonic clock's advance plus what the
// wall clock gained on it since the previous reading beyond `wallClockJitterMs`, never by a
// negative amount: a suspend (the process reads no clock during one) advances it by the wall
// clock, less that allowance (the leader's margin covers it); a wall clock stepped back is
// ignored; a wall clock stepped forward moves deadlines earlier (the holder stops spending sooner:
// safe). Without the allowance, the 1 ms resolution of the wall clock counted at almost every
// reading: at thousands of readings a second (one per credit spend) the holder's clock ran about
// twice as fast as time, and leases reached their deadlines at about half their ttl. The leader's
// expiry keeps the plain monotonic clock: its own suspend only makes it wait longer.

/**
 * What the wall clock may gain on the monotonic clock between two readings without being a
 * suspend or a step: its resolution (Date.now(), 1 ms) and the moment between the two reads.
 */
export const wallClockJitterMs = 2;

export class HolderClock {
  private lastMonoMs: number;
  private lastWallMs: number;
  private valueMs: number;

  constructor(
    private readonly monoNowMs: () => number,
    private readonly wallNowMs: () => number,
  ) {
    this.lastMonoMs = monoNowMs();
    this.lastWallMs = wallNowMs();
    this.valueMs = this.lastMonoMs;
  }

  nowMs(): number {
    const mono = this.monoNowMs();
    const wall = this.wallNowMs();
    const monoAdvanceMs = Math.max(mono - this.lastMonoMs, 0);
    const wallGainMs = Math.max(wall - this.lastWallMs - monoAdvanceMs - wallClockJitterMs, 0);
    this.valueMs += monoAdvanceMs + wallGainMs;
    this.lastMonoMs = mono;
    this.lastWallMs = wall;
    return this.valueMs;
  }
}
