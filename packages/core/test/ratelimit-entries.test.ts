import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { SlidingWindowLimiter } from "../src/ratelimit/sliding-window.js";
import { limiterChecksPerCallMax } from "../src/limits.js";

const check = (key: string, cost = 1, limit = 5, durationMs = 1000) => ({ key, limit, durationMs, cost });

describe("SlidingWindowLimiter: memory bound (entriesMax)", () => {
  it("holds entriesMax keys and refuses a new key past it (fail closed), with 0 remaining", () => {
    const limiter = new SlidingWindowLimiter({ entriesMax: 3 });
    for (const key of ["a", "b", "c"]) expect(limiter.limit([check(key)], 0).success).toBe(true);
    expect(limiter.size()).toBe(3);
    const refused = limiter.limit([check("d")], 10);
    expect(refused.success).toBe(false);
    expect(refused.outcomes[0]).toEqual({ success: false, limit: 5, remaining: 0, resetAtMs: 1010 });
    expect(refused.touched).toEqual([]);
    expect(limiter.size()).toBe(3);
    expect(limiter.refusedForCapacity).toBe(1);
    // Known keys keep working, and a cost-0 read of a new key needs no entry.
    expect(limiter.limit([check("a")], 10).success).toBe(true);
    expect(limiter.limit([check("d", 0)], 10).outcomes[0]).toEqual({
      success: true,
      limit: 5,
      remaining: 5,
      resetAtMs: 10,
    });
    // peek never sweeps (it changes nothing): a new key on a full table reads as refused.
    expect(limiter.peek([check("d")], 5_000)[0]).toMatchObject({ success: false, remaining: 0 });
    expect(limiter.size()).toBe(3);
    expect(limiter.limit([check("d")], 5_000).success).toBe(true);
  });

  it("refuses the whole call when one of its checks needs a new entry that does not fit", () => {
    const limiter = new SlidingWindowLimiter({ entriesMax: 2 });
    expect(limiter.limit([check("a")], 0).success).toBe(true);
    const result = limiter.limit([check("a"), check("b"), check("c")], 0);
    expect(result.success).toBe(false);
    expect(result.outcomes.map((o) => o.success)).toEqual([true, false, false]);
    expect(limiter.size()).toBe(1);
    expect(limiter.limit([check("a"), check("b")], 0).success).toBe(true);
    expect(limiter.size()).toBe(2);
  });

  it("evicts expired entries, so a full table of old keys makes room once they leave their windows", () => {
    const limiter = new SlidingWindowLimiter({ entriesMax: 100, bucketsPerWindow: 10 });
    for (let i = 0; i < 100; i++) expect(limiter.limit([check(`old${i}`)], 0).success).toBe(true);
    // Bucket [0, 100) is counted until 100 + 1000 - 1 = 1099.
    expect(limiter.limit([check("new", 1)], 1098).success).toBe(false);
    expect(limiter.limit([check("new", 1)], 1099).success).toBe(true);
    // Steady churn through a small table never exceeds it and keeps admitting.
    let nowMs = 2000;
    for (let i = 0; i < 5000; i++) {
      nowMs += 20;
      expect(limiter.limit([check(`churn${i}`)], nowMs).success).toBe(true);
      expect(limiter.size()).toBeLessThanOrEqual(100);
    }
  });

  it("eviction never admits more: with a tiny table and a clock that goes back, every window stays within its limit", () => {
    const call = fc.record({
      deltaMs: fc.integer({ min: -150, max: 200 }),
      keyIndex: fc.integer({ min: 0, max: 5 }),
      cost: fc.integer({ min: 0, max: 3 }),
    });
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 3 }),
        fc.integer({ min: 1, max: 8 }),
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 1, max: 300 }),
        fc.array(call, { maxLength: 150, size: "max" }),
        (entriesMax, bucketsPerWindow, limit, durationMs, calls) => {
          const limiter = new SlidingWindowLimiter({ entriesMax, bucketsPerWindow });
          const admitted = new Map<string, { atMs: number; cost: number }[]>();
          let nowMs = 1000;
          let lastJudgedMs = 0;
          for (const { deltaMs, keyIndex, cost } of calls) {
            nowMs = Math.max(0, nowMs + deltaMs);
            const key = `key${keyIndex}`;
            const result = limiter.limit([{ key, limit, durationMs, cost }], nowMs);
            // Judged at or after every earlier admission (cost-0 reads do not move the clock).
            expect(result.judgedAtMs).toBeGreaterThanOrEqual(lastJudgedMs);
            expect(result.judgedAtMs).toBeGreaterThanOrEqual(nowMs);
            if (result.success && cost > 0) lastJudgedMs = result.judgedAtMs;
            expect(limiter.size()).toBeLessThanOrEqual(entriesMax);
            if (result.success && cost > 0)
              admitted.set(key, [...(admitted.get(key) ?? []), { atMs: result.judgedAtMs, cost }]);
          }
          for (const hits of admitted.values()) {
            for (const end of hits) {
              const inWindow = hits.filter((h) => h.atMs > end.atMs - durationMs && h.atMs <= end.atMs);
              expect(inWindow.reduce((sum, h) => sum + h.cost, 0)).toBeLessThanOrEqual(limit);
            }
          }
        },
      ),
      { numRuns: 500 },
    );
  });

  it("keeps the counters of one key with several windows apart through sweeps, evictions and snapshots", () => {
    const limiter = new SlidingWindowLimiter();
    // Three windows of key "k": 10 ms (expires first), 1 s, 1,000 s.
    for (const durationMs of [10, 1_000, 1_000_000]) {
      for (let i = 0; i < 3; i++) expect(limiter.limit([check("k", 1, 3, durationMs)], 0).success).toBe(true);
      expect(limiter.limit([check("k", 1, 3, durationMs)], 0).success).toBe(false);
    }
    expect(limiter.size()).toBe(3);
    // New keys make the limiter sweep: the 10 ms counter of "k" leaves, the others stay full.
    for (let i = 0; i < 50; i++) limiter.limit([check(`other${i}`, 1, 3, 10)], 500 + i);
    const windowsOfK = limiter
      .snapshot(600)
      .filter((bucket) => bucket.key === "k")
      .map((bucket) => bucket.durationMs);
    expect(windowsOfK.sort((a, b) => a - b)).toEqual([1_000, 1_000_000]);
    expect(limiter.limit([check("k", 1, 3, 1_000)], 600).success).toBe(false);
    expect(limiter.limit([check("k", 1, 3, 1_000_000)], 600).success).toBe(false);
    expect(limiter.limit([check("k", 1, 3, 10)], 600).success).toBe(true);
    // The 1 s counter (the head of the chain after the 10 ms one left) goes next; 1,000 s stays.
    for (let i = 0; i < 50; i++) limiter.limit([check(`late${i}`, 1, 3, 10)], 5_000 + i);
    expect(limiter.limit([check("k", 1, 3, 1_000_000)], 5_100).success).toBe(false);
    expect(limiter.limit([check("k", 1, 3, 1_000)], 5_100).outcomes[0]!.remaining).toBe(2);
  });

  it("never evicts a live entry: its counts survive a full sweep", () => {
    const limiter = new SlidingWindowLimiter({ entriesMax: 1000 });
    for (let i = 0; i < 5; i++) limiter.limit([check("hot", 1, 5, 1_000_000)], 0);
    for (let i = 0; i < 3000; i++) limiter.limit([check(`cold${i}`, 1, 5, 10)], 1000 + i * 20);
    expect(limiter.limit([check("hot", 1, 5, 1_000_000)], 70_000).success).toBe(false);
  });
});

