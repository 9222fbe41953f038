import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { SlidingWindowLimiter, type LimitCheck, type BucketCount } from "../src/ratelimit/sliding-window.js";
import type { LimitOutcome, LimitResult } from "../src/ratelimit/sliding-window.js";

// A reference model of the sliding-window limiter, written from the definition rather than from
// the implementation: a log of every admitted hit per key (no ring, no eviction), the count at t
// being the cost of the hits whose bucket is counted at t.

interface Hit {
  atMs: number;
  cost: number;
}

class ReferenceLimiter {
  readonly logs = new Map<string, { durationMs: number; hits: Hit[] }>();
  clockMs = 0;

  constructor(readonly bucketsPerWindow: number) {}

  widthMs(durationMs: number): number {
    return Math.ceil(durationMs / this.bucketsPerWindow);
  }

  /** Hits of `key` counted at atMs: those in a bucket that may hold a hit of (atMs - D, atMs]. */
  counted(key: string, durationMs: number, atMs: number): Hit[] {
    // A counter is (key, durationMs): the same key with another window is another counter.
    const log = this.logs.get(`${key}\u0000${durationMs}`);
    if (log === undefined) return [];
    const w = this.widthMs(durationMs);
    const oldestBucket = Math.floor((atMs - durationMs + 1) / w);
    return log.hits.filter((h) => h.atMs <= atMs && Math.floor(h.atMs / w) >= oldestBucket);
  }

  count(key: string, durationMs: number, atMs: number): number {
    return this.counted(key, durationMs, atMs).reduce((sum, h) => sum + h.cost, 0);
  }

  /** When the hit's bucket stops being counted. */
  expiryMs(hit: Hit, durationMs: number): number {
    const w = this.widthMs(durationMs);
    return (Math.floor(hit.atMs / w) + 1) * w + durationMs - 1;
  }

  limit(checks: readonly LimitCheck[], nowMs: number) {
    const atMs = Math.max(this.clockMs, nowMs);
    const counts = checks.map((check, i) => {
      let count = this.count(check.key, check.durationMs, atMs);
      for (const earlier of checks.slice(0, i))
        if (earlier.key === check.key && earlier.durationMs === check.durationMs) count += earlier.cost;
      return count;
    });
    const fits = checks.map((check, i) => counts[i]! + check.cost <= check.limit);
    const success = fits.every(Boolean);
    const touched: BucketCount[] = [];
    if (success && checks.some((c) => c.cost > 0)) {
      this.clockMs = atMs;
      for (const check of checks) {
        if (check.cost === 0) continue;
        const id = `${check.key}\u0000${check.durationMs}`;
        let log = this.logs.get(id);
        if (log === undefined) {
          log = { durationMs: check.durationMs, hits: [] };
          this.logs.set(id, log);
        }
        log.hits.push({ atMs, cost: check.cost });
        const w = this.widthMs(check.durationMs);
        const bucket = Math.floor(atMs / w);
        const count = log.hits.filter((h) => Math.floor(h.atMs / w) === bucket).reduce((s, h) => s + h.cost, 0);
        touched.push({
          key: check.key,
          limit: check.limit,
          durationMs: check.durationMs,
          bucketStartMs: bucket * w,
          count,
          windowCount: this.count(check.key, check.durationMs, atMs),
        });
      }
    }
    const outcomes = checks.map((check, i) => this.outcome(check, counts[i]!, fits[i]!, success, atMs));
    return { success, outcomes, touched, judgedAtMs: atMs, evicted: [] };
  }

  peek(checks: readonly LimitCheck[], nowMs: number): LimitOutcome[] {
    const atMs = Math.max(this.clockMs, nowMs);
    return checks.map((check, i) => {
      let count = this.count(check.key, check.durationMs, atMs);
      for (const earlier of checks.slice(0, i))
        if (earlier.key === check.key && earlier.durationMs === check.durationMs) count += earlier.cost;
      return this.outcome(check, count, count + check.cost <= check.limit, false, atMs);
    });
  }

