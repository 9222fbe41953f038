// The credits a node shows for a key (keys.getKey, every verification answer): the replicated
// ledger's `remaining` less what this node itself spent from leases the ledger still counts in
// full. The ledger counts an unsettled lease's grant as unspent until its holder settles, so on
// its own it runs ahead of the true balance by every spend made from open leases; the node knows
// its own spends exactly (the holder), so subtracting them makes a single node exact and gives a
// cluster read-your-writes (docs/counters.md, "What `remaining` shows").
//
// Which leases count is the replica's ledger's business, not the holder's: a lease is subtracted
// while the ledger lists it unsettled in the current epoch, and its settle removes it from the
// ledger and returns `granted - spent` in the same apply, so the shown value never jumps when a
// settle lands, whenever the holder hears of it.
import { assert } from "../assert.js";
import { ledgerRemaining } from "./ledger.js";
import type { CreditLedgerRecord } from "./types.js";

/** What `nodeId` spent from lease `seq` of the key, as its holder knows it (0 if unknown). */
export type OwnSpentOf = (seq: number) => number;

/** Credits `nodeId` spent from its leases of the ledger's current epoch that the ledger still counts as granted. */
export function ownUnsettledSpent(ledger: CreditLedgerRecord, nodeId: string, spentOf: OwnSpentOf): number {
  let sum = 0;
  for (const lease of ledger.leases) {
    if (lease.nodeId !== nodeId || lease.epoch !== ledger.epoch) continue;
    const spent = spentOf(lease.seq);
    assert(spent >= 0 && spent <= lease.granted, "shown credits: a lease's spends stay within its grant");
    sum += spent;
  }
  return sum;
}

/**
 * The balance `nodeId` shows: exact on a single node (every spend is its own), and in a cluster
 * at least the true balance and at most it plus the other nodes' spends from their unsettled
 * leases (and their log spends this replica has not applied yet).
 */
export function shownCredits(ledger: CreditLedgerRecord, nodeId: string, spentOf: OwnSpentOf): number {
  return ledgerRemaining(ledger) - ownUnsettledSpent(ledger, nodeId, spentOf);
}
