// `async: true` limits of one node in a cluster: answered at once from this node's counts plus the
// last counts heard from every other node (AsyncLimitEstimator), which every node sends with its
// beat every reconcile period R. Each beat is a round: a peer's reply to it confirms it merged that
// round's counts, and a node keeps at most its share of a limit admitted and not confirmed by every
// live peer. The share is a floor plus a part that follows the nodes' recent traffic
// (async-shares.ts); a beat also carries the sender's clock (its counts of earlier buckets are
// final) and the time of its oldest unconfirmed admission, which the traffic weights need. Bound
// (docs/counters.md, Theorem 6): in any window the cluster admits at most
// limit + asyncOvershootMax(limit, nodes), at most a tenth over (nodes - 1 for a limit below
// 10 * (nodes - 1)), whatever the traffic's shape. Pure: the caller passes the time, the voters and
// the peers taken for up. Counts are in memory only: a restarted node forgets its own (one more
// window of overshoot at most, its own admissions of that window).
import { assert } from "../assert.js";
import type { SlidingWindowLimiter } from "../ratelimit/sliding-window.js";
import { AsyncLimitEstimator, type AsyncBucketCount, type AsyncPeerBeat } from "./async-estimator.js";
import { asyncShareFloor, asyncWeightedBudget } from "./async-shares.js";

/**
 * Distinct window lengths with an estimator. Past it the least recently used length's estimator
 * is forgotten (its identifiers start again from the peers' next counts): a caller choosing many
 * windows costs itself accuracy, never other callers their limits.
 */
export const asyncDurationsMax = 1024;

/**
 * Beat rounds with admissions not yet confirmed by every live peer. A peer that stops replying is
 * taken for down after the suspect time, which confirms its rounds; past this many an admission
 * that would open a new round is refused (fail closed).
 */
export const asyncRoundsUnconfirmedMax = 100_000;

export interface AsyncCounts {
  durationMs: number;
  counts: AsyncBucketCount[];
}

/** One beat's async part: the counts, and what the traffic weights need of the sender. */
export interface AsyncReport extends AsyncPeerBeat {
  round: number;
  reports: AsyncCounts[];
}

export interface AsyncOutcome {
  success: boolean;
  limit: number;
  remaining: number;
  reset: number;
}

/** Test-only switches that break Theorem 6 on purpose (mutation checks). */
export interface AsyncLimitsMutations {
  /** Weighted shares without waiting for the peers' older admissions to be confirmed. */
  skipConfirmedGuard?: boolean;
  /** The weight of the current epoch alone (not the lower of two consecutive ones). */
  singleEpochWeight?: boolean;
}

export class AsyncLimits {
  private readonly estimators = new Map<number, AsyncLimitEstimator>();
  admitted = 0;
  /** Refused only because this node's unconfirmed share was used up (status). */
  refusedUnconfirmed = 0;
  /** Admitted beyond the floor share, on the weighted part that follows the traffic (status). */
  admittedBeyondFloor = 0;
  /** The round admissions made now travel in (sealed by `report`). */
  private round = 1;
  /** peer -> the highest round it confirmed (its reply to that beat). */
  private readonly confirmedBy = new Map<string, number>();
  /** Rounds with admissions not confirmed by every live peer -> this clock at their first admission (rounds ascending). */
  private readonly unconfirmedRounds = new Map<number, number>();
  /** peer -> the highest clock and oldest-unconfirmed time it beat with. */
  private readonly peerBeats = new Map<string, AsyncPeerBeat>();
  /** The peers taken for up at the last confirmation. */
  private live: readonly string[] = [];
  /** What each of them beat; null until the first confirmation or while one has not beat with a clock. */
  private liveBeats: ReadonlyMap<string, AsyncPeerBeat> | null = null;
  /** This node's clock as the estimators see it: never backwards (a bucket once left is never filed in again). */
  private clockMs = Number.NEGATIVE_INFINITY;

  /**
   * `confirmEveryMs`: about how long until the next beat confirms this node's admissions (the
   * reconcile period), the `reset` of a refusal due to the share alone.
   */
  constructor(
    private readonly limiter: Pick<SlidingWindowLimiter, "bucketWidthMs">,
    private readonly confirmEveryMs = 0,
    private readonly mutations: AsyncLimitsMutations = {},
  ) {}

  private clock(nowMs: number): number {
    this.clockMs = Math.max(this.clockMs, nowMs);
    return this.clockMs;
  }

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

  /**
   * The weighted part of this node's share of `key` now: the weighted budget times the lower of
   * its traffic weights of this epoch and the one before; 0 unless every live peer beat with final
   * counts of the buckets they are computed from and has had every admission it made before the
   * previous epoch confirmed (then the shares in use of all nodes come from two consecutive epochs,
   * whose weights sum to at most 1: docs/counters-proofs.md, Theorem 6).
   */
  private weightedShare(
    estimator: AsyncLimitEstimator,
    key: string,
    limit: number,
    nodes: number,
    nowMs: number,
  ): number {
    const budget = asyncWeightedBudget(limit, nodes);
    const beats = this.liveBeats;
    if (budget <= 0 || beats === null) return 0;
    const epochMs = estimator.epochMs;
    const epochStartMs = Math.floor(nowMs / epochMs) * epochMs;
    if (this.mutations.skipConfirmedGuard !== true)
      for (const beat of beats.values()) if (beat.unconfirmedSinceMs < epochStartMs - epochMs) return 0;
    const now = estimator.trafficWeight(key, epochStartMs, nowMs, beats);
    if (now === undefined) return 0;
    if (this.mutations.singleEpochWeight === true) return budget * now;
    const before = estimator.trafficWeight(key, epochStartMs - epochMs, nowMs, beats);
    return before === undefined ? 0 : budget * Math.min(now, before);
  }

