// The bridge between a key's `remaining` and its credit ledger (leases/ledger.ts). Every change
// of finite credits goes through a ledger apply function, and `KeyRecord.remaining` is then set
// to `ledgerRemaining(ledger)`: the replicated value getKey, whoami and listKeys show.
//
// Pure helpers: they compute the next key and ledger without touching the state, so a command
// can check every precondition first and store both only when all passed (atomic commands).
import { assert } from "../assert.js";
import { refillDueBetween } from "../credits/ledger.js";
import {
  applyCreditRefill,
  applyCreditSet,
  createCreditLedger,
  creditLedgerViolation,
  ledgerRemaining,
} from "../leases/ledger.js";
import type { CreditLedgerRecord } from "../leases/types.js";
import { latestRefillAtOrBefore } from "../credits/ledger.js";
import type { KeyRecord, KeyState } from "./types.js";

/** A key with the ledger its credits now come from (null: unlimited, the ledger is untouched). */
export interface CreditsChange {
  key: KeyRecord;
  ledger: CreditLedgerRecord | null;
}

// A ledger that nothing has touched (epoch 0, nothing spent, leased or asked for) says no more
// than the key's `remaining`, and most keys of a large import never lease a credit: the state
// stores only the ledgers that differ from that (117 heap bytes per key, and their share of every
// snapshot, at a million keys). The map is kept in this canonical form by putCredits, so every
// replica holds the same ledgers whatever route (commands or a snapshot) brought it there.

/** True when `ledger` says no more than a new ledger of its balance (it is not stored). */
export function isUntouchedLedger(ledger: CreditLedgerRecord): boolean {
  return (
    ledger.epoch === 0 &&
    ledger.epochSpent === 0 &&
    ledger.leases.length === 0 &&
    ledger.seqFloors.length === 0 &&
    ledger.unleased === ledger.epochBalance
  );
}

/** The key's ledger; an untouched one (epoch 0) for a key whose ledger is not stored. */
export function ledgerOf(state: KeyState, key: KeyRecord): CreditLedgerRecord {
  return state.creditLedgers.get(key.id) ?? createCreditLedger(key.id, key.remaining ?? 0);
}

/**
 * The ledger of `keyId` as readers outside the apply see it: the stored one, an untouched one for
 * a key with finite credits, undefined for a missing key or unlimited credits without a ledger.
 */
export function creditLedgerOf(state: KeyState, keyId: string): CreditLedgerRecord | undefined {
  const stored = state.creditLedgers.get(keyId);
  return stored ?? ledgerOfRemaining(keyId, state.keys.remainingOf(keyId));
}

/**
 * creditLedgerOf for a key whose `remaining` was just read (keys.remainingOf), without a second
 * lookup of the key: the stored ledger, else an untouched one for finite credits.
 */
export function creditLedgerWith(
  state: KeyState,
  keyId: string,
  remaining: number | null | undefined,
): CreditLedgerRecord | undefined {
  return state.creditLedgers.get(keyId) ?? ledgerOfRemaining(keyId, remaining);
}

function ledgerOfRemaining(keyId: string, remaining: number | null | undefined): CreditLedgerRecord | undefined {
  return remaining === undefined || remaining === null ? undefined : createCreditLedger(keyId, remaining);
}

/** Keeps the ledgers map canonical: an untouched ledger is not stored (see isUntouchedLedger). */
function storeLedger(state: KeyState, ledger: CreditLedgerRecord): void {
  if (isUntouchedLedger(ledger)) state.creditLedgers.delete(ledger.keyId);
  else state.creditLedgers.set(ledger.keyId, ledger);
}

/**
 * Stores a ledger a lease command changed (putCredits for the key `keyId`, whose `remaining` is
 * `remaining` before the change): the key's balance is set in its bytes, not decoded.
 */
export function putLedger(state: KeyState, keyId: string, remaining: number | null, ledger: CreditLedgerRecord): void {
  assert(ledger.keyId === keyId, "putLedger: the ledger of this key");
  storeLedger(state, ledger);
  // A key made unlimited keeps its ledger (epochs never go back) and shows null. A grant leaves
  // the balance as it was: nothing to write.
  const next = ledgerRemaining(ledger);
  if (remaining !== null && next !== remaining) state.keys.setRemaining(keyId, next);
}

/** `key` with `remaining` as the ledger shows it. */
export function withLedger(key: KeyRecord, ledger: CreditLedgerRecord): KeyRecord {
  const remaining = ledgerRemaining(ledger);
  return remaining === key.remaining ? key : { ...key, remaining };
}

/**
 * Materializes a refill due at `nowMs` (a replicated time: the command's) into the ledger: at a
 * refill instant the key is reset to `amount` when its unleased credits are below it
 * (applyCreditRefill). Every replica applies it at the same log index, since `nowMs` is part of
 * the command. Unchanged when nothing is due.
 */
export function refilledCredits(state: KeyState, key: KeyRecord, nowMs: number): CreditsChange {
  const due = key.refill !== null && refillDueBetween(key.refill, key.refill.lastRefillAtMs, nowMs);
  if (key.remaining === null) {
    if (!due || key.refill === null) return { key, ledger: null };
    // A refill stored on a key with unlimited credits (docs/api.md, credits) makes them finite at
    // its next instant: the balance becomes `amount`, as a reset (a new epoch when the key had a
    // ledger before, so leases of its finite past return nothing).
    const lastRefillAtMs = latestRefillAtOrBefore(key.refill, nowMs);
    const amount = key.refill.amount;
    const ledger = state.creditLedgers.has(key.id)
      ? applyCreditSet(ledgerOf(state, key), amount)
      : createCreditLedger(key.id, amount);
    return {
      key: { ...key, remaining: ledgerRemaining(ledger), refill: { ...key.refill, lastRefillAtMs } },
      ledger,
    };
  }
  const ledger = ledgerOf(state, key);
  if (key.refill === null || !due) return { key, ledger };
  const lastRefillAtMs = latestRefillAtOrBefore(key.refill, nowMs);
  const refilled = applyCreditRefill(ledger, key.refill.amount);
  return { key: withLedger({ ...key, refill: { ...key.refill, lastRefillAtMs } }, refilled), ledger: refilled };
}

/** Stores a key and its ledger together (the key's `remaining` must be the ledger's view). */
export function putCredits(state: KeyState, change: CreditsChange): void {
  const { key, ledger } = change;
  if (ledger !== null) {
    assert(ledger.keyId === key.id, "putCredits: the ledger of this key");
    assert(
      key.remaining === null || key.remaining === ledgerRemaining(ledger),
      "putCredits: remaining is the ledger's view",
    );
    storeLedger(state, ledger);
  }
  state.keys.set(key.id, key);
}

/** A broken link between keys and ledgers, or null (for keyStateViolation). */
export function creditLedgersViolation(state: KeyState): string | null {
  for (const [keyId, ledger] of state.creditLedgers) {
    const key = state.keys.get(keyId);
    if (key === undefined) return `credit ledger of missing key ${keyId}`;
    if (ledger.keyId !== keyId) return `credit ledger of ${keyId} names ${ledger.keyId}`;
    const violation = creditLedgerViolation(ledger);
    if (violation !== null) return `credit ledger of ${keyId}: ${violation}`;
    if (key.remaining !== null && key.remaining !== ledgerRemaining(ledger)) {
      return `key ${keyId} shows remaining ${key.remaining}, its ledger ${ledgerRemaining(ledger)}`;
    }
    if (isUntouchedLedger(ledger)) return `credit ledger of ${keyId} is untouched and stored`;
  }
  return null;
}
