// `async: true` limits: each node answers from its own counts plus the last counts it heard from
// the other nodes, and exchanges its own counts every reconcile period R. Between two exchanges
// each other node may admit what it believes is left, so in any window the cluster admits at most
// limit + (nodes - 1) * min(limit, u), where u is the most one node has admitted for that
// identifier that not every other node has heard of yet (docs/counters.md, Theorem 5).
//
// u is capped by the node's *unconfirmed share*: admissions are tagged with the exchange round
// they will travel in, and a round is confirmed once every live peer acknowledged merging it. A
// node admits only while its unconfirmed admissions of the identifier plus the cost stay within
// its share (async-shares.ts: a floor plus a part that follows the traffic, `trafficWeight`), so
// the overshoot is bounded by the shares, not by R or by the traffic's shape. Answers stay local:
// a request past the share is refused now, never held for the network. Counts per bucket, as the
// limiter.
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

/** What a node last heard of a peer's beats (the highest of each, so reordered beats never lower them). */
export interface AsyncPeerBeat {
  /** The peer's clock when it sent its latest beat: its counts of earlier buckets are final. */
  nowMs: number;
  /** Every admission the peer has not had confirmed, now or later, was made at or after this time of its clock. */
  unconfirmedSinceMs: number;
}

export interface AsyncBucketCount {
  key: string;
  bucketStartMs: number;
  count: number;
}

/** Keys with unconfirmed admissions at once; past it a new key's admission is refused (fail closed). */
export const asyncUnconfirmedKeysMax = 100_000;

/** The overshoot allowed per limit, as a fraction of it (docs/counters.md). */
export const asyncOvershootFraction = 0.1;

/** The exchange round an admission travels in, and the share it must stay within. */
export interface AsyncUnconfirmed {
  round: number;
  shareMax: number;
}

export class AsyncLimitEstimator {
  /** key -> bucketStart -> count, own admissions. */
  private readonly own = new Map<string, Map<number, number>>();
  /** peer -> key -> bucketStart -> count, as last reported (counts only grow within a bucket). */
  private readonly peers = new Map<string, Map<string, Map<number, number>>>();
  /** key -> round -> cost admitted here and not yet confirmed by every live peer. */
  private readonly unconfirmed = new Map<string, Map<number, number>>();

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

  /**
   * The counts of `buckets` at `nowMs`: every bucket that has not left the window, including
   * buckets that start after `nowMs`, which a peer whose clock is ahead files its admissions in
   * (skipping them would make that peer's admissions invisible here until this clock caught up).
   */
  private sum(buckets: Map<number, number> | undefined, nowMs: number): number {
    if (buckets === undefined) return 0;
    const from = this.windowStart(nowMs);
    let sum = 0;
    for (const [start, count] of buckets) if (start >= from) sum += count;
    return sum;
  }

  /** The estimated cluster count of `key` at `nowMs`: own plus every peer's last report (future buckets included). */
  estimate(key: string, nowMs: number): number {
    let total = this.sum(this.own.get(key), nowMs);
    for (const view of this.peers.values()) total += this.sum(view.get(key), nowMs);
    return total;
  }

  /**
   * The earliest time >= nowMs at which `cost` fits the estimate of `key` as counted buckets (this
   * node's and the peers' as heard) leave the window, if nothing else is admitted; when cost >
   * limit, when the counted buckets have all left.
   */
  fitTimeMs(key: string, limit: number, cost: number, nowMs: number): number {
    const from = this.windowStart(nowMs);
    const byStart = new Map<number, number>();
    const add = (buckets: Map<number, number> | undefined) => {
      if (buckets === undefined) return;
      for (const [start, count] of buckets) if (start >= from) byStart.set(start, (byStart.get(start) ?? 0) + count);
    };
    add(this.own.get(key));
    for (const view of this.peers.values()) add(view.get(key));
    let left = 0;
    for (const count of byStart.values()) left += count;
    if (left + cost <= limit) return nowMs;
    let atMs = nowMs;
    for (const start of [...byStart.keys()].sort((a, b) => a - b)) {
      left -= byStart.get(start)!;
      // A bucket is counted while start >= windowStart(t), i.e. until start + width + duration - 1.
      atMs = start + this.bucketWidthMs + this.durationMs - 1;
      if (left + cost <= limit) return atMs;
    }
    return atMs;
  }

