// The leader's side of lease expiry. A holder spends from a lease until requestSentAt + ttl on its
// own monotonic clock. The grant is applied after the request was sent, so once a leader has seen
// the grant applied for ttl * (1 + driftMax) + marginMs of ITS OWN monotonic time, the holder's
// clock (running at most driftMax faster, relative) has passed the deadline too: only clock-rate
// drift matters, never the offset between clocks. A new leader starts the wait afresh for every
// lease (it saw them applied no earlier than when it took over), so the rule survives failover.
import { assert } from "../assert.js";

export interface LeaseExpiryOptions {
  ttlMs: number;
  /** Relative clock-rate difference bound between any two nodes (0.01 = 1%). */
  driftMax: number;
  /** Extra wait for scheduling hiccups (GC pauses between reading the clock and spending). */
  marginMs: number;
}

/** Leases watched at once by one leader; past it the oldest observed are proposed first anyway. */
export const expiryWatchedMax = 1_000_000;

export function expiryWaitMs(options: LeaseExpiryOptions): number {
  assert(
    options.ttlMs > 0 && options.driftMax >= 0 && options.driftMax < 1 && options.marginMs >= 0,
    "expiry: options in range",
  );
  return Math.ceil(options.ttlMs * (1 + options.driftMax) + options.marginMs);
}

export interface WatchedLease {
  keyId: string;
  nodeId: string;
  seq: number;
}

function leaseKey(lease: WatchedLease): string {
  return `${lease.keyId}\u0000${lease.nodeId}\u0000${lease.seq}`;
}

export class LeaseExpiryTracker {
  private readonly observed = new Map<string, { lease: WatchedLease; sinceMonoMs: number }>();
  private readonly waitMs: number;

  constructor(options: LeaseExpiryOptions) {
    this.waitMs = expiryWaitMs(options);
  }

  /** This node became leader: every open lease is watched from now. */
  becameLeader(openLeases: readonly WatchedLease[], nowMonoMs: number): void {
    this.observed.clear();
    for (const lease of openLeases) this.onGrantApplied(lease, nowMonoMs);
  }

  /** A grant was applied while this node leads (the earliest it may start counting). */
  onGrantApplied(lease: WatchedLease, nowMonoMs: number): void {
    const key = leaseKey(lease);
    if (this.observed.has(key) || this.observed.size >= expiryWatchedMax) return;
    this.observed.set(key, {
      lease: { keyId: lease.keyId, nodeId: lease.nodeId, seq: lease.seq },
      sinceMonoMs: nowMonoMs,
    });
  }

  /** The lease was settled or expired: stop watching it. */
  onLeaseGone(lease: WatchedLease): void {
    this.observed.delete(leaseKey(lease));
  }

  lostLeadership(): void {
    this.observed.clear();
  }

  /** Leases whose holder has surely stopped spending: propose `expireCreditLease` for each. */
  due(nowMonoMs: number): WatchedLease[] {
    const out: WatchedLease[] = [];
    for (const entry of this.observed.values()) if (nowMonoMs - entry.sinceMonoMs >= this.waitMs) out.push(entry.lease);
    return out;
  }

  watched(): number {
    return this.observed.size;
  }
}
