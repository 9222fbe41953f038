// Apply functions of the replicated credit ledger with leases (docs/counters.md). Pure: each takes
// a record and returns a new one (the input is never mutated) plus an outcome, so the key-state
// machine can call them from its apply and every replica computes the same result.
//
// Accounting invariant of an epoch, checked after every apply (`creditLedgerViolation`):
//   unleased + sum(granted of the epoch's unsettled leases) + epochSpent == epochBalance
// Credits leave `unleased` only into a lease or a direct spend, and come back only through a
// settle from the holder, which has stopped spending from that lease and journaled what it spent.
// So the credits holders may still spend never exceed what the ledger has set aside for them.
import { assert } from "../assert.js";
import { ownerOf } from "../placement/rendezvous.js";
import { leaseGrantSize, type CreditLeasePolicy } from "./policy.js";
import type {
  CreditLeaseCommand,
  CreditLeaseOutcome,
  CreditLeaseRecord,
  CreditLedgerRecord,
  CreditSeqFloor,
  ExpireCreditLeaseCommand,
  GrantCreditLeaseCommand,
  SettleCreditLeaseCommand,
} from "./types.js";

// A new ledger's empty lists, one for all ledgers: apply functions replace the lists and never
// change one in place (frozen, so a change in place would throw rather than touch every ledger).
// One key in a million-key state then costs no list of its own until it is leased.
export const noLeases: CreditLeaseRecord[] = Object.freeze([]) as unknown as CreditLeaseRecord[];
export const noFloors: CreditSeqFloor[] = Object.freeze([]) as unknown as CreditSeqFloor[];

/** Unsettled leases per key (open or expired); past it new grants are refused. */
export const leasesPerKeyMax = 256;

export function createCreditLedger(keyId: string, remaining: number): CreditLedgerRecord {
  assert(Number.isSafeInteger(remaining) && remaining >= 0, "createCreditLedger: remaining >= 0");
  return {
    keyId,
    unleased: remaining,
    epoch: 0,
    epochBalance: remaining,
    epochSpent: 0,
    leases: noLeases,
    seqFloors: noFloors,
  };
}

function compareLease(a: { nodeId: string; seq: number }, b: { nodeId: string; seq: number }): number {
  if (a.nodeId !== b.nodeId) return a.nodeId < b.nodeId ? -1 : 1;
  return a.seq - b.seq;
}

function seqFloor(record: CreditLedgerRecord, nodeId: string): number {
  return record.seqFloors.find((f) => f.nodeId === nodeId)?.floor ?? 0;
}

function withSeqFloor(floors: readonly CreditSeqFloor[], nodeId: string, floor: number): CreditSeqFloor[] {
  const rest = floors.filter((f) => f.nodeId !== nodeId);
  const current = floors.find((f) => f.nodeId === nodeId)?.floor ?? 0;
  rest.push({ nodeId, floor: Math.max(current, floor) });
  rest.sort((a, b) => (a.nodeId < b.nodeId ? -1 : a.nodeId > b.nodeId ? 1 : 0));
  return rest;
}

function checked(record: CreditLedgerRecord): CreditLedgerRecord {
  const violation = creditLedgerViolation(record);
  assert(violation === null, `credit ledger: ${violation ?? ""}`);
  return record;
}

/** Credits in unsettled leases of the current epoch (the most the holders may still spend of it). */
export function leasedCredits(record: CreditLedgerRecord): number {
  let sum = 0;
  for (const lease of record.leases) if (lease.epoch === record.epoch) sum += lease.granted;
  return sum;
}

/** A broken invariant of the record, or null. */
export function creditLedgerViolation(record: CreditLedgerRecord): string | null {
  const ints = [record.unleased, record.epoch, record.epochBalance, record.epochSpent];
  if (!ints.every((n) => Number.isSafeInteger(n) && n >= 0)) return "counters are non-negative integers";
  if (record.unleased + leasedCredits(record) + record.epochSpent !== record.epochBalance) {
    return `unleased ${record.unleased} + leased ${leasedCredits(record)} + spent ${record.epochSpent} != balance ${record.epochBalance}`;
  }
  if (record.leases.length > leasesPerKeyMax) return "more than leasesPerKeyMax leases";
  for (let i = 0; i < record.leases.length; i++) {
    const lease = record.leases[i];
    if (lease === undefined || !(lease.granted >= 1) || lease.epoch > record.epoch) return "a lease is malformed";
    const previous = record.leases[i - 1];
    if (previous !== undefined && compareLease(previous, lease) >= 0) return "leases are not sorted and unique";
    if (lease.seq > seqFloor(record, lease.nodeId)) return "a lease above its node's seq floor";
  }
  return null;
}