  /** Admissions of `key` here that not every live peer has confirmed yet. */
  unconfirmedOf(key: string): number {
    const rounds = this.unconfirmed.get(key);
    if (rounds === undefined) return 0;
    let sum = 0;
    for (const cost of rounds.values()) sum += cost;
    return sum;
  }

  /**
   * Admits `cost` if the estimate leaves room for it and (when `share` is given) this node's
   * unconfirmed admissions of `key` stay within the share; counts it as this node's.
   */
  admit(
    key: string,
    limit: number,
    cost: number,
    nowMs: number,
    share?: AsyncUnconfirmed,
  ): { success: boolean; remaining: number } {
    assert(Number.isSafeInteger(cost) && cost >= 0, "async admit: cost >= 0");
    const estimate = this.estimate(key, nowMs);
    if (estimate + cost > limit) return { success: false, remaining: Math.max(0, limit - estimate) };
    if (share !== undefined && cost > 0) {
      const rounds = this.unconfirmed.get(key);
      if (rounds === undefined && this.unconfirmed.size >= asyncUnconfirmedKeysMax)
        return { success: false, remaining: Math.max(0, limit - estimate) };
      if (this.unconfirmedOf(key) + cost > share.shareMax)
        return { success: false, remaining: Math.max(0, limit - estimate) };
      if (rounds === undefined) this.unconfirmed.set(key, new Map([[share.round, cost]]));
      else rounds.set(share.round, (rounds.get(share.round) ?? 0) + cost);
    }
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

  /** Every live peer merged the reports of rounds up to `round`: those admissions are confirmed. */
  confirm(round: number): void {
    for (const [key, rounds] of this.unconfirmed) {
      for (const r of rounds.keys()) if (r <= round) rounds.delete(r);
      if (rounds.size === 0) this.unconfirmed.delete(key);
    }
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
   * This node's traffic weight for `key` in the epoch (bucket) starting at `epochStartMs`: its
   * admissions in the bucket two before, over everyone's in that bucket (itself and every peer in
   * `beats`, the live ones), or an equal split when nobody admitted. Undefined unless every live
   * peer's counts of that bucket are final here: it reported from a later bucket of its own clock
   * (it files admissions in its current bucket only) with that bucket inside its window. Every node
   * with final counts of a bucket computes its weight over a superset of the nodes that admit, so
   * the weights of one epoch sum to at most 1 over those nodes (docs/counters-proofs.md, Theorem 6).
   */
  trafficWeight(
    key: string,
    epochStartMs: number,
    nowMs: number,
    beats: ReadonlyMap<string, AsyncPeerBeat>,
  ): number | undefined {
    const bucketMs = epochStartMs - 2 * this.bucketWidthMs;
    if (bucketMs < this.windowStart(nowMs)) return undefined; // pruned here already
    let total = this.own.get(key)?.get(bucketMs) ?? 0;
    const own = total;
    for (const [peer, beat] of beats) {
      const peerBucketMs = Math.floor(beat.nowMs / this.bucketWidthMs) * this.bucketWidthMs;
      if (peerBucketMs <= bucketMs || this.windowStart(beat.nowMs) > bucketMs) return undefined;
      total += this.peers.get(peer)?.get(key)?.get(bucketMs) ?? 0;
    }
    return total === 0 ? 1 / (beats.size + 1) : own / total;
  }

  /** The bucket width of this estimator's window (an epoch of the traffic weights). */
  get epochMs(): number {
    return this.bucketWidthMs;
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

/**
 * The stated overshoot bound of an async limit: the most a window admits beyond `limit`, given
 * `admittedPerNodePerReconcile`, the most one node admits that the others have not heard of yet.
 * With the shares of AsyncLimits the whole overshoot is at most `asyncOvershootMax(limit, nodes)`.
 */
export function asyncOvershootBound(limit: number, nodes: number, admittedPerNodePerReconcile: number): number {
  return (nodes - 1) * Math.min(limit, admittedPerNodePerReconcile);
}
