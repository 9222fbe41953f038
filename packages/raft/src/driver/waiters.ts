// Callers waiting for the outcome of a proposal, a read, a membership change or a transfer.
// Each waiter has a deadline (wall clock, ms); the driver sweeps expired ones on every tick.

import { assert } from "../core/assert.js";
import type { RaftNodeError } from "../errors.js";

export interface Waiter<T> {
  resolve(value: T): void;
  reject(error: RaftNodeError): void;
  deadlineMs: number;
}

/** Proposals the core accepted, keyed by log index: committed iff the entry applied at `index` has `term`. */
export class ProposalWaiters<T> {
  // Insertion order == deadline order (one timeout for all, requests fed in arrival order), so
  // expiry sweeps stop early. Index order holds only within one term of leadership.
  private readonly byIndex = new Map<number, { term: number; waiter: Waiter<T> }>();

  constructor(private readonly waitersMax: number) {}

  get size(): number {
    return this.byIndex.size;
  }

  get full(): boolean {
    return this.byIndex.size >= this.waitersMax;
  }

  /**
   * Registers a proposal. A waiter already at `index` is from an older term: this node lost and
   * regained leadership and its old entry there was overwritten, so that proposal can never commit
   * (a leader never overwrites its own log) and is rejected with `lost()`.
   */
  add(index: number, term: number, waiter: Waiter<T>, lost: () => RaftNodeError): void {
    const stale = this.byIndex.get(index);
    if (stale !== undefined) {
      assert(stale.term < term, `waiters: index ${index} proposed twice in term ${term}`);
      this.byIndex.delete(index);
      stale.waiter.reject(lost());
    }
    assert(this.byIndex.size < this.waitersMax, "waiters: waitersMax reached; check `full` first");
    this.byIndex.set(index, { term, waiter });
  }

  /** The entry at `index` was applied with `term`: settles the waiter there, if any. */
  take(index: number, term: number): { waiter: Waiter<T>; committed: boolean } | null {
    const pending = this.byIndex.get(index);
    if (pending === undefined) return null;
    this.byIndex.delete(index);
    return { waiter: pending.waiter, committed: pending.term === term };
  }

  /** Rejects every waiter at or below `index` (a snapshot replaced those entries: outcome unknown). */
  rejectUpTo(index: number, error: () => RaftNodeError): void {
    // Not `break` at the first higher index: after a leadership change indexes are not in insertion order.
    for (const [at, pending] of this.byIndex) {
      if (at > index) continue;
      this.byIndex.delete(at);
      pending.waiter.reject(error());
    }
  }

  expire(nowMs: number, error: () => RaftNodeError): void {
    for (const [at, pending] of this.byIndex) {
      if (pending.waiter.deadlineMs > nowMs) break;
      this.byIndex.delete(at);
      pending.waiter.reject(error());
    }
  }

  rejectAll(error: () => RaftNodeError): void {
    for (const pending of this.byIndex.values()) pending.waiter.reject(error());
    this.byIndex.clear();
  }
}

/** ReadIndex requests, keyed by their context; safe to serve once applied >= the confirmed index. */
export class ReadWaiters {
  private readonly byContext = new Map<string, { index: number | null; waiter: Waiter<void> }>();
  private confirmed = 0;

  constructor(private readonly waitersMax: number) {}

  get full(): boolean {
    return this.byContext.size >= this.waitersMax;
  }

  add(context: string, waiter: Waiter<void>): void {
    assert(this.byContext.size < this.waitersMax, "reads: waitersMax reached; check `full` first");
    this.byContext.set(context, { index: null, waiter });
  }

  confirm(context: string, index: number): void {
    const pending = this.byContext.get(context);
    if (pending === undefined || pending.index !== null) return; // expired meanwhile, or a duplicate
    pending.index = index;
    this.confirmed++;
  }

  resolveUpTo(applied: number): void {
    if (this.confirmed === 0) return;
    for (const [context, pending] of this.byContext) {
      if (pending.index === null || pending.index > applied) continue;
      this.byContext.delete(context);
      this.confirmed--;
      pending.waiter.resolve();
    }
  }

  /** The leader refused the read `context` (it will never be confirmed): fails it now. */
  reject(context: string, error: RaftNodeError): void {
    const pending = this.byContext.get(context);
    if (pending === undefined || pending.index !== null) return;
    this.byContext.delete(context);
    pending.waiter.reject(error);
  }

  /** Rejects reads not yet confirmed (e.g. the leader changed: their requests may be lost). */
  rejectUnconfirmed(error: () => RaftNodeError): void {
    for (const [context, pending] of this.byContext) {
      if (pending.index !== null) continue;
      this.byContext.delete(context);
      pending.waiter.reject(error());
    }
  }

  expire(nowMs: number, error: () => RaftNodeError): void {
    for (const [context, pending] of this.byContext) {
      if (pending.waiter.deadlineMs > nowMs) continue;
      this.byContext.delete(context);
      if (pending.index !== null) this.confirmed--;
      pending.waiter.reject(error());
    }
  }

  rejectAll(error: () => RaftNodeError): void {
    for (const pending of this.byContext.values()) pending.waiter.reject(error());
    this.byContext.clear();
    this.confirmed = 0;
  }
}