export interface LedgerApplyContext {
  /** The voter set at the applied index (from the replicated membership), for the owner and shares. */
  voters: readonly string[];
  policy: CreditLeasePolicy;
}

export interface LedgerApplied {
  record: CreditLedgerRecord;
  outcome: CreditLeaseOutcome;
}

export function applyGrantCreditLease(
  record: CreditLedgerRecord,
  command: GrantCreditLeaseCommand,
  context: LedgerApplyContext,
): LedgerApplied {
  assert(command.keyId === record.keyId, "grant: command for this key");
  assert(Number.isSafeInteger(command.seq) && command.seq >= 1, "grant: seq >= 1");
  assert(Number.isSafeInteger(command.requested) && command.requested >= 1, "grant: requested >= 1");
  const ownerNodeId = ownerOf(record.keyId, context.voters.length > 0 ? context.voters : [command.nodeId]);
  const base = { keyId: record.keyId, nodeId: command.nodeId, seq: command.seq, ownerNodeId };
  if (command.seq <= seqFloor(record, command.nodeId)) {
    return { record, outcome: { type: "refused", ...base, reason: "stale-seq" } };
  }
  // From here the seq is used up whatever happens: a late duplicate of this request is refused.
  const floors = withSeqFloor(record.seqFloors, command.nodeId, command.seq);
  const refuse = (reason: "low-not-owner" | "empty" | "too-many-leases"): LedgerApplied => ({
    record: checked({ ...record, seqFloors: floors }),
    outcome: { type: "refused", ...base, reason },
  });
  if (record.leases.length >= leasesPerKeyMax) return refuse("too-many-leases");
  if (record.unleased === 0) return refuse("empty");
  const voterCount = Math.max(1, context.voters.length);
  const size = leaseGrantSize(
    command.requested,
    record.unleased,
    voterCount,
    ownerNodeId === command.nodeId,
    context.policy,
  );
  if (size.granted === 0) return refuse(size.low ? "low-not-owner" : "empty");
  const lease: CreditLeaseRecord = {
    nodeId: command.nodeId,
    seq: command.seq,
    granted: size.granted,
    epoch: record.epoch,
    state: "open",
  };
  const leases = [...record.leases, lease].sort(compareLease);
  const next = checked({ ...record, unleased: record.unleased - size.granted, leases, seqFloors: floors });
  return {
    record: next,
    outcome: { type: "granted", ...base, granted: size.granted, epoch: record.epoch, low: size.low },
  };
}

export function applySettleCreditLease(record: CreditLedgerRecord, command: SettleCreditLeaseCommand): LedgerApplied {
  assert(command.keyId === record.keyId, "settle: command for this key");
  assert(Number.isSafeInteger(command.spent) && command.spent >= 0, "settle: spent >= 0");
  const base = { keyId: record.keyId, nodeId: command.nodeId, seq: command.seq };
  const floors = withSeqFloor(record.seqFloors, command.nodeId, command.seq);
  const lease = record.leases.find((l) => l.nodeId === command.nodeId && l.seq === command.seq);
  if (lease === undefined) {
    // Never granted (or settled before): raising the floor makes a late grant of it a refusal.
    return { record: checked({ ...record, seqFloors: floors }), outcome: { type: "ignored", ...base } };
  }
  assert(command.spent <= lease.granted, "settle: a holder never spends more than its grant");
  const leases = record.leases.filter((l) => l !== lease);
  if (lease.epoch !== record.epoch) {
    // A reset since the grant replaced the balance: the old lease's unspent credits are not returned.
    return {
      record: checked({ ...record, leases, seqFloors: floors }),
      outcome: { type: "settled", ...base, returned: 0 },
    };
  }
  const returned = lease.granted - command.spent;
  const next = checked({
    ...record,
    unleased: record.unleased + returned,
    epochSpent: record.epochSpent + command.spent,
    leases,
    seqFloors: floors,
  });
  return { record: next, outcome: { type: "settled", ...base, returned } };
}

