// `async: true` limits: each node answers from its own counts plus the last counts it heard from
// the other nodes, and exchanges its own counts every reconcile period R. Between two exchanges
// each other node may admit what it believes is left, so in any window the cluster admits at most
// limit + (nodes - 1) * min(limit, admittedPerNodePerR), where admittedPerNodePerR is what one
// node admits for that identifier in R ms (docs/counters.md). Counts per bucket, as the limiter.
import { assert } from "../assert.js";

/** Buckets kept per node view; past it the oldest are dropped (they have left the window). */
export const asyncBucketsMax = 100_000;

/**
 * Identifiers one estimator holds per node view (identifiers are the callers' to choose). Past
 * it the least recently used one is forgotten: its estimate starts
 * again from the other nodes' counts, an overshoot on that identifier alone, never a refusal for
 * everyone and never unbounded memory.
 */
export const asyncKeysMax = 100_000;

export interface AsyncBucketCount {
  key: string;
  bucketStartMs: number;
  count: number;
}

export class AsyncLimitEstimator {
  /** key -> bucketStart -> count, own admissions. */
  private readonly own = new Map<string, Map<number, number>>();
  /** peer -> key -> bucketStart -> count, as last reported (counts only grow within a bucket). */
  private readonly peers = new Map<string, Map<string, Map<number, number>>>();

  constructor(
    private readonly durationMs: number,
    private readonly bucketWidthMs: number,
  ) {
    assert(durationMs > 0 && bucketWidthMs > 0 && bucketWidthMs <= durationMs, "async estimator: widths in range");
  }

  private windowStart(nowMs: number): number {
    // Buckets counted at now: those that may hold a hit in (now - duration, now] (partial one whole).
    return Math.floor((nowMs - this.durationMs + 1) / this.bucketWidthMs) * this.bucketWidthMs;
  }

  private sum(buckets: Map<number, number> | undefined, nowMs: number): number {
    if (buckets === undefined) return 0;
    const from = this.windowStart(nowMs);
    let sum = 0;
    for (const [start, count] of buckets) if (start >= from && start <= nowMs) sum += count;
    return sum;
  }

  /** The estimated cluster count of `key` at `nowMs`: own plus every peer's last report. */
  estimate(key: string, nowMs: number): number {
    let total = this.sum(this.own.get(key), nowMs);
    for (const view of this.peers.values()) total += this.sum(view.get(key), nowMs);
    return total;
  }

  /** Admits `cost` if the estimate leaves room for it; counts it as this node's. */
  admit(key: string, limit: number, cost: number, nowMs: number): { success: boolean; remaining: number } {
    assert(Number.isSafeInteger(cost) && cost >= 0, "async admit: cost >= 0");
    const estimate = this.estimate(key, nowMs);
    if (estimate + cost > limit) return { success: false, remaining: Math.max(0, limit - estimate) };
    if (cost > 0) {
      let buckets = this.own.get(key);
      if (buckets === undefined) {
        this.makeRoom(this.own);
        buckets = new Map();
      } else this.own.delete(key); // re-inserted below: the most recently used
      this.own.set(key, buckets);
      const start = Math.floor(nowMs / this.bucketWidthMs) * this.bucketWidthMs;
      buckets.set(start, (buckets.get(start) ?? 0) + cost);
      if (buckets.size > asyncBucketsMax) this.prune(nowMs);
    }
    return { success: true, remaining: Math.max(0, limit - estimate - cost) };
  }

  /** This node's live counts, to send to every other node at each reconcile. */
  report(nowMs: number): AsyncBucketCount[] {
    const from = this.windowStart(nowMs);
    const out: AsyncBucketCount[] = [];
    for (const [key, buckets] of this.own)
      for (const [start, count] of buckets) if (start >= from) out.push({ key, bucketStartMs: start, count });
    return out;
  }

  /** A peer's report (idempotent: a bucket keeps the highest count heard, so reordered reports do not lower it). */
  merge(peerId: string, counts: readonly AsyncBucketCount[]): void {
    let view = this.peers.get(peerId);
    if (view === undefined) {
      view = new Map();
      this.peers.set(peerId, view);
    }
    for (const c of counts) {
      let buckets = view.get(c.key);
      if (buckets === undefined) {
        this.makeRoom(view);
        buckets = new Map();
        view.set(c.key, buckets);
      }
      buckets.set(c.bucketStartMs, Math.max(buckets.get(c.bucketStartMs) ?? 0, c.count));
    }
  }

  /**
   * Before a new identifier in `m`: at asyncKeysMax the least recently used is forgotten (O(1);
   * it is usually one whose buckets left the window already).
   */
  private makeRoom(m: Map<string, Map<number, number>>): void {
    if (m.size >= asyncKeysMax) m.delete(m.keys().next().value!);
    assert(m.size < asyncKeysMax, "async estimator: identifiers within asyncKeysMax");
  }

  /** Drops buckets that left every window. */
  prune(nowMs: number): void {
    const from = this.windowStart(nowMs);
    const pruneOne = (m: Map<string, Map<number, number>>): void => {
      for (const [key, buckets] of m) {
        for (const start of buckets.keys()) if (start < from) buckets.delete(start);
        if (buckets.size === 0) m.delete(key);
      }
    };
    pruneOne(this.own);
    for (const view of this.peers.values()) pruneOne(view);
  }
}

/** The stated overshoot bound of an async limit: the most a window admits beyond `limit`. */
export function asyncOvershootBound(limit: number, nodes: number, admittedPerNodePerReconcile: number): number {
  return (nodes - 1) * Math.min(limit, admittedPerNodePerReconcile);
}
