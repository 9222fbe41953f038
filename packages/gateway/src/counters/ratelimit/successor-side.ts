// The successor's side of the reservations (docs/counters.md §2): for each owner whose subjects
// rank this node second, it acknowledges reservations (made durable first, through the same
// reservation store as the node's own counts, so a restart restores them into the limiter), takes
// over when the owner is unreachable (a fence: no more acknowledgements to the old owner; the
// reserved counts restored into the limiter before it serves), and hands back when the owner
// asks, with every count it holds for the owner's subjects (its limiter's buckets: what it
// admitted while serving, and the reservations restored after a restart).
//
// A restart loses the generations (memory only) but never a count: a new boot id makes every
// acknowledgement of the earlier life unusable (the owner asks for a hand-back), and the counts
// come back from disk into the limiter, which is what a hand-back or a takeover serves from.
import {
  movedBuckets,
  rankNodes,
  SuccessorReservations,
  type ReservationBucket,
  type SlidingWindowLimiter,
  type BucketCount,
} from "@keyraft/core";
import type { Logger } from "pino";
import type { CounterDurability } from "../../store/types.js";
import { parseReservationKey, reservationKey, subjectOfLimiterKey } from "./subject.js";
import type { CounterReply, WireAsk, WireBucket } from "./wire.js";

/** Owners tracked (one per other member). */
export const successorOwnersMax = 64;
/** Buckets per hand-back message (a message holds at most 8 MiB); past it, each key's buckets are merged into its newest. */
export const handBackBucketsMax = 40_000;

interface OwnerState {
  reservations: SuccessorReservations;
  serving: boolean;
}

export interface SuccessorSideOptions {
  nodeId: string;
  boot: string;
  limiter: SlidingWindowLimiter;
  durability: CounterDurability;
  voters(): readonly string[];
  /** Every node this one has known as a voter (told to a node collecting counts). */
  knownNodes(): readonly string[];
  nowMs(): number;
  logger: Logger;
}

export class SuccessorSide {
  private readonly owners = new Map<string, OwnerState>();
  takeovers = 0;
  handBacks = 0;

  constructor(private readonly options: SuccessorSideOptions) {}

  private state(owner: string): OwnerState | null {
    let state = this.owners.get(owner);
    if (state === undefined) {
      if (this.owners.size >= successorOwnersMax) return null;
      state = { reservations: new SuccessorReservations(), serving: false };
      this.owners.set(owner, state);
    }
    return state;
  }

  isServing(owner: string): boolean {
    return this.owners.get(owner)?.serving === true;
  }

  /** Acknowledges the asks it accepts, once they are durable; null for each refused one. */
  async accept(owner: string, boot: string, asks: readonly WireAsk[]): Promise<CounterReply> {
    const state = this.state(owner);
    if (state === null || boot !== this.options.boot) return { t: "reserve", acks: asks.map(() => null) };
    const acks: (WireAsk | null)[] = [];
    const durable: BucketCount[] = [];
    const voters = this.options.voters();
    const nowMs = this.options.nowMs();
    const ranks = new Map<string, boolean>();
    for (const ask of asks) {
      const parsed = parseReservationKey(ask.key);
      const ack =
        parsed === null ||
        !this.ranksAsker(owner, parsed.limiterKey, voters, ranks) ||
        this.inFuture(ask, parsed, nowMs)
          ? null
          : state.reservations.accept(ask);
      acks.push(ack);
      if (ack !== null && parsed !== null) {
        durable.push({
          key: parsed.limiterKey,
          limit: ack.limit,
          durationMs: parsed.durationMs,
          bucketStartMs: ack.bucketStartMs,
          count: ack.count,
        });
      }
    }
    const written = durable.length === 0 ? null : this.options.durability.cover(durable);
    if (written !== null) await written;
    return { t: "reserve", acks };
  }

  /**
   * Whether `owner` ranks first and this node second for the limiter key's subject among the
   * voters as this node applied them. A node removed from the voters (that never applied its
   * removal) or an owner whose subjects moved keeps asking: acknowledging it would let it admit
   * a second limit next to the subject's new owner in every window.
   */
  private ranksAsker(
    owner: string,
    limiterKey: string,
    voters: readonly string[],
    cache: Map<string, boolean>,
  ): boolean {
    const subject = subjectOfLimiterKey(limiterKey);
    if (subject === null) return false;
    let ok = cache.get(subject);
    if (ok === undefined) {
      const ranked = rankNodes(subject, voters);
      ok = ranked[0] === owner && ranked[1] === this.options.nodeId;
      cache.set(subject, ok);
    }
    return ok;
  }

  /**
   * A reservation for a bucket that starts more than one bucket width after this node's now: the
   * owner's clock is ahead by more than the clocks may differ (docs/counters.md). Accepting it
   * would move this node's limiter clock forward at a takeover, dropping the current window of
   * every subject it judges; the owner gets no acknowledgement and answers 503 (fail closed).
   */
  private inFuture(ask: WireAsk, parsed: { durationMs: number }, nowMs: number): boolean {
    return ask.bucketStartMs > nowMs + this.options.limiter.bucketWidthMs(parsed.durationMs);
  }

  /**
   * The voters changed: an owner that is no longer one is taken over, so the counts reserved for
   * its subjects (which now rank this node first: rendezvous moves a removed node's subjects to
   * their second choice) are in this node's limiter before it judges them. A removed owner that
   * never applied its removal gets no more acknowledgements (ranksAsker).
   */
  votersChanged(voters: readonly string[]): void {
    for (const owner of [...this.owners.keys()]) if (!voters.includes(owner)) this.takeOver(owner);
  }