/** Marks a lease expired (its holder stopped spending from it). Its credits return only on settle. */
export function applyExpireCreditLease(record: CreditLedgerRecord, command: ExpireCreditLeaseCommand): LedgerApplied {
  assert(command.keyId === record.keyId, "expire: command for this key");
  const base = { keyId: record.keyId, nodeId: command.nodeId, seq: command.seq };
  const lease = record.leases.find((l) => l.nodeId === command.nodeId && l.seq === command.seq);
  if (lease === undefined || lease.state === "expired") return { record, outcome: { type: "ignored", ...base } };
  const leases = record.leases.map((l) => (l === lease ? { ...l, state: "expired" as const } : l));
  return { record: checked({ ...record, leases }), outcome: { type: "expired", ...base } };
}

export function applyCreditLeaseCommand(
  record: CreditLedgerRecord,
  command: CreditLeaseCommand,
  context: LedgerApplyContext,
): LedgerApplied {
  switch (command.type) {
    case "grantCreditLease":
      return applyGrantCreditLease(record, command, context);
    case "settleCreditLease":
      return applySettleCreditLease(record, command);
    case "expireCreditLease":
      return applyExpireCreditLease(record, command);
    default: {
      const never: never = command;
      throw new Error(`unknown lease command ${JSON.stringify(never)}`);
    }
  }
}

/**
 * A reset (`keys.updateKey remaining`, `keys.updateRemaining` op `set`): a new epoch whose balance
 * is `remaining`. Leases of older epochs may still be spent from until their holders see the new
 * epoch or reach their deadline; their spends count against the old epoch and their unspent
 * credits are never returned, so the admitted total stays within the sum of all balances.
 */
export function applyCreditSet(record: CreditLedgerRecord, remaining: number): CreditLedgerRecord {
  assert(Number.isSafeInteger(remaining) && remaining >= 0, "set: remaining >= 0");
  return checked({ ...record, unleased: remaining, epoch: record.epoch + 1, epochBalance: remaining, epochSpent: 0 });
}

/** `keys.updateRemaining` increment (delta > 0) or decrement (delta < 0, floored at the unleased credits). */
export function applyCreditAdjust(record: CreditLedgerRecord, delta: number): CreditLedgerRecord {
  assert(Number.isSafeInteger(delta), "adjust: delta is an integer");
  const change = Math.max(delta, -record.unleased);
  return checked({ ...record, unleased: record.unleased + change, epochBalance: record.epochBalance + change });
}

/**
 * A refill instant (00:00 UTC, decided by `refillDueBetween` on the replicated time of the
 * command that reaches it): if the unleased credits alone are below `amount`, the key is reset to
 * `amount` (a new epoch). Otherwise the true balance (unleased plus unspent leases) is already at
 * least `amount` and nothing changes, as a refill never lowers the balance.
 */
export function applyCreditRefill(record: CreditLedgerRecord, amount: number): CreditLedgerRecord {
  assert(Number.isSafeInteger(amount) && amount >= 0, "refill: amount >= 0");
  if (record.unleased >= amount) return record;
  return applyCreditSet(record, amount);
}

/** A spend decided on the ledger itself (the `spendCredits` command path, e.g. an owner without a lease). */
export function applyCreditDirectSpend(
  record: CreditLedgerRecord,
  cost: number,
): { record: CreditLedgerRecord; admitted: boolean } {
  assert(Number.isSafeInteger(cost) && cost >= 0, "direct spend: cost >= 0");
  if (cost > record.unleased) return { record, admitted: false };
  return {
    record: checked({ ...record, unleased: record.unleased - cost, epochSpent: record.epochSpent + cost }),
    admitted: true,
  };
}

/**
 * The replicated `remaining` that keys.getKey reports: the unleased credits plus the current
 * epoch's unsettled grants, i.e. every credit not known to be spent. The true balance lies in
 * [unleased, this value]; both ends meet once every lease is settled.
 */
export function ledgerRemaining(record: CreditLedgerRecord): number {
  return record.unleased + leasedCredits(record);
}

/**
 * The highest lease number of `nodeId` the ledgers know (a floor, or an unsettled lease). A node
 * whose journal's highest number is below it runs on a journal older than what it did (an old or
 * wiped data directory under the same id): it must not start, since its numbering would collide
 * with leases it may have spent from and a settle of one as unspent would return spent credits.
 */
export function ledgerSeqMax(ledgers: Iterable<CreditLedgerRecord>, nodeId: string): number {
  let max = 0;
  for (const record of ledgers) {
    max = Math.max(max, seqFloor(record, nodeId));
    for (const lease of record.leases) if (lease.nodeId === nodeId) max = Math.max(max, lease.seq);
  }
  return max;
}
