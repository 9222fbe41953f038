// The credits this node shows for a key: in getKey/whoami/listKeys, and in every verification
// answer (docs/counters.md, "What `remaining` shows").
//
//   shown = the replica's remaining (lazy refill applied) - this node's own unsettled lease spends
//
// (core leases/shown.ts): exact on a single node, read-your-writes in a cluster. On top of it a
// floor per key: a node never shows more than it showed before for the same key unless credits
// were added (a reset or an increment, a refill). Without additions the true balance only falls,
// so every value shown stays at least the true balance; the floor only matters in a cluster,
// where an answer relayed from a low key's owner may be below what this replica knows.
//
// Every value is taken at the moment its spend happened (the holder's spend, the log entry's
// apply), never when the answer is sent: concurrent answers then show each balance once.
import {
  creditLedgerOf,
  creditsAt,
  ownUnsettledSpent,
  type KeyRecord,
  type KeyState,
  type LeaseHolder,
} from "@keyraft/core";

/** Keys with a remembered floor; past it the least recently shown is forgotten (it may then show higher, within the bound). */
export const shownFloorsMax = 100_000;

interface Floor {
  epoch: number;
  epochBalance: number;
  /** The refill instant the view had applied (a new one is an addition). */
  refillMark: number | null;
  credits: number;
}

export class ShownCredits {
  private readonly floors = new Map<string, Floor>();
  /** The key `spentOfSeq` reads (set right before each synchronous use: no closure per verification). */
  private spentKeyId = "";
  private readonly spentOfSeq = (seq: number): number => this.holder.spentOf(this.spentKeyId, seq);

  constructor(
    private readonly state: KeyState,
    private readonly holder: LeaseHolder,
    private readonly nowMs: () => number,
  ) {}

  /** What this node spent from its own leases of `keyId` that the replica still counts in full. */
  spentHere(keyId: string): number {
    const ledger = creditLedgerOf(this.state, keyId);
    if (ledger === undefined) return 0;
    this.spentKeyId = keyId;
    return ownUnsettledSpent(ledger, this.holder.nodeId, this.spentOfSeq);
  }

  /** The credits shown for `keyId` now (null: unlimited or unknown), remembered as its floor. */
  now(keyId: string): number | null {
    const key = this.state.keys.get(keyId);
    if (key === undefined) return null;
    return this.at(key, this.nowMs());
  }

  /** The credits shown for `key` at `nowMs` (null: unlimited), remembered as its floor. */
  at(key: KeyRecord, nowMs: number): number | null {
    if (key.remaining === null) return null;
    const view = creditsAt(key, nowMs, this.spentHere(key.id));
    // The view's refill instant does not depend on the spends: no second view for the floor.
    return this.floored(key, view.remaining ?? 0, view.lastRefillAtMs);
  }

  /**
   * `credits`, a value of `key` computed now (or relayed from another node), no higher than what
   * this node showed last for it unless credits were added since; remembered as the new floor.
   */
  displayed(key: KeyRecord, credits: number, nowMs: number): number {
    if (key.remaining === null) return credits;
    return this.floored(key, credits, key.refill === null ? null : creditsAt(key, nowMs).lastRefillAtMs);
  }

  /** `displayed` with the refill instant the view applied (`refillMark`). */
  private floored(key: KeyRecord, credits: number, refillMark: number | null): number {
    const ledger = creditLedgerOf(this.state, key.id);
    if (ledger === undefined || key.remaining === null) return credits;
    const floor = this.floors.get(key.id);
    let shown = credits;
    if (
      floor !== undefined &&
      floor.epoch === ledger.epoch &&
      floor.refillMark === refillMark &&
      ledger.epochBalance <= floor.epochBalance
    ) {
      // A decrement since lowered the balance by exactly what it took.
      shown = Math.min(credits, Math.max(0, floor.credits - (floor.epochBalance - ledger.epochBalance)));
    }
    // Most recently shown last (the bound forgets the oldest); the record is reused, not rebuilt, per answer.
    this.floors.delete(key.id);
    if (floor === undefined)
      this.floors.set(key.id, { epoch: ledger.epoch, epochBalance: ledger.epochBalance, refillMark, credits: shown });
    else {
      floor.epoch = ledger.epoch;
      floor.epochBalance = ledger.epochBalance;
      floor.refillMark = refillMark;
      floor.credits = shown;
      this.floors.set(key.id, floor);
    }
    if (this.floors.size > shownFloorsMax) {
      const oldest = this.floors.keys().next().value;
      if (oldest !== undefined) this.floors.delete(oldest);
    }
    return shown;
  }
}
