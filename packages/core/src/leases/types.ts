// Plain records of the replicated credit ledger with leases (docs/counters.md). They live in the
// key state (one record per key with finite credits) and are changed only by the apply functions
// of ./ledger.ts, which every replica runs in log order, so all replicas hold equal records.

/** A lease of credits drawn from the ledger by one node. */
export interface CreditLeaseRecord {
  nodeId: string;
  /** Per-node lease number, increasing (journaled by the holder before it asks). */
  seq: number;
  /** Credits handed to the holder; the holder spends at most this much from the lease. */
  granted: number;
  /** The ledger epoch at grant: a later `set` or refill reset forfeits this lease's unspent credits. */
  epoch: number;
  /**
   * open: the holder may still spend from it. expired: a leader saw it applied for longer than the
   * holder's deadline, so the holder no longer spends from it; its credits stay counted as spent
   * until the holder settles (then the unspent part returns).
   */
  state: "open" | "expired";
}

/** Per node: grants with `seq <= floor` are refused (the holder abandoned or settled them). */
export interface CreditSeqFloor {
  nodeId: string;
  floor: number;
}

/** The ledger of one key with finite credits. */
export interface CreditLedgerRecord {
  keyId: string;
  /** Credits not handed out in any lease: what a new lease (or a direct spend) draws from. */
  unleased: number;
  /** Bumped by every reset (`set`, a refill that tops up); leases of older epochs return nothing. */
  epoch: number;
  /** Credits put into this epoch: the reset value plus increments, minus decrements taken. */
  epochBalance: number;
  /** Credits of this epoch known spent: settled leases' spent, forfeited leases' grants, direct spends. */
  epochSpent: number;
  /** Leases not settled yet, sorted by (nodeId, seq); at most `leasesPerKeyMax`. */
  leases: CreditLeaseRecord[];
  /** Sorted by nodeId; at most one per node that ever asked. */
  seqFloors: CreditSeqFloor[];
}

/** `grantCreditLease`: proposed by a holder that journaled `seq` as requested. */
export interface GrantCreditLeaseCommand {
  type: "grantCreditLease";
  keyId: string;
  nodeId: string;
  seq: number;
  /** Credits asked for (>= 1); the grant may be smaller, or 0. */
  requested: number;
}

/** `settleCreditLease`: the holder closed the lease (journaled) and reports what it spent. */
export interface SettleCreditLeaseCommand {
  type: "settleCreditLease";
  keyId: string;
  nodeId: string;
  seq: number;
  spent: number;
}

/** `expireCreditLease`: proposed by a leader once the lease's deadline has surely passed. */
export interface ExpireCreditLeaseCommand {
  type: "expireCreditLease";
  keyId: string;
  nodeId: string;
  seq: number;
}

export type CreditLeaseCommand = GrantCreditLeaseCommand | SettleCreditLeaseCommand | ExpireCreditLeaseCommand;

/** What applying a lease command did (returned to the proposer; deterministic on every replica). */
export type CreditLeaseOutcome =
  | {
      type: "granted";
      keyId: string;
      nodeId: string;
      seq: number;
      granted: number;
      epoch: number;
      ownerNodeId: string;
      low: boolean;
    }
  | { type: "refused"; keyId: string; nodeId: string; seq: number; reason: CreditLeaseRefusal; ownerNodeId: string }
  | { type: "settled"; keyId: string; nodeId: string; seq: number; returned: number }
  | { type: "expired"; keyId: string; nodeId: string; seq: number }
  | { type: "ignored"; keyId: string; nodeId: string; seq: number };

export type CreditLeaseRefusal =
  /** The lease number was already abandoned or used: a late duplicate. */
  | "stale-seq"
  /** The key runs low and its last credits are served by its owner only. */
  | "low-not-owner"
  /** Nothing left to lease. */
  | "empty"
  /** `leasesPerKeyMax` leases are unsettled. */
  | "too-many-leases";