describe("SlidingWindowLimiter: caller-created counters are bounded per group (least recently used evicted)", () => {
  const grouped = (key: string, group: string, groupEntriesMax = limiterChecksPerCallMax, cost = 1) => ({
    ...check(key, cost, 5, 1_000_000),
    group,
    groupEntriesMax,
  });

  it("holds at most groupEntriesMax counters of a group, evicting its least recently used one and reporting it", () => {
    const limiter = new SlidingWindowLimiter();
    const max = limiterChecksPerCallMax;
    for (let i = 0; i < max; i++) expect(limiter.limit([grouped(`g${i}`, "owner")], i).success).toBe(true);
    // g0 is used again: g1 is now the least recently used.
    expect(limiter.limit([grouped("g0", "owner")], max).success).toBe(true);
    const result = limiter.limit([grouped("new", "owner")], max + 1);
    expect(result.success).toBe(true);
    expect(result.evicted).toEqual([{ key: "g1", durationMs: 1_000_000 }]);
    expect(limiter.groupSize("owner")).toBe(max);
    expect(limiter.evictedCounters).toBe(1);
    // g0 kept its two counts; g1 starts afresh.
    expect(limiter.peek([grouped("g0", "owner", max, 0)], max + 2)[0]!.remaining).toBe(3);
    expect(limiter.peek([grouped("g1", "owner", max, 0)], max + 2)[0]!.remaining).toBe(5);
  });

  it("one caller's flood of counters never touches another group's or a configured counter (finding 1)", () => {
    const limiter = new SlidingWindowLimiter({ entriesMax: 1_000 });
    for (let i = 0; i < 4; i++) limiter.limit([check("configured", 1, 5, 1_000_000)], 0);
    limiter.limit([grouped("theirs", "other")], 0);
    let nowMs = 1;
    for (let call = 0; call < 500; call++) {
      const checks = Array.from({ length: 32 }, (_, i) => grouped(`flood-${call}-${i}`, "attacker"));
      expect(limiter.limit(checks, nowMs++).success).toBe(true);
      expect(limiter.groupSize("attacker")).toBeLessThanOrEqual(limiterChecksPerCallMax);
    }
    expect(limiter.size()).toBeLessThanOrEqual(2 + limiterChecksPerCallMax);
    expect(limiter.refusedForCapacity).toBe(0);
    expect(limiter.peek([check("configured", 0, 5, 1_000_000)], nowMs)[0]!.remaining).toBe(1);
    expect(limiter.peek([grouped("theirs", "other", limiterChecksPerCallMax, 0)], nowMs)[0]!.remaining).toBe(4);
  });

  it("a full table evicts the least recently used grouped counter instead of refusing a newcomer", () => {
    const limiter = new SlidingWindowLimiter({ entriesMax: 10 });
    for (let i = 0; i < 5; i++) limiter.limit([check(`configured${i}`, 1, 5, 1_000_000)], 0);
    for (let i = 0; i < 5; i++) limiter.limit([grouped(`caller${i}`, `g${i}`)], 1);
    const result = limiter.limit([grouped("newcomer", "fresh")], 2);
    expect(result.success).toBe(true);
    expect(result.evicted).toEqual([{ key: "caller0", durationMs: 1_000_000 }]);
    expect(limiter.size()).toBe(10);
    // A new configured counter also finds room, by the same eviction.
    expect(limiter.limit([check("configured5", 1, 5, 1_000_000)], 3).success).toBe(true);
    // Configured counters are never evicted while live: full of them, a newcomer is refused.
    for (let i = 6; i < 10; i++)
      expect(limiter.limit([check(`configured${i}`, 1, 5, 1_000_000)], 4).success).toBe(true);
    expect(limiter.limit([grouped("late", "late")], 5).success).toBe(false);
    expect(limiter.refusedForCapacity).toBe(1);
  });

  it("restore puts a grouped bucket back into its group, within its bound", () => {
    const limiter = new SlidingWindowLimiter();
    const max = limiterChecksPerCallMax;
    for (let i = 0; i < max + 5; i++)
      limiter.restoreBucket({
        key: `r${i}`,
        limit: 5,
        durationMs: 1_000_000,
        bucketStartMs: 0,
        count: 2,
        group: "owner",
        groupEntriesMax: max,
      });
    expect(limiter.groupSize("owner")).toBe(max);
    expect(limiter.snapshot(0).every((b) => b.group === "owner" && b.groupEntriesMax === max)).toBe(true);
  });

  it("asserts a grouped check's bound holds one call's checks", () => {
    const limiter = new SlidingWindowLimiter();
    expect(() => limiter.limit([{ ...check("k"), group: "g" }], 0)).toThrow();
    expect(() =>
      limiter.limit([{ ...check("k"), group: "g", groupEntriesMax: limiterChecksPerCallMax - 1 }], 0),
    ).toThrow();
  });
});

