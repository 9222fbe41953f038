import { assert } from "../assert.js";
import { applyRefill } from "../credits/ledger.js";
import type { KeyRecord } from "./types.js";

/**
 * A key's credits at `nowMs` with due refills applied lazily (decision 8): every replica derives
 * the same value from the same record and time, and reads need no write. null = unlimited.
 */
export function creditsAt(
  key: KeyRecord,
  nowMs: number,
  spentHere = 0,
): { remaining: number | null; lastRefillAtMs: number | null } {
  if (key.remaining === null) return { remaining: null, lastRefillAtMs: null };
  // `spentHere`: what the reading node spent from leases the ledger still counts in full
  // (leases/shown.ts); the replicated `remaining` includes it.
  assert(spentHere >= 0 && spentHere <= key.remaining, "creditsAt: a node's own unsettled spends are within remaining");
  const remaining = key.remaining - spentHere;
  if (key.refill === null) return { remaining, lastRefillAtMs: null };
  return applyRefill(remaining, key.refill, key.refill.lastRefillAtMs, nowMs);
}

/** The record with refills up to `nowMs` materialized (same object when nothing was due). */
export function withRefillApplied(key: KeyRecord, nowMs: number): KeyRecord {
  if (key.remaining === null || key.refill === null) return key;
  const applied = applyRefill(key.remaining, key.refill, key.refill.lastRefillAtMs, nowMs);
  if (applied.lastRefillAtMs === key.refill.lastRefillAtMs) return key;
  return { ...key, remaining: applied.remaining, refill: { ...key.refill, lastRefillAtMs: applied.lastRefillAtMs } };
}
