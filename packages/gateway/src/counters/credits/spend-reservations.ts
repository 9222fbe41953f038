// Spends journaled ahead, in chunks (like the rate-limit reservations of store/counter-durability):
// the journal says a lease spent `reserved` credits, always at least what this node has answered
// from it. Most verifications find their spend already covered by a durable record and need no
// disk write; the rest share one fsynced batch. After a crash the holder settles the lease with
// the journaled (reserved) amount, so a restart forfeits less than one chunk per open lease and
// never returns a credit that was answered (Theorem 1 needs settle >= answered spends).
import { assert, type HolderJournalRecord } from "@keyraft/core";

/** A chunk is this fraction of the grant (at least 1 credit, at least the cost). */
export const reservationChunkDivisor = 4;
/** Leases tracked at once (a holder keeps at most 2 per key); past it spends are journaled one by one. */
export const reservedLeasesMax = 250_000;

interface Reserved {
  keyId: string;
  granted: number;
  /** Credits answered from the lease. */
  spent: number;
  /** Credits the journal says were spent (queued or durable). */
  reserved: number;
  /** Resolves when `reserved` is durable; null when it already is. */
  pending: Promise<void> | null;
}

export type SpendCover =
  /** Covered by a durable record: answer now. */
  | { type: "durable" }
  /** Covered by a record on its way to disk: answer once it is durable. */
  | { type: "pending"; durable: Promise<void> }
  /** Journal this record, then answer once it is durable. */
  | { type: "write"; record: HolderJournalRecord; onQueued(durable: Promise<void>): void };

export class SpendReservations {
  private readonly leases = new Map<number, Reserved>();

  /** Follows the holder's journal: grants open a lease for reservations, closes end it. */
  observe(records: readonly HolderJournalRecord[]): void {
    for (const record of records) {
      if (record.t === "grant" && this.leases.size < reservedLeasesMax) {
        this.leases.set(record.seq, {
          keyId: record.keyId,
          granted: record.granted,
          spent: 0,
          reserved: 0,
          pending: null,
        });
      } else if (record.t === "close" || record.t === "settled") {
        this.leases.delete(record.seq);
      }
    }
  }

  /** The cover for a spend record the holder produced. */
  cover(record: Extract<HolderJournalRecord, { t: "spend" }>): SpendCover {
    const lease = this.leases.get(record.seq);
    if (lease === undefined) return { type: "write", record, onQueued: () => undefined };
    lease.spent += record.cost;
    assert(lease.spent <= lease.granted, "reservations: spent within the grant");
    if (lease.spent <= lease.reserved)
      return lease.pending === null ? { type: "durable" } : { type: "pending", durable: lease.pending };
    const chunk = Math.max(1, Math.ceil(lease.granted / reservationChunkDivisor));
    const target = Math.min(lease.granted, lease.spent + chunk - 1);
    const write: HolderJournalRecord = {
      t: "spend",
      keyId: record.keyId,
      seq: record.seq,
      cost: target - lease.reserved,
    };
    lease.reserved = target;
    return {
      type: "write",
      record: write,
      onQueued: (durable) => {
        lease.pending = durable;
        durable.then(
          () => {
            if (lease.pending === durable) lease.pending = null;
          },
          () => undefined,
        );
      },
    };
  }

  /** Keys with a lease in use (a graceful stop settles them). */
  keysWithLeases(): string[] {
    return [...new Set([...this.leases.values()].map((lease) => lease.keyId))];
  }

  tracked(): number {
    return this.leases.size;
  }
}
