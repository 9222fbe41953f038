// The holder's local journal: one record per step that matters for safety, written durably
// (fsync) before the step has any effect outside the node: before a grant request is sent,
// before a granted lease is spent from, before a spend is answered, before a settle is sent.
// After a crash the holder is rebuilt from it (LeaseHolder.restore) and settles every lease it
// knew of with exactly the spends it journaled.
import { assert } from "../assert.js";

export type HolderJournalRecord =
  /** About to ask for lease `seq` of `keyId`. */
  | { t: "request"; keyId: string; seq: number }
  /** Lease `seq` was granted; spending from it may start. */
  | { t: "grant"; keyId: string; seq: number; granted: number; epoch: number }
  /** `cost` spent from lease `seq` (answered only after this is durable). */
  | { t: "spend"; keyId: string; seq: number; cost: number }
  /** Lease `seq` is closed: nothing more is spent from it; a settle is owed. */
  | { t: "close"; keyId: string; seq: number }
  /** The ledger applied the settle of `seq`: the lease is done. */
  | { t: "settled"; keyId: string; seq: number };

export interface JournaledLease {
  keyId: string;
  seq: number;
  granted: number;
  spent: number;
  closed: boolean;
  settled: boolean;
}

/** Folds a journal into the leases it describes (by seq), checking that it is well-formed. */
export function replayHolderJournal(records: readonly HolderJournalRecord[]): {
  leases: Map<number, JournaledLease>;
  seqMax: number;
} {
  const leases = new Map<number, JournaledLease>();
  let seqMax = 0;
  for (const record of records) {
    if (record.t === "request") {
      assert(!leases.has(record.seq), "journal: a seq is requested once");
      leases.set(record.seq, {
        keyId: record.keyId,
        seq: record.seq,
        granted: 0,
        spent: 0,
        closed: false,
        settled: false,
      });
      seqMax = Math.max(seqMax, record.seq);
      continue;
    }
    const lease = leases.get(record.seq);
    assert(lease !== undefined && lease.keyId === record.keyId, "journal: a record follows its request");
    switch (record.t) {
      case "grant":
        lease.granted = record.granted;
        break;
      case "spend":
        assert(!lease.closed, "journal: no spend after close");
        lease.spent += record.cost;
        assert(lease.spent <= lease.granted, "journal: spent within the grant");
        break;
      case "close":
        lease.closed = true;
        break;
      case "settled":
        lease.settled = true;
        break;
      default: {
        const never: never = record;
        throw new Error(`unknown journal record ${JSON.stringify(never)}`);
      }
    }
  }
  return { leases, seqMax };
}

/** The journal without settled leases (what the shell rewrites when it compacts): same replay otherwise. */
export function compactHolderJournal(records: readonly HolderJournalRecord[]): HolderJournalRecord[] {
  const { leases, seqMax } = replayHolderJournal(records);
  const out: HolderJournalRecord[] = [];
  for (const lease of leases.values()) {
    if (lease.settled && lease.seq !== seqMax) continue; // keep the newest seq so numbering never goes back
    out.push({ t: "request", keyId: lease.keyId, seq: lease.seq });
    if (lease.granted > 0 || lease.spent > 0)
      out.push({ t: "grant", keyId: lease.keyId, seq: lease.seq, granted: lease.granted, epoch: 0 });
    if (lease.spent > 0) out.push({ t: "spend", keyId: lease.keyId, seq: lease.seq, cost: lease.spent });
    if (lease.closed) out.push({ t: "close", keyId: lease.keyId, seq: lease.seq });
    if (lease.settled) out.push({ t: "settled", keyId: lease.keyId, seq: lease.seq });
  }
  return out;
}
