// The leader's lease expiry (docs/counters.md §1 "Expiry on the leader", Theorem 2): a lease
// watched for ttl * (1 + driftMax) + margin of the leader's monotonic clock since its grant was
// applied is surely past its holder's deadline; the leader proposes expireCreditLease for it.
// Only the leader watches; a new leader starts every open lease's wait afresh (it can only wait
// longer). Expiry returns no credits (they come back when the holder settles): it records that
// the holder's spends of that lease are final.
import {
  creditBatchCommandsMax,
  LeaseExpiryTracker,
  type CommandOutcome,
  type CreditLeaseOutcome,
  type KeyCommand,
  type KeyState,
  type LeaseExpiryOptions,
  type WatchedLease,
} from "@keyraft/core";

export interface LeaseExpiryDriverOptions extends LeaseExpiryOptions {
  state: KeyState;
  isLeader(): boolean;
  propose(command: KeyCommand): Promise<CommandOutcome>;
  monoNowMs(): number;
  onError(error: unknown): void;
}

function leaseId(lease: WatchedLease): string {
  return `${lease.keyId}\u0000${lease.nodeId}\u0000${lease.seq}`;
}

export class LeaseExpiryDriver {
  private readonly tracker: LeaseExpiryTracker;
  private leading = false;
  /** Expiries proposed and not yet applied (not proposed twice at once). */
  private readonly inFlight = new Set<string>();

  constructor(private readonly options: LeaseExpiryDriverOptions) {
    this.tracker = new LeaseExpiryTracker(options);
  }

  private openLeases(): WatchedLease[] {
    const out: WatchedLease[] = [];
    for (const ledger of this.options.state.creditLedgers.values()) {
      for (const lease of ledger.leases)
        if (lease.state === "open") out.push({ keyId: ledger.keyId, nodeId: lease.nodeId, seq: lease.seq });
    }
    return out;
  }

  /** Timer: follows leadership and proposes the expiries that are due. */
  tick(): void {
    const now = this.options.monoNowMs();
    const leader = this.options.isLeader();
    if (leader && !this.leading) this.tracker.becameLeader(this.openLeases(), now);
    if (!leader && this.leading) {
      this.tracker.lostLeadership();
      this.inFlight.clear();
    }
    this.leading = leader;
    if (!leader) return;
    const due = this.tracker.due(now).filter((lease) => !this.inFlight.has(leaseId(lease)));
    for (let start = 0; start < due.length; start += creditBatchCommandsMax) {
      const batch = due.slice(start, start + creditBatchCommandsMax);
      for (const lease of batch) this.inFlight.add(leaseId(lease));
      this.options
        .propose({ type: "creditBatch", commands: batch.map((lease) => ({ type: "expireCreditLease", ...lease })) })
        .catch((error: unknown) => this.options.onError(error))
        .finally(() => {
          for (const lease of batch) this.inFlight.delete(leaseId(lease));
        });
    }
  }

  /** Every applied lease outcome (any node's). */
  onLease(outcome: CreditLeaseOutcome): void {
    if (!this.leading) return;
    const lease = { keyId: outcome.keyId, nodeId: outcome.nodeId, seq: outcome.seq };
    if (outcome.type === "granted") this.tracker.onGrantApplied(lease, this.options.monoNowMs());
    else if (outcome.type !== "refused") this.tracker.onLeaseGone(lease);
  }

  /** A snapshot replaced the state: watch its open leases from now. */
  onRestore(): void {
    if (this.leading) this.tracker.becameLeader(this.openLeases(), this.options.monoNowMs());
  }

  watched(): number {
    return this.tracker.watched();
  }
}
