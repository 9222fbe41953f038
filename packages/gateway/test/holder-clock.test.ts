// The lease holder's clock (counters/credits/holder-clock.ts): it runs through a suspend (the
// monotonic clock stands still, the wall clock does not), ignores a wall clock stepped back, and a
// lease reaches its deadline after a suspend longer than its ttl.
import { describe, expect, it } from "vitest";
import { LeaseHolder } from "@keyraft/core";
import { HolderClock, wallClockJitterMs } from "../src/counters/credits/holder-clock.js";

function sources() {
  const t = { monoMs: 1_000, wallMs: 1_700_000_000_000 };
  return {
    t,
    clock: new HolderClock(
      () => t.monoMs,
      () => t.wallMs,
    ),
  };
}

describe("HolderClock", () => {
  it("follows the monotonic clock while both run", () => {
    const { t, clock } = sources();
    const start = clock.nowMs();
    t.monoMs += 250;
    t.wallMs += 250;
    expect(clock.nowMs() - start).toBe(250);
  });

  it("runs through a suspend: the wall clock's advance counts when the monotonic one stood still", () => {
    const { t, clock } = sources();
    const start = clock.nowMs();
    t.wallMs += 30_000; // suspended 30 s: performance.now() did not move
    expect(clock.nowMs() - start).toBe(30_000 - wallClockJitterMs);
  });

  it("ignores a wall clock stepped back, never goes back itself, and takes a step forward (deadlines only come earlier)", () => {
    const { t, clock } = sources();
    const start = clock.nowMs();
    t.wallMs -= 60_000;
    t.monoMs += 100;
    expect(clock.nowMs() - start).toBe(100);
    t.monoMs += 100;
    t.wallMs += 100;
    expect(clock.nowMs() - start).toBe(200);
    t.wallMs += 5_000;
    expect(clock.nowMs() - start).toBe(5_200 - wallClockJitterMs);
  });

  it("runs at the monotonic clock's rate when read thousands of times a second against a wall clock of 1 ms resolution", () => {
    let monoMs = 1_000.0123;
    const wallStartMs = 1_700_000_000_000.4;
    const clock = new HolderClock(
      () => monoMs,
      () => Math.floor(wallStartMs + monoMs),
    );
    const start = clock.nowMs();
    // 10 s read every 37 µs (one reading per credit spend at about 27,000 spends a second).
    for (let i = 0; i < 270_000; i++) {
      monoMs += 0.037;
      clock.nowMs();
    }
    expect(clock.nowMs() - start).toBeCloseTo(9_990, 0);
  });

  it("a lease is no longer spent from after a suspend longer than its ttl", () => {
    const { t, clock } = sources();
    const holder = LeaseHolder.create("n1", {
      ttlMs: 2_000,
      requestTimeoutMs: 1_000,
      settleRetryMs: 500,
      requestCredits: 10,
      requestCreditsMax: 10,
      renewFraction: 0.25,
      refusedBackoffMs: 250,
    });
    holder.verify("k", 1, clock.nowMs());
    const asked = holder.poll(clock.nowMs());
    expect(asked.requests).toHaveLength(1);
    holder.onOutcome(
      { type: "granted", keyId: "k", nodeId: "n1", seq: 1, granted: 10, epoch: 0, ownerNodeId: "n1", low: false },
      clock.nowMs(),
    );
    expect(holder.verify("k", 1, clock.nowMs()).result.type).toBe("admitted");
    t.wallMs += 10_000; // a VM suspend of 10 s: the monotonic clock stood still
    expect(holder.verify("k", 1, clock.nowMs()).result.type).toBe("no-lease");
  });
});
