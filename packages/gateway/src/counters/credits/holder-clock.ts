// The clock of the lease holder's deadlines (docs/counters.md, holder rule 4). A lease is spent
// from only until requestSentAt + ttl on the holder's clock, and the leader expires it after
// ttl * (1 + drift) + margin of its own monotonic clock (Theorem 2). performance.now() is
// monotonic but, on Linux (CLOCK_MONOTONIC), stands still while the machine or VM is suspended:
// a holder resumed after a suspend longer than the ttl would go on spending a lease the leader
// had already expired. The wall clock keeps running through a suspend but may be stepped.
//
// So the holder's clock advances, at each reading, by the larger of what each source advanced
// since the previous reading, never by a negative amount: a suspend advances it by the wall
// clock, a wall clock stepped back is ignored (the monotonic advance counts), a wall clock
// stepped forward moves deadlines earlier (the holder stops spending sooner: safe). The leader's
// expiry keeps the plain monotonic clock: its own suspend only makes it wait longer.

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
    this.valueMs += Math.max(mono - this.lastMonoMs, wall - this.lastWallMs, 0);
    this.lastMonoMs = mono;
    this.lastWallMs = wall;
    return this.valueMs;
  }
}
