import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { refillDueBetween } from "../src/credits/ledger.js";
import { applyRefill, latestRefillAtOrBefore, spendCredits, type Refill } from "../src/credits/ledger.js";

const dayMs = 86_400_000;

// Reference: walk every 00:00 UTC in (fromMs, toMs] and ask whether it is a refill day.
function referenceDue(refill: Refill, fromMs: number, toMs: number): boolean {
  for (let t = Math.floor(fromMs / dayMs) * dayMs + dayMs; t <= toMs; t += dayMs) {
    if (refill.refillDay === null) return true;
    const date = new Date(t);
    const lastDay = new Date(Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 0)).getUTCDate();
    if (date.getUTCDate() === Math.min(refill.refillDay, lastDay)) return true;
  }
  return false;
}

const refill = fc.record({
  amount: fc.integer({ min: 0, max: 1000 }),
  refillDay: fc.option(fc.integer({ min: 1, max: 31 }), { nil: null }),
});
const timeMs = fc.integer({ min: Date.UTC(2023, 0, 1), max: Date.UTC(2030, 0, 1) });

describe("spendCredits", () => {
  it("deducts a cost that fits", () => {
    expect(spendCredits(10, 2)).toEqual({ admitted: true, remaining: 8 });
    expect(spendCredits(3, 3)).toEqual({ admitted: true, remaining: 0 });
  });

  it("refuses a cost above the balance and deducts nothing (upstream admitted it)", () => {
    expect(spendCredits(3, 5)).toEqual({ admitted: false, remaining: 3 });
    expect(spendCredits(0, 1)).toEqual({ admitted: false, remaining: 0 });
  });

  it("treats cost 0 as a pure read, admitted even at 0", () => {
    expect(spendCredits(0, 0)).toEqual({ admitted: true, remaining: 0 });
    expect(spendCredits(7, 0)).toEqual({ admitted: true, remaining: 7 });
  });

  it("refuses negative or fractional inputs as programmer errors", () => {
    expect(() => spendCredits(5, -1)).toThrow();
    expect(() => spendCredits(5, 1.5)).toThrow();
    expect(() => spendCredits(-1, 0)).toThrow();
  });

  it("counts 100 down to 0 and then refuses, like upstream's integration test", () => {
    let remaining = 100;
    for (let i = 0; i < 100; i++) {
      const spend = spendCredits(remaining, 1);
      expect(spend).toEqual({ admitted: true, remaining: 99 - i });
      remaining = spend.remaining;
    }
    expect(spendCredits(remaining, 1)).toEqual({ admitted: false, remaining: 0 });
  });
});

describe("refill", () => {
  it("refills monthly on the month's last day when refillDay is beyond it (31 = last day)", () => {
    const monthly31: Refill = { amount: 10, refillDay: 31 };
    expect(latestRefillAtOrBefore(monthly31, Date.UTC(2025, 2, 5))).toBe(Date.UTC(2025, 1, 28));
    expect(latestRefillAtOrBefore(monthly31, Date.UTC(2024, 2, 5))).toBe(Date.UTC(2024, 1, 29));
    expect(latestRefillAtOrBefore(monthly31, Date.UTC(2025, 0, 31))).toBe(Date.UTC(2025, 0, 31));
    expect(latestRefillAtOrBefore({ amount: 1, refillDay: 30 }, Date.UTC(2025, 2, 1) - 1)).toBe(Date.UTC(2025, 1, 28));
    expect(latestRefillAtOrBefore({ amount: 1, refillDay: 15 }, Date.UTC(2025, 0, 14, 23, 59))).toBe(
      Date.UTC(2024, 11, 15),
    );
  });

  it("refills daily at each 00:00 UTC", () => {
    const daily: Refill = { amount: 5, refillDay: null };
    const midnight = Date.UTC(2025, 5, 10);
    expect(refillDueBetween(daily, midnight, midnight + dayMs - 1)).toBe(false);
    expect(refillDueBetween(daily, midnight, midnight + dayMs)).toBe(true);
    expect(refillDueBetween(daily, midnight - 1, midnight)).toBe(true);
    expect(refillDueBetween(daily, midnight, midnight)).toBe(false);
  });

  it("refillDueBetween equals a day-by-day reference", () => {
    fc.assert(
      fc.property(refill, timeMs, fc.integer({ min: -dayMs, max: 70 * dayMs }), (rule, fromMs, spanMs) => {
        expect(refillDueBetween(rule, fromMs, fromMs + spanMs)).toBe(referenceDue(rule, fromMs, fromMs + spanMs));
      }),
      { numRuns: 2000 },
    );
  });

  it("applyRefill resets to max(remaining, amount) once per passed instant and is idempotent", () => {
    fc.assert(
      fc.property(
        refill,
        timeMs,
        fc.integer({ min: 0, max: 70 * dayMs }),
        fc.nat(2000),
        (rule, lastMs, spanMs, remaining) => {
          const nowMs = lastMs + spanMs;
          const once = applyRefill(remaining, rule, lastMs, nowMs);
          if (referenceDue(rule, lastMs, nowMs)) {
            expect(once.remaining).toBe(Math.max(remaining, rule.amount));
            expect(once.lastRefillAtMs).toBe(latestRefillAtOrBefore(rule, nowMs));
            expect(once.lastRefillAtMs % dayMs).toBe(0);
            expect(once.lastRefillAtMs).toBeGreaterThan(lastMs);
            expect(once.lastRefillAtMs).toBeLessThanOrEqual(nowMs);
          } else {
            expect(once).toEqual({ remaining, lastRefillAtMs: lastMs });
          }
          expect(applyRefill(once.remaining, rule, once.lastRefillAtMs, nowMs)).toEqual(once);
        },
      ),
      { numRuns: 2000 },
    );
  });
});

describe("ledger property", () => {
  it("the sum of admitted costs never exceeds the credits granted plus refills", () => {
    const step = fc.record({ advanceMs: fc.integer({ min: 0, max: 3 * dayMs }), cost: fc.nat(12) });
    fc.assert(
      fc.property(refill, fc.nat(50), timeMs, fc.array(step, { maxLength: 60 }), (rule, granted, startMs, steps) => {
        let remaining = granted;
        let lastRefillAtMs = startMs;
        let nowMs = startMs;
        let admitted = 0;
        let refilled = 0;
        let refills = 0;
        for (const { advanceMs, cost } of steps) {
          nowMs += advanceMs;
          const after = applyRefill(remaining, rule, lastRefillAtMs, nowMs);
          if (after.lastRefillAtMs !== lastRefillAtMs) refills++;
          refilled += after.remaining - remaining;
          remaining = after.remaining;
          lastRefillAtMs = after.lastRefillAtMs;
          const spend = spendCredits(remaining, cost);
          expect(spend.admitted).toBe(cost <= remaining);
          if (spend.admitted) admitted += cost;
          remaining = spend.remaining;
          expect(remaining).toBeGreaterThanOrEqual(0);
          expect(admitted + remaining).toBe(granted + refilled); // exact accounting
          expect(admitted).toBeLessThanOrEqual(granted + refills * rule.amount);
        }
      }),
      { numRuns: 1000 },
    );
  });
});
