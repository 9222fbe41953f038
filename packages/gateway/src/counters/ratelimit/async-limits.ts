// `async: true` limits in a cluster of several nodes: answered at once from this node's counts
// plus the last counts heard from every other node (AsyncLimitEstimator), which every node sends
// with its beat every reconcile period R. Bound (docs/counters.md, Theorem 5): in any window the
// cluster admits at most limit + (nodes - 1) * min(limit, a), a = what one node admits for the
// identifier in R ms. Counts are in memory only: a restarted node forgets its own (one more
// window of overshoot at most, its own admissions of that window).
import { assert, AsyncLimitEstimator, type SlidingWindowLimiter } from "@keyraft/core";
import type { AsyncCounts } from "./wire.js";

/**
 * Distinct window lengths with an estimator. Past it the least recently used length's estimator
 * is forgotten (its identifiers start again from the peers' next counts): a caller choosing many
 * windows costs itself accuracy, never other callers their limits.
 */
export const asyncDurationsMax = 1024;

export interface AsyncOutcome {
  success: boolean;
  limit: number;
  remaining: number;
  reset: number;
}

export class AsyncLimits {
  private readonly estimators = new Map<number, AsyncLimitEstimator>();
  admitted = 0;

  constructor(private readonly limiter: Pick<SlidingWindowLimiter, "bucketWidthMs">) {}

  private estimator(durationMs: number): AsyncLimitEstimator {
    let estimator = this.estimators.get(durationMs);
    if (estimator === undefined) {
      if (this.estimators.size >= asyncDurationsMax) this.estimators.delete(this.estimators.keys().next().value!);
      estimator = new AsyncLimitEstimator(durationMs, this.limiter.bucketWidthMs(durationMs));
    } else this.estimators.delete(durationMs); // re-inserted: the most recently used
    this.estimators.set(durationMs, estimator);
    assert(this.estimators.size <= asyncDurationsMax, "async limits: estimators within asyncDurationsMax");
    return estimator;
  }

  admit(key: string, limit: number, durationMs: number, cost: number, nowMs: number): AsyncOutcome {
    const widthMs = this.limiter.bucketWidthMs(durationMs);
    // When the oldest bucket counted now leaves the window: the earliest the estimate can fall.
    const reset = Math.floor((nowMs - durationMs + 1) / widthMs) * widthMs + widthMs + durationMs;
    const estimator = this.estimator(durationMs);
    const judged = estimator.admit(key, limit, cost, nowMs);
    if (judged.success && cost > 0) this.admitted += cost;
    return { success: judged.success, limit, remaining: judged.remaining, reset };
  }

  /** This node's live counts, for its next beat. */
  report(nowMs: number): AsyncCounts[] {
    const out: AsyncCounts[] = [];
    for (const [durationMs, estimator] of this.estimators) {
      const counts = estimator.report(nowMs);
      if (counts.length > 0) out.push({ durationMs, counts });
    }
    return out;
  }

  merge(peer: string, reports: readonly AsyncCounts[]): void {
    for (const report of reports) this.estimator(report.durationMs).merge(peer, report.counts);
  }

  prune(nowMs: number): void {
    for (const estimator of this.estimators.values()) estimator.prune(nowMs);
  }
}