  /**
   * `nodes`: the voters; more than one caps this node's unconfirmed admissions (its share).
   * `reset`: when the next request of this cost would be admitted as this node knows the counts
   * (now when there is room; when enough counted buckets leave the window; a beat period later when
   * only this node's unconfirmed share stands in the way).
   */
  admit(key: string, limit: number, durationMs: number, cost: number, atMs: number, nodes = 1): AsyncOutcome {
    const nowMs = this.clock(atMs);
    const estimator = this.estimator(durationMs);
    let share: { round: number; shareMax: number } | undefined;
    let floor = Number.POSITIVE_INFINITY;
    let shareMax = floor;
    const unconfirmed = nodes > 1 ? estimator.unconfirmedOf(key) : 0;
    if (nodes > 1) {
      floor = asyncShareFloor(limit, nodes);
      shareMax = unconfirmed + cost > floor ? floor + this.weightedShare(estimator, key, limit, nodes, nowMs) : floor;
      share = { round: this.round, shareMax };
    }
    const opensRound = share !== undefined && cost > 0 && !this.unconfirmedRounds.has(this.round);
    const full = opensRound && this.unconfirmedRounds.size >= asyncRoundsUnconfirmedMax;
    const judged = full ? { success: false, remaining: 0 } : estimator.admit(key, limit, cost, nowMs, share);
    const admitted = judged.success && cost > 0;
    if (admitted) {
      this.admitted += cost;
      if (unconfirmed + cost > floor) this.admittedBeyondFloor += cost;
      if (opensRound) this.unconfirmedRounds.set(this.round, nowMs);
    }
    const shareFull = (admitted && share !== undefined ? unconfirmed + cost : unconfirmed) + cost > shareMax;
    if (!judged.success && judged.remaining >= cost) this.refusedUnconfirmed++;
    const fitsMs = estimator.fitTimeMs(key, limit, cost, nowMs);
    const reset = fitsMs === nowMs && shareFull ? nowMs + this.confirmEveryMs : fitsMs;
    return { success: judged.success, limit, remaining: judged.remaining, reset };
  }

  /**
   * This node's live counts, for its next beat, and the round they close: every admission made
   * before this call is in them; later ones travel in the next round. `nowMs` is this node's clock
   * (its counts of buckets before it are final) and `unconfirmedSinceMs` the time of its oldest
   * admission not yet confirmed (every later unconfirmed admission is at or after it).
   */
  report(atMs: number): AsyncReport {
    const nowMs = this.clock(atMs);
    const out: AsyncCounts[] = [];
    for (const [durationMs, estimator] of this.estimators) {
      const counts = estimator.report(nowMs);
      if (counts.length > 0) out.push({ durationMs, counts });
    }
    const round = this.round;
    this.round++;
    let unconfirmedSinceMs = nowMs;
    for (const firstMs of this.unconfirmedRounds.values()) {
      unconfirmedSinceMs = Math.min(unconfirmedSinceMs, firstMs);
      break; // rounds ascending, and so their first admissions
    }
    return { round, reports: out, nowMs, unconfirmedSinceMs };
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
    for (const r of this.unconfirmedRounds.keys()) {
      if (r > round) break;
      this.unconfirmedRounds.delete(r);
    }
    this.live = [...livePeers];
    this.refreshLiveBeats();
  }

  private refreshLiveBeats(): void {
    const beats = new Map<string, AsyncPeerBeat>();
    for (const peer of this.live) {
      const beat = this.peerBeats.get(peer);
      if (beat === undefined) {
        // A live peer never heard with a clock: its counts are not known final, no weights.
        this.liveBeats = null;
        return;
      }
      beats.set(peer, beat);
    }
    this.liveBeats = beats;
  }

  /** A peer's beat: its counts, then (when it sent them) its clock and oldest unconfirmed time. */
  merge(peer: string, reports: readonly AsyncCounts[], beat?: AsyncPeerBeat): void {
    for (const report of reports) this.estimator(report.durationMs).merge(peer, report.counts);
    if (beat === undefined) return;
    const known = this.peerBeats.get(peer);
    this.peerBeats.set(peer, {
      nowMs: Math.max(known?.nowMs ?? Number.NEGATIVE_INFINITY, beat.nowMs),
      unconfirmedSinceMs: Math.max(known?.unconfirmedSinceMs ?? Number.NEGATIVE_INFINITY, beat.unconfirmedSinceMs),
    });
    if (this.live.includes(peer)) this.refreshLiveBeats();
  }

  prune(atMs: number): void {
    const nowMs = this.clock(atMs);
    for (const estimator of this.estimators.values()) estimator.prune(nowMs);
  }
}