  private outcome(check: LimitCheck, count: number, fits: boolean, consumed: boolean, atMs: number): LimitOutcome {
    const used = consumed ? count + check.cost : count;
    const counted = this.counted(check.key, check.durationMs, atMs);
    const expiries = counted.map((h) => this.expiryMs(h, check.durationMs));
    let resetAtMs: number;
    if (used + check.cost <= check.limit) {
      resetAtMs = atMs; // the next request of this cost fits now
    } else {
      // The count only drops when a bucket expires: the first such time at which the cost fits.
      const pending = used - this.count(check.key, check.durationMs, atMs);
      const candidates = [...new Set(expiries)].sort((a, b) => a - b);
      const fitting = candidates.find(
        (t) => this.count(check.key, check.durationMs, t) + pending + check.cost <= check.limit,
      );
      resetAtMs = fitting ?? (candidates.length === 0 ? atMs : candidates[candidates.length - 1]!);
    }
    return { success: fits, limit: check.limit, remaining: Math.max(0, check.limit - used), resetAtMs };
  }
}

// ---------------------------------------------------------------------------------------------

interface KeySpec {
  key: string;
  limit: number;
  durationMs: number;
}

interface Op {
  kind: "limit" | "peek";
  deltaMs: number;
  checks: { keyIndex: number; cost: number }[];
}

interface Scenario {
  bucketsPerWindow: number;
  keys: KeySpec[];
  ops: Op[];
}

const keySpec = (index: number) =>
  fc
    .record({
      limit: fc.integer({ min: 0, max: 8 }),
      durationMs: fc.oneof(fc.integer({ min: 1, max: 40 }), fc.integer({ min: 41, max: 1000 })),
    })
    .map(({ limit, durationMs }): KeySpec => ({ key: `k${index}/${limit}/${durationMs}`, limit, durationMs }));

/** Random scenarios: a few keys, calls of one to three checks, time steps that may go backwards. */
function scenario(options: { backwards: boolean; maxChecks: number }): fc.Arbitrary<Scenario> {
  return fc.record({
    bucketsPerWindow: fc.integer({ min: 1, max: 12 }),
    keys: fc.tuple(keySpec(0), keySpec(1), keySpec(2)),
    ops: fc.array(
      fc.record({
        kind: fc.constantFrom<Op["kind"]>("limit", "limit", "limit", "peek"),
        deltaMs: options.backwards ? fc.integer({ min: -300, max: 300 }) : fc.integer({ min: 0, max: 300 }),
        checks: fc.array(
          fc.record({ keyIndex: fc.integer({ min: 0, max: 2 }), cost: fc.integer({ min: 0, max: 4 }) }),
          {
            minLength: 1,
            maxLength: options.maxChecks,
          },
        ),
      }),
      { maxLength: 80, size: "max" },
    ),
  });
}

function checksOf(s: Scenario, op: Op): LimitCheck[] {
  return op.checks.map(({ keyIndex, cost }) => ({ ...s.keys[keyIndex]!, cost }));
}

/** Runs a scenario, calling `each` after every call with what happened. */
function run(
  s: Scenario,
  each: (call: {
    op: Op;
    nowMs: number;
    checks: LimitCheck[];
    result: LimitResult | undefined;
    peeked: LimitOutcome[] | undefined;
    limiter: SlidingWindowLimiter;
  }) => void,
): SlidingWindowLimiter {
  const limiter = new SlidingWindowLimiter({ bucketsPerWindow: s.bucketsPerWindow });
  let nowMs = 5_000;
  for (const op of s.ops) {
    nowMs = Math.max(0, nowMs + op.deltaMs);
    const checks = checksOf(s, op);
    if (op.kind === "limit")
      each({ op, nowMs, checks, result: limiter.limit(checks, nowMs), peeked: undefined, limiter });
    else each({ op, nowMs, checks, result: undefined, peeked: limiter.peek(checks, nowMs), limiter });
  }
  return limiter;
}

/** Admitted hits per key, at the limiter's judging time (max of the clock and nowMs). */
function admittedLog(s: Scenario): Map<string, Hit[]> {
  const log = new Map<string, Hit[]>();
  let clockMs = 0;
  run(s, ({ nowMs, checks, result }) => {
    if (result?.success !== true || checks.every((c) => c.cost === 0)) return;
    clockMs = Math.max(clockMs, nowMs);
    for (const check of checks) {
      if (check.cost === 0) continue;
      const hits = log.get(check.key) ?? [];
      hits.push({ atMs: clockMs, cost: check.cost });
      log.set(check.key, hits);
    }
  });
  return log;
}