describe("SlidingWindowLimiter: keys, limits and restore", () => {
  it("keeps counts when a key's limit changes with the same duration, and starts fresh on a new duration", () => {
    const limiter = new SlidingWindowLimiter();
    for (let i = 0; i < 3; i++) limiter.limit([check("k", 1, 5, 1000)], 0);
    expect(limiter.limit([check("k", 1, 3, 1000)], 1).outcomes[0]!).toMatchObject({ success: false, remaining: 0 });
    expect(limiter.limit([check("k", 1, 4, 1000)], 1).outcomes[0]!).toMatchObject({ success: true, remaining: 0 });
    expect(limiter.limit([check("k", 1, 5, 2000)], 2).outcomes[0]!).toMatchObject({ success: true, remaining: 4 });
  });

  it("the duration is part of a counter's identity: another window never resets the counter (finding 2)", () => {
    const limiter = new SlidingWindowLimiter();
    expect(limiter.limit([check("k", 1, 2, 60_000)], 0).success).toBe(true);
    expect(limiter.limit([check("k", 1, 2, 60_000)], 1).success).toBe(true);
    expect(limiter.limit([check("k", 1, 2, 60_000)], 2).success).toBe(false);
    for (let i = 0; i < 5; i++) {
      expect(limiter.limit([check("k", 1, 1_000_000, 1000)], 3 + i).success).toBe(true);
      expect(limiter.limit([check("k", 1, 2, 60_000)], 3 + i).success).toBe(false);
    }
    expect(limiter.size()).toBe(2);
  });

  it("restore raises a bucket to max(current, restored) and never lowers it", () => {
    const limiter = new SlidingWindowLimiter();
    limiter.limit([check("k", 2, 10, 1000)], 250);
    limiter.restoreBucket({ key: "k", limit: 10, durationMs: 1000, bucketStartMs: 200, count: 1 });
    expect(limiter.peek([check("k", 0, 10, 1000)], 250)[0]!.remaining).toBe(8);
    limiter.restoreBucket({ key: "k", limit: 10, durationMs: 1000, bucketStartMs: 200, count: 7 });
    expect(limiter.peek([check("k", 0, 10, 1000)], 250)[0]!.remaining).toBe(3);
    expect(limiter.snapshot(250)).toEqual([{ key: "k", limit: 10, durationMs: 1000, bucketStartMs: 200, count: 7 }]);
    // A reservation above the limit is clamped to it: every cost > 0 is refused, cost-0 reads pass.
    limiter.restoreBucket({ key: "k", limit: 10, durationMs: 1000, bucketStartMs: 200, count: 500 });
    expect(limiter.peek([check("k", 1, 10, 1000)], 250)[0]).toMatchObject({
      success: false,
      remaining: 0,
      resetAtMs: 1299,
    });
    expect(limiter.limit([check("k", 0, 10, 1000)], 250).outcomes[0]).toMatchObject({ success: true, remaining: 0 });
  });

  it("restore moves the clock to the bucket's start, puts an off-grid bucket in the later bucket, ignores expired ones", () => {
    const limiter = new SlidingWindowLimiter({ bucketsPerWindow: 10 });
    limiter.restoreBucket({ key: "k", limit: 10, durationMs: 1000, bucketStartMs: 5_000, count: 4 });
    // Judged at the clock (5000) even when asked earlier: the bucket still counts (and a read of
    // cost 0 would be admitted at once: reset is the judging time).
    expect(limiter.peek([check("k", 0, 10, 1000)], 0)[0]).toEqual({
      success: true,
      limit: 10,
      remaining: 6,
      resetAtMs: 5_000,
    });
    limiter.restoreBucket({ key: "k", limit: 10, durationMs: 1000, bucketStartMs: 5_150, count: 1 });
    expect(limiter.snapshot(5_200).map((b) => [b.bucketStartMs, b.count])).toEqual([
      [5_000, 4],
      [5_200, 1],
    ]);
    limiter.restoreBucket({ key: "k", limit: 10, durationMs: 1000, bucketStartMs: 1_000, count: 9 });
    expect(limiter.peek([check("k", 0, 10, 1000)], 5_200)[0]!.remaining).toBe(5);
    // The clock moved to the start of the bucket used (5200), so an admission asked for at the
    // persisted start (5150) is judged there and lands in the head bucket.
    expect(limiter.limit([check("k", 1, 10, 1000)], 5_150)).toMatchObject({ success: true, judgedAtMs: 5_200 });
  });

  it("restores buckets of one key with two durations as two counters, in any order", () => {
    const older = { key: "k", limit: 5, durationMs: 1000, bucketStartMs: 1_000, count: 5 };
    const newer = { key: "k", limit: 5, durationMs: 2000, bucketStartMs: 1_400, count: 2 };
    for (const order of [
      [older, newer],
      [newer, older],
    ]) {
      const limiter = new SlidingWindowLimiter({ bucketsPerWindow: 10 });
      for (const bucket of order) limiter.restoreBucket(bucket);
      expect(limiter.snapshot(1_500)).toEqual(expect.arrayContaining([older, newer]));
      expect(limiter.peek([check("k", 3, 5, 2000)], 1_500)[0]).toMatchObject({ success: true, remaining: 3 });
      expect(limiter.peek([check("k", 1, 5, 1000)], 1_500)[0]).toMatchObject({ success: false, remaining: 0 });
    }
  });

  it("restores interleaved with calls (off-grid starts, old buckets, clock going back) never crash or pass the bound", () => {
    const op = fc.oneof(
      fc.record({
        kind: fc.constant("limit" as const),
        deltaMs: fc.integer({ min: -200, max: 300 }),
        cost: fc.integer({ min: 0, max: 3 }),
      }),
      fc.record({
        kind: fc.constant("restore" as const),
        startMs: fc.integer({ min: 0, max: 6_000 }),
        count: fc.integer({ min: 0, max: 6 }),
      }),
    );
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 10 }),
        fc.integer({ min: 1, max: 5 }),
        fc.integer({ min: 1, max: 700 }),
        fc.array(op, { maxLength: 60, size: "max" }),
        (bucketsPerWindow, limit, durationMs, ops) => {
          const limiter = new SlidingWindowLimiter({ bucketsPerWindow });
          const widthMs = Math.ceil(durationMs / bucketsPerWindow);
          // A plain map of bucket counts (no ring): restore raises a bucket to the clamped count,
          // an admission adds to its bucket. At each admission, every bucket that may hold a hit of
          // the window (its last ms after t - duration) adds up to at most `limit`.
          const buckets = new Map<number, number>();
          const windowSum = (endMs: number) =>
            [...buckets]
              .filter(([startMs]) => startMs + widthMs - 1 > endMs - durationMs && startMs <= endMs)
              .reduce((sum, [, count]) => sum + count, 0);
          let nowMs = 3_000;
          for (const o of ops) {
            if (o.kind === "restore") {
              limiter.restoreBucket({ key: "k", limit, durationMs, bucketStartMs: o.startMs, count: o.count });
              const startMs = Math.ceil(o.startMs / widthMs) * widthMs;
              buckets.set(startMs, Math.max(buckets.get(startMs) ?? 0, Math.min(o.count, limit)));
              continue;
            }
            nowMs = Math.max(0, nowMs + o.deltaMs);
            const result = limiter.limit([{ key: "k", limit, durationMs, cost: o.cost }], nowMs);
            if (result.success && o.cost > 0) {
              const startMs = Math.floor(result.judgedAtMs / widthMs) * widthMs;
              buckets.set(startMs, (buckets.get(startMs) ?? 0) + o.cost);
              expect(windowSum(result.judgedAtMs)).toBeLessThanOrEqual(limit);
            }
          }
          expect(limiter.size()).toBeLessThanOrEqual(1);
        },
      ),
      { numRuns: 500 },
    );
  });

  it("judges duplicate keys in one call with the earlier costs added", () => {
    const limiter = new SlidingWindowLimiter();
    const result = limiter.limit([check("k", 3, 5), check("k", 3, 5)], 0);
    expect(result.success).toBe(false);
    expect(result.outcomes.map((o) => o.success)).toEqual([true, false]);
    expect(limiter.limit([check("k", 2, 5), check("k", 3, 5)], 0).touched.map((t) => t.count)).toEqual([2, 5]);
  });

  it("a cost above the limit never fits; its reset is when the counter is empty", () => {
    const limiter = new SlidingWindowLimiter({ bucketsPerWindow: 10 });
    expect(limiter.limit([check("k", 6, 5)], 0).outcomes[0]).toEqual({
      success: false,
      limit: 5,
      remaining: 5,
      resetAtMs: 0,
    });
    limiter.limit([check("k", 1, 5)], 0);
    limiter.limit([check("k", 1, 5)], 450);
    expect(limiter.limit([check("k", 6, 5)], 500).outcomes[0]).toEqual({
      success: false,
      limit: 5,
      remaining: 3,
      resetAtMs: 1_499,
    });
  });

  it("limit 0 admits only cost-0 reads", () => {
    const limiter = new SlidingWindowLimiter();
    expect(limiter.limit([check("z", 1, 0)], 0).success).toBe(false);
    expect(limiter.limit([check("z", 0, 0)], 0).outcomes[0]).toEqual({
      success: true,
      limit: 0,
      remaining: 0,
      resetAtMs: 0,
    });
  });

  it("asserts its inputs: integers, durationMs >= 1, at most limiterChecksPerCallMax checks", () => {
    const limiter = new SlidingWindowLimiter();
    expect(() => limiter.limit([check("k", -1)], 0)).toThrow();
    expect(() => limiter.limit([check("k", 1.5)], 0)).toThrow();
    expect(() => limiter.limit([check("k", 1, 5, 0)], 0)).toThrow();
    expect(() => limiter.limit([check("k")], -1)).toThrow();
    expect(() => limiter.limit([check("k")], Number.NaN)).toThrow();
    const many = Array.from({ length: limiterChecksPerCallMax }, (_, i) => check(`m${i}`));
    expect(limiter.limit(many, 0).success).toBe(true);
    expect(() => limiter.limit([...many, check("one-more")], 0)).toThrow();
    expect(() => new SlidingWindowLimiter({ bucketsPerWindow: 0 })).toThrow();
  });
});
