// `async: true` limits in a cluster of several nodes: answered at once from this node's counts
// plus the last counts heard from every other node (AsyncLimitEstimator), which every node sends
// with its beat every reconcile period R. Each beat is a round: a peer's reply to it confirms it
// merged that round's counts, and a node keeps at most its unconfirmed share of a limit admitted
// and not confirmed by every live peer. Bound (docs/counters.md, Theorem 5): in any window the
// cluster admits at most limit + (nodes - 1) * asyncUnconfirmedShare(limit, nodes), at most a
// tenth over (nodes - 1 for a limit below 10 * (nodes - 1)), whatever the traffic's shape.
// Counts are in memory only: a restarted node forgets its own (one more window of overshoot at
// most, its own admissions of that window).
import { assert, AsyncLimitEstimator, asyncUnconfirmedShare, type SlidingWindowLimiter } from "@keyraft/core";
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
  /** Refused only because this node's unconfirmed share was used up (status). */
  refusedUnconfirmed = 0;
  /** The round admissions made now travel in (sealed by `report`). */
  private round = 1;
  /** peer -> the highest round it confirmed (its reply to that beat). */
  private readonly confirmedBy = new Map<string, number>();

  /**
   * `confirmEveryMs`: about how long until the next beat confirms this node's admissions (the
   * reconcile period), the `reset` of a refusal due to the share alone.
   */
  constructor(
    private readonly limiter: Pick<SlidingWindowLimiter, "bucketWidthMs">,
    private readonly confirmEveryMs = 0,
  ) {}

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

  /** `nodes`: the voters; more than one caps this node's unconfirmed admissions (asyncUnconfirmedShare). */
  /**
   * `reset`: when the next request of this cost would be admitted as this node knows the counts
   * (now when there is room; when enough counted buckets leave the window; a beat period later when
   * only this node's unconfirmed share stands in the way).
   */
  admit(key: string, limit: number, durationMs: number, cost: number, nowMs: number, nodes = 1): AsyncOutcome {
    const estimator = this.estimator(durationMs);
    const shareMax = nodes <= 1 ? Number.POSITIVE_INFINITY : asyncUnconfirmedShare(limit, nodes);
    const share = nodes <= 1 ? undefined : { round: this.round, shareMax };
    const judged = estimator.admit(key, limit, cost, nowMs, share);
    if (judged.success && cost > 0) this.admitted += cost;
    const shareFull = estimator.unconfirmedOf(key) + cost > shareMax;
    if (!judged.success && judged.remaining >= cost) this.refusedUnconfirmed++;
    const fitsMs = estimator.fitTimeMs(key, limit, cost, nowMs);
    const reset = fitsMs === nowMs && shareFull ? nowMs + this.confirmEveryMs : fitsMs;
    return { success: judged.success, limit, remaining: judged.remaining, reset };
  }

  /**
   * This node's live counts, for its next beat, and the round they close: every admission made
   * before this call is in them; later ones travel in the next round.
   */
  report(nowMs: number): { round: number; reports: AsyncCounts[] } {
    const out: AsyncCounts[] = [];
    for (const [durationMs, estimator] of this.estimators) {
      const counts = estimator.report(nowMs);
      if (counts.length > 0) out.push({ durationMs, counts });
    }
    const round = this.round;
    this.round++;
    return { round, reports: out };
  }

  /** `peer` replied to the beat of `round`: it merged every count of that round and before. */
  confirmedByPeer(peer: string, round: number): void {
    this.confirmedBy.set(peer, Math.max(this.confirmedBy.get(peer) ?? 0, round));
  }

  /**
   * Confirms the rounds every peer in `livePeers` has merged (peers taken for down are left out:
   * a dead node admits nothing; a cut-off one is the partition case of docs/counters.md).
   */
  confirmLive(livePeers: readonly string[]): void {
    let round = this.round - 1;
    for (const peer of livePeers) round = Math.min(round, this.confirmedBy.get(peer) ?? 0);
    for (const estimator of this.estimators.values()) estimator.confirm(round);
  }

  merge(peer: string, reports: readonly AsyncCounts[]): void {
    for (const report of reports) this.estimator(report.durationMs).merge(peer, report.counts);
  }

  prune(nowMs: number): void {
    for (const estimator of this.estimators.values()) estimator.prune(nowMs);
  }
}