describe("SlidingWindowLimiter: properties", () => {
  it("a fresh identifier admits exactly `limit` in a burst (limit 1 too)", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 200 }),
        fc.integer({ min: 1, max: 100_000 }),
        fc.integer({ min: 1, max: 20 }),
        fc.integer({ min: 0, max: 1e12 }),
        (limit, durationMs, bucketsPerWindow, nowMs) => {
          const limiter = new SlidingWindowLimiter({ bucketsPerWindow });
          const check = { key: "burst", limit, durationMs, cost: 1 };
          for (let i = 0; i < limit; i++) {
            const result = limiter.limit([check], nowMs);
            expect(result.success).toBe(true);
            expect(result.outcomes[0]!.remaining).toBe(limit - i - 1);
          }
          const refused = limiter.limit([check], nowMs);
          expect(refused.success).toBe(false);
          expect(refused.outcomes[0]!.remaining).toBe(0);
        },
      ),
    );
    const one = new SlidingWindowLimiter();
    expect(one.limit([{ key: "one", limit: 1, durationMs: 1000, cost: 1 }], 0).success).toBe(true);
    expect(one.limit([{ key: "one", limit: 1, durationMs: 1000, cost: 1 }], 999).success).toBe(false);
    expect(one.limit([{ key: "one", limit: 1, durationMs: 1000, cost: 1 }], 1099).success).toBe(true);
  });

  it("no window of length duration admits more than limit, and a refusal needs the last duration + width - 1 ms to be full", () => {
    fc.assert(
      fc.property(scenario({ backwards: true, maxChecks: 3 }), (s) => {
        const log = admittedLog(s);
        for (const spec of s.keys) {
          const hits = log.get(spec.key) ?? [];
          // The busiest window ends at some hit: check the window (t - D, t] ending at each.
          for (const end of hits) {
            const inWindow = hits.filter((h) => h.atMs > end.atMs - spec.durationMs && h.atMs <= end.atMs);
            expect(inWindow.reduce((sum, h) => sum + h.cost, 0)).toBeLessThanOrEqual(spec.limit);
          }
        }
        // Under-admission bound: single-check refusals only happen with the longer window full.
        const seen = new Map<string, Hit[]>();
        let clockMs = 0;
        run(s, ({ nowMs, checks, result }) => {
          if (result === undefined || checks.length !== 1) {
            if (result?.success === true && checks.some((c) => c.cost > 0)) {
              clockMs = Math.max(clockMs, nowMs);
              for (const c of checks)
                if (c.cost > 0) seen.set(c.key, [...(seen.get(c.key) ?? []), { atMs: clockMs, cost: c.cost }]);
            }
            return;
          }
          const check = checks[0]!;
          const atMs = Math.max(clockMs, nowMs);
          const widthMs = Math.ceil(check.durationMs / s.bucketsPerWindow);
          const longWindow = (seen.get(check.key) ?? [])
            .filter((h) => h.atMs > atMs - check.durationMs - widthMs + 1)
            .reduce((sum, h) => sum + h.cost, 0);
          const exactWindow = (seen.get(check.key) ?? [])
            .filter((h) => h.atMs > atMs - check.durationMs)
            .reduce((sum, h) => sum + h.cost, 0);
          if (!result.success) expect(longWindow + check.cost).toBeGreaterThan(check.limit);
          if (exactWindow + check.cost > check.limit) expect(result.success).toBe(false);
          if (result.success && check.cost > 0) {
            clockMs = atMs;
            seen.set(check.key, [...(seen.get(check.key) ?? []), { atMs, cost: check.cost }]);
          }
        });
      }),
      { numRuns: 400 },
    );
  });

  it("equals the reference model on every call: success, remaining, reset, touched buckets (clock may go backwards)", () => {
    fc.assert(
      fc.property(scenario({ backwards: true, maxChecks: 3 }), (s) => {
        const reference = new ReferenceLimiter(s.bucketsPerWindow);
        run(s, ({ nowMs, checks, result, peeked }) => {
          if (result !== undefined) expect(result).toEqual(reference.limit(checks, nowMs));
          if (peeked !== undefined) expect(peeked).toEqual(reference.peek(checks, nowMs));
        });
      }),
      { numRuns: 400 },
    );
  });

  it("a refused call, a cost-0 call and a peek consume nothing (state and all later answers unchanged)", () => {
    fc.assert(
      fc.property(scenario({ backwards: true, maxChecks: 3 }), (s) => {
        // The twin only sees the calls that consumed something.
        const twin = new SlidingWindowLimiter({ bucketsPerWindow: s.bucketsPerWindow });
        run(s, ({ nowMs, checks, result, limiter }) => {
          const before = JSON.stringify(limiter.snapshot(0));
          const consumed = result?.success === true && checks.some((c) => c.cost > 0);
          if (consumed) {
            expect(twin.limit(checks, nowMs)).toEqual(result);
          } else {
            expect(result?.touched ?? []).toEqual([]);
            expect(twin.peek(checks, nowMs)).toEqual(limiter.peek(checks, nowMs));
          }
          expect(JSON.stringify(twin.snapshot(0))).toBe(JSON.stringify(limiter.snapshot(0)));
          if (!consumed) expect(JSON.stringify(limiter.snapshot(0))).toBe(before);
        });
      }),
      { numRuns: 300 },
    );
  });

  it("cost 0 is a pure read: it succeeds while count <= limit and reports the same as peek", () => {
    fc.assert(
      fc.property(scenario({ backwards: false, maxChecks: 1 }), fc.integer({ min: 0, max: 2 }), (s, keyIndex) => {
        const limiter = run(s, () => {});
        const probe = { ...s.keys[keyIndex]!, cost: 0 };
        const nowMs = 5_000 + s.ops.reduce((sum, op) => sum + op.deltaMs, 0);
        const peeked = limiter.peek([probe], nowMs);
        const before = limiter.snapshot(nowMs);
        for (let i = 0; i < 5; i++) {
          const result = limiter.limit([probe], nowMs);
          expect(result.success).toBe(true);
          expect(result.outcomes).toEqual(peeked);
          expect(result.touched).toEqual([]);
        }
        expect(limiter.snapshot(nowMs)).toEqual(before);
      }),
      { numRuns: 300 },
    );
    // Upstream's test: cost 0 five times on a fresh identifier with limit 10 -> remaining 10 each.
    const fresh = new SlidingWindowLimiter();
    for (let i = 0; i < 5; i++) {
      expect(fresh.limit([{ key: "f", limit: 10, durationMs: 60_000, cost: 0 }], 1000).outcomes[0]!.remaining).toBe(10);
    }
    expect(fresh.size()).toBe(0);
  });

  it("reset is exact: with nothing else admitted, the same cost succeeds at resetAtMs and fails at resetAtMs - 1", () => {
    fc.assert(
      fc.property(
        scenario({ backwards: true, maxChecks: 1 }),
        fc.integer({ min: 0, max: 2 }),
        fc.integer({ min: 1, max: 4 }),
        (s, keyIndex, cost) => {
          const limiter = run(s, () => {});
          const nowMs = Math.max(0, 5_000 + s.ops.reduce((sum, op) => sum + op.deltaMs, 0));
          const check = { ...s.keys[keyIndex]!, cost };
          const [outcome] = limiter.peek([check], nowMs);
          if (outcome!.success || cost > check.limit) return;
          const at = new SlidingWindowLimiter({ bucketsPerWindow: s.bucketsPerWindow });
          const before = new SlidingWindowLimiter({ bucketsPerWindow: s.bucketsPerWindow });
          for (const op of replayable(s)) {
            if (op.kind !== "limit") continue;
            at.limit(op.checks, op.nowMs);
            before.limit(op.checks, op.nowMs);
          }
          expect(outcome!.resetAtMs).toBeGreaterThan(nowMs);
          expect(before.limit([check], outcome!.resetAtMs - 1).success).toBe(false);
          expect(at.limit([check], outcome!.resetAtMs).success).toBe(true);
        },
      ),
      { numRuns: 400 },
    );
  });

  it("reset is when the next request of the same cost would be admitted, admitted or not, within duration + one bucket", () => {
    fc.assert(
      fc.property(
        scenario({ backwards: false, maxChecks: 1 }),
        fc.integer({ min: 0, max: 2 }),
        fc.integer({ min: 1, max: 4 }),
        (s, keyIndex, cost) => {
          const check = { ...s.keys[keyIndex]!, cost };
          if (cost > check.limit) return;
          const nowMs = 5_000 + s.ops.reduce((sum, op) => sum + op.deltaMs, 0);
          const replay = () => {
            const limiter = new SlidingWindowLimiter({ bucketsPerWindow: s.bucketsPerWindow });
            for (const op of replayable(s)) if (op.kind === "limit") limiter.limit(op.checks, op.nowMs);
            limiter.limit([check], nowMs); // this call, admitted or not
            return limiter;
          };
          // The answer of this call.
          const limiter = new SlidingWindowLimiter({ bucketsPerWindow: s.bucketsPerWindow });
          for (const op of replayable(s)) if (op.kind === "limit") limiter.limit(op.checks, op.nowMs);
          const answer = limiter.limit([check], nowMs).outcomes[0]!;
          const widthMs = limiter.bucketWidthMs(check.durationMs);
          expect(answer.resetAtMs).toBeGreaterThanOrEqual(nowMs);
          expect(answer.resetAtMs - nowMs).toBeLessThan(check.durationMs + widthMs);
          expect(replay().limit([check], answer.resetAtMs).success).toBe(true);
          if (answer.resetAtMs > nowMs) expect(replay().limit([check], answer.resetAtMs - 1).success).toBe(false);
        },
      ),
      { numRuns: 400 },
    );
  });

  it("a clock going backwards is judged at the latest admitted time and never frees capacity", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 20 }),
        fc.integer({ min: 1, max: 10_000 }),
        fc.integer({ min: 1, max: 100_000 }),
        fc.integer({ min: 1, max: 1_000_000 }),
        (limit, durationMs, laterMs, backMs) => {
          const limiter = new SlidingWindowLimiter();
          const check = { key: "clock", limit, durationMs, cost: 1 };
          for (let i = 0; i < limit; i++) expect(limiter.limit([check], laterMs).success).toBe(true);
          const back = Math.max(0, laterMs - backMs);
          expect(limiter.limit([check], back).success).toBe(false);
          expect(limiter.peek([check], back)).toEqual(limiter.peek([check], laterMs));
        },
      ),
    );
  });

  it("several limits on one request are judged together: all consume or none does", () => {
    fc.assert(
      fc.property(scenario({ backwards: false, maxChecks: 4 }), (s) => {
        run(s, ({ checks, result, peeked }) => {
          if (result === undefined) return;
          expect(result.success).toBe(result.outcomes.every((o) => o.success));
          expect(result.outcomes).toHaveLength(checks.length);
          if (!result.success) expect(result.touched).toEqual([]);
          else expect(result.touched).toHaveLength(checks.filter((c) => c.cost > 0).length);
          void peeked;
        });
      }),
      { numRuns: 200 },
    );
    const limiter = new SlidingWindowLimiter();
    const perSecond = { key: "s", limit: 2, durationMs: 1000, cost: 1 };
    const perMinute = { key: "m", limit: 3, durationMs: 60_000, cost: 1 };
    expect(limiter.limit([perSecond, perMinute], 0).success).toBe(true);
    expect(limiter.limit([perSecond, perMinute], 1).success).toBe(true);
    const third = limiter.limit([perSecond, perMinute], 2);
    expect(third.success).toBe(false);
    expect(third.outcomes.map((o) => o.success)).toEqual([false, true]);
    expect(third.outcomes[1]!.remaining).toBe(1); // the passing limit consumed nothing
    expect(limiter.limit([perSecond, perMinute], 1500).success).toBe(true);
    expect(limiter.limit([perSecond, perMinute], 1501).outcomes.map((o) => o.success)).toEqual([true, false]);
  });

  it("snapshot then restore into a fresh limiter answers identically afterwards (a restart admits no more)", () => {
    fc.assert(
      fc.property(
        scenario({ backwards: true, maxChecks: 3 }),
        scenario({ backwards: false, maxChecks: 3 }),
        (first, second) => {
          const s = { ...first, keys: first.keys };
          const limiter = run(s, () => {});
          const lastMs = Math.max(
            5_000,
            replayable(s).reduce((max, op) => Math.max(max, op.nowMs), 0),
          );
          const restored = new SlidingWindowLimiter({ bucketsPerWindow: s.bucketsPerWindow });
          for (const bucket of limiter.snapshot(lastMs)) restored.restoreBucket(bucket);
          let nowMs = lastMs;
          for (const op of second.ops) {
            nowMs += op.deltaMs;
            const checks = checksOf(s, op);
            expect(restored.limit(checks, nowMs)).toEqual(limiter.limit(checks, nowMs));
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});

/** The scenario's calls with absolute times, for replaying into fresh limiters. */
function replayable(s: Scenario): { checks: LimitCheck[]; nowMs: number; kind: Op["kind"] }[] {
  let nowMs = 5_000;
  return s.ops.map((op) => {
    nowMs = Math.max(0, nowMs + op.deltaMs);
    return { checks: op.kind === "limit" ? checksOf(s, op) : [], nowMs, kind: op.kind };
  });
}
