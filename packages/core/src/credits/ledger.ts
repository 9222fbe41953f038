import { assert } from "../assert.js";

const dayMs = 86_400_000;

/** Result of one spend against a key's credits. `remaining` is the balance after the call. */
export interface CreditSpend {
  admitted: boolean;
  remaining: number;
}

/**
 * keyraft's credit ledger (decision 2), never overspent: cost 0 is a pure read (admitted even at
 * 0 remaining); a cost above the balance is refused and deducts nothing (upstream admitted it and
 * clamped to 0); otherwise the cost is deducted. Costs and balances are non-negative integers:
 * the schema rejects negative costs before this is reached.
 */
export function spendCredits(remaining: number, cost: number): CreditSpend {
  assert(Number.isSafeInteger(remaining) && remaining >= 0, "spendCredits: remaining is a non-negative integer");
  assert(Number.isSafeInteger(cost) && cost >= 0, "spendCredits: cost is a non-negative integer");
  if (cost > remaining) return { admitted: false, remaining };
  return { admitted: true, remaining: remaining - cost };
}

/**
 * A refill rule (decision 8 in docs/core-leaves.md, "Credit ledger and refill"). At each refill instant, 00:00 UTC, `remaining` becomes
 * `amount` if it is lower (a reset, not an addition). `refillDay` null: every day. 1..31: monthly
 * on that day of the month, or on the month's last day when the month is shorter (31 = always
 * the last day).
 */
export interface Refill {
  amount: number;
  refillDay: number | null;
}

function assertRefill(refill: Refill): void {
  assert(Number.isSafeInteger(refill.amount) && refill.amount >= 0, "refill: amount is a non-negative integer");
  assert(
    refill.refillDay === null ||
      (Number.isInteger(refill.refillDay) && refill.refillDay >= 1 && refill.refillDay <= 31),
    "refill: refillDay is null or 1..31",
  );
}

/** 00:00 UTC of the refill day of the month (year, month0), clamped to the month's last day. */
function monthlyInstantMs(year: number, month0: number, refillDay: number): number {
  const daysInMonth = new Date(Date.UTC(year, month0 + 1, 0)).getUTCDate();
  return Date.UTC(year, month0, Math.min(refillDay, daysInMonth));
}

/** The latest refill instant at or before `atMs` (Unix ms) for this rule. */
export function latestRefillAtOrBefore(refill: Refill, atMs: number): number {
  assertRefill(refill);
  assert(Number.isFinite(atMs), "latestRefillAtOrBefore: atMs is finite");
  if (refill.refillDay === null) return Math.floor(atMs / dayMs) * dayMs;
  const at = new Date(atMs);
  const year = at.getUTCFullYear();
  const month0 = at.getUTCMonth();
  const thisMonth = monthlyInstantMs(year, month0, refill.refillDay);
  const instantMs = thisMonth <= atMs ? thisMonth : monthlyInstantMs(year, month0 - 1, refill.refillDay);
  assert(instantMs <= atMs && atMs - instantMs < 32 * dayMs, "latestRefillAtOrBefore: within a month before atMs");
  return instantMs;
}

/** Whether a refill instant t with fromMs < t <= toMs exists for this rule. */
export function refillDueBetween(refill: Refill, fromMs: number, toMs: number): boolean {
  if (toMs <= fromMs) return false;
  return latestRefillAtOrBefore(refill, toMs) > fromMs;
}

/**
 * Applies every refill instant after `lastRefillAtMs` and at or before `nowMs`: `remaining`
 * becomes max(remaining, amount) and `lastRefillAtMs` the latest such instant. Several missed
 * instants count as one (a reset, not an addition). Idempotent; pure UTC date arithmetic.
 */
export function applyRefill(
  remaining: number,
  refill: Refill,
  lastRefillAtMs: number,
  nowMs: number,
): { remaining: number; lastRefillAtMs: number } {
  assert(Number.isSafeInteger(remaining) && remaining >= 0, "applyRefill: remaining is a non-negative integer");
  if (nowMs <= lastRefillAtMs) return { remaining, lastRefillAtMs };
  const instantMs = latestRefillAtOrBefore(refill, nowMs);
  if (instantMs <= lastRefillAtMs) return { remaining, lastRefillAtMs };
  return { remaining: Math.max(remaining, refill.amount), lastRefillAtMs: instantMs };
}
