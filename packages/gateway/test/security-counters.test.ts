// Rate-limit counters a caller creates (the probes, scaled down): an ordinary key's inline
// limits cannot fill the node's table for other tenants, and cannot reset a configured limit.
import { AsyncLimits, asyncDurationsMax, limiterCountersPerOwnerMax, SlidingWindowLimiter } from "@keyraft/core";
import { afterEach, describe, expect, it } from "vitest";
import { harness, type Harness } from "./app-harness.js";

let h: Harness;
afterEach(async () => {
  await h?.app.close();
});

const yearMs = 366 * 24 * 3600 * 1000;

describe("counters a caller creates through verifyKey", () => {
  it("are bounded per limit owner: 500 requests of 32 inline limits leave other tenants' limits working", async () => {
    const limiter = new SlidingWindowLimiter({ entriesMax: 2_000 });
    h = await harness({ deps: { limiter } });
    const attacker = await h.createKey({});
    const victim = await h.createKey({ ratelimit: { limit: 100, duration: 60_000 } }, await h.createApi("victim"));
    for (let request = 0; request < 500; request++) {
      const ratelimits = Array.from({ length: 32 }, (_, i) => ({
        name: `${"x".repeat(200)}-${request}-${i}`,
        limit: 1_000_000,
        duration: yearMs,
      }));
      const response = await h.post("/v1/keys.verifyKey", { key: attacker.key, ratelimits }, null);
      expect(response.json()).toMatchObject({ valid: true });
    }
    expect(limiter.size()).toBeLessThanOrEqual(limiterCountersPerOwnerMax);
    expect(limiter.refusedForCapacity).toBe(0);
    // Another tenant's new counter still finds room.
    const verified = await h.post("/v1/keys.verifyKey", { key: victim.key }, null);
    expect(verified.json()).toMatchObject({ valid: true, code: "VALID", ratelimit: { limit: 100, remaining: 99 } });
  });

  it("cannot reset a configured limit by naming it with another window (2 per 60 s stays 2 per 60 s)", async () => {
    h = await harness();
    const { key } = await h.createKey({ ratelimit: { limit: 2, duration: 60_000 } });
    const verify = (body: Record<string, unknown> = {}) =>
      h.post("/v1/keys.verifyKey", { key, ...body }, null).then((r) => r.json() as { code: string });
    expect((await verify()).code).toBe("VALID");
    expect((await verify()).code).toBe("VALID");
    expect((await verify()).code).toBe("RATE_LIMITED");
    for (let round = 0; round < 3; round++) {
      h.clock.nowMs += 10;
      await verify({ ratelimits: [{ name: "default", limit: 1_000_000, duration: 1000 }] });
      expect((await verify()).code).toBe("RATE_LIMITED");
    }
  });
});

describe("async limits (ratelimits.limit with async: true)", () => {
  it("a caller choosing more window lengths than asyncDurationsMax is never refused, nor does it refuse others", () => {
    const limits = new AsyncLimits(new SlidingWindowLimiter());
    expect(limits.admit("theirs", 2, 60_000, 1, 0).success).toBe(true);
    for (let i = 0; i < asyncDurationsMax + 10; i++) {
      expect(limits.admit(`mine-${i}`, 5, 1_000 + i, 1, 1).success).toBe(true);
      // Another caller's limit, in use meanwhile, keeps its count.
      if (i % 100 === 0) expect(limits.admit("theirs", 2, 60_000, 0, 1).remaining).toBe(1);
    }
    expect(limits.admit("theirs", 2, 60_000, 1, 2).success).toBe(true);
    expect(limits.admit("theirs", 2, 60_000, 1, 3).success).toBe(false);
    expect(limits.report(3).reports.length).toBeLessThanOrEqual(asyncDurationsMax);
  });
});