  /** The owner is unreachable: fence it and serve its subjects from at least every reserved count. */
  takeOver(owner: string): boolean {
    const state = this.state(owner);
    if (state === null) return false;
    if (state.serving) return true;
    // Never its successor yet (a node just added, or restarted): the counts are not here; 503
    // rather than serve from nothing.
    if (!state.reservations.handedBack()) return false;
    const { limiter } = this.options;
    const nowMs = this.options.nowMs();
    const width = (bucket: ReservationBucket) =>
      limiter.bucketWidthMs(parseReservationKey(bucket.key)?.durationMs ?? 1);
    // Filed on the owner's clock: one bucket later here (clocks apart by less than a bucket).
    for (const bucket of movedBuckets(state.reservations.takeOver(), width, nowMs)) {
      const parsed = parseReservationKey(bucket.key);
      if (parsed === null) continue;
      limiter.restoreMovedBucket({
        key: parsed.limiterKey,
        limit: bucket.limit,
        durationMs: parsed.durationMs,
        bucketStartMs: bucket.bucketStartMs,
        count: bucket.count,
      });
    }
    state.serving = true;
    this.takeovers++;
    this.options.logger.warn(
      { owner },
      "rate limits: owner unreachable; this node (its successor) takes its limits over",
    );
    return true;
  }

  /** Drops reservations of buckets that left every window (one width plus one window after their start). */
  prune(nowMs: number): void {
    const { limiter } = this.options;
    for (const state of this.owners.values()) {
      state.reservations.prune((bucket) => {
        const parsed = parseReservationKey(bucket.key);
        if (parsed === null) return true;
        return bucket.bucketStartMs + limiter.bucketWidthMs(parsed.durationMs) + parsed.durationMs <= nowMs;
      });
    }
  }

  /**
   * Every count this node's limiter holds of subjects that rank `asker` first over `askerVoters`,
   * whatever this node's own voters: after two membership changes in quick succession the counts
   * of a subject may sit on a node that is no longer its owner or successor (one that took them
   * over, or had them handed back, and was replaced before it handed them on). Read-only.
   */
  countsFor(asker: string, askerVoters: readonly string[]): CounterReply {
    const buckets: WireBucket[] = [];
    for (const bucket of this.options.limiter.snapshot(this.options.nowMs())) {
      const subject = subjectOfLimiterKey(bucket.key);
      if (subject === null || rankNodes(subject, askerVoters)[0] !== asker) continue;
      buckets.push({
        key: reservationKey(bucket.durationMs, bucket.key),
        limit: bucket.limit,
        bucketStartMs: bucket.bucketStartMs,
        count: bucket.count,
      });
    }
    const nodes = [...this.options.knownNodes()];
    return { t: "collect", buckets: buckets.length > handBackBucketsMax ? mergePerKey(buckets) : buckets, nodes };
  }

  /** The owner asks to serve again (it is back or just started): stop serving and hand every count of its subjects back. */
  handBack(owner: string, ownerVoters?: readonly string[]): CounterReply {
    const state = this.state(owner);
    if (state === null) return { t: "refused", message: "too many owners" };
    const { limiter, nodeId } = this.options;
    const voters = this.options.voters();
    // Placed over different voters, the two would not agree on which subjects move (docs/counters.md,
    // membership changes): refuse until both applied the same set; the owner answers 503 meanwhile.
    if (ownerVoters !== undefined && !sameVoters(ownerVoters, voters))
      return { t: "refused", message: `voters differ (${owner}: ${ownerVoters.join(",")}; here: ${voters.join(",")})` };
    const served = [];
    for (const bucket of limiter.snapshot(this.options.nowMs())) {
      const subject = subjectOfLimiterKey(bucket.key);
      if (subject === null) continue;
      const ranked = rankNodes(subject, voters);
      if (ranked[0] !== owner || ranked[1] !== nodeId) continue;
      served.push({
        key: reservationKey(bucket.durationMs, bucket.key),
        limit: bucket.limit,
        bucketStartMs: bucket.bucketStartMs,
        count: bucket.count,
      });
    }
    const wasServing = state.serving;
    state.serving = false;
    const handBack = state.reservations.handBack(served, wasServing);
    this.handBacks++;
    this.options.logger.info(
      { owner, generation: handBack.generation, buckets: handBack.buckets.length, wasServing },
      "rate limits: handing limits back to their owner",
    );
    const buckets = handBack.buckets.length > handBackBucketsMax ? mergePerKey(handBack.buckets) : handBack.buckets;
    const nodes = [...this.options.knownNodes()];
    return { t: "handBack", boot: this.options.boot, generation: handBack.generation, buckets, nodes };
  }
}

/**
 * One bucket per key: the sum of its buckets, at the newest one's start. Conservative: every
 * count is kept, and counts moved to a later bucket leave the window later (under-admission only).
 */
export function mergePerKey(buckets: readonly ReservationBucket[]): ReservationBucket[] {
  const merged = new Map<string, ReservationBucket>();
  for (const bucket of buckets) {
    const held = merged.get(bucket.key);
    if (held === undefined) merged.set(bucket.key, { ...bucket });
    else {
      held.count += bucket.count;
      held.bucketStartMs = Math.max(held.bucketStartMs, bucket.bucketStartMs);
      held.limit = Math.max(held.limit, bucket.limit);
    }
  }
  return [...merged.values()];
}

function sameVoters(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  const sorted = [...b].sort();
  return [...a].sort().every((id, i) => id === sorted[i]);
}
