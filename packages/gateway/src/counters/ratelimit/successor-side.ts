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
// come back from disk into the limiter, which is what a hand-back or a takeover serves from. Each
// owner's reservations and each sender's copies are their own disk records (reservationHolder,
// copyHolder), and a restart restores their sum: one record per bucket keeping the higher count
// would restore fewer admissions than the node held when the two counted different ones.
import {
  movedBuckets,
  rankNodes,
  SuccessorReservations,
  type ReservationBucket,
  type SlidingWindowLimiter,
  type BucketCount,
} from "@keyraft/core";
import type { Logger } from "pino";
import type { CounterDurability, DurabilityBucket } from "../../store/types.js";
import { parseReservationKey, reservationKey, subjectOfLimiterKey } from "./subject.js";
import type { CounterReply, WireAsk, WireBucket } from "./wire.js";

/** Owners tracked (one per other member). */
export const successorOwnersMax = 64;
/** Buckets per hand-back message (a message holds at most 8 MiB); past it, each key's buckets are merged into its newest. */
export const handBackBucketsMax = 40_000;

/** Copies of serving successors' admissions kept here (buckets); past it new ones are refused (the sender answers 503). */
export const copyBucketsMax = 100_000;

/** A copy kept for `from` (a successor serving after a takeover): `bucket.key` is a reservation key. */
interface Copy {
  from: string;
  bucket: WireBucket;
}

interface OwnerState {
  reservations: SuccessorReservations;
  serving: boolean;
  /**
   * Its reservations were restored into the limiter (a takeover) and nothing was acknowledged
   * since: the limiter's buckets are the whole count (the next hand-back gives them alone).
   */
  restored: boolean;
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
  /** By sender, reservation key and bucket start. */
  private readonly copies = new Map<string, Copy>();
  /** Per owner taken over: the counts restored at the takeover, until a copy of them is kept elsewhere. */
  private readonly uncopied = new Map<string, BucketCount[]>();
  takeovers = 0;
  handBacks = 0;

  constructor(private readonly options: SuccessorSideOptions) {}

  private state(owner: string): OwnerState | null {
    let state = this.owners.get(owner);
    if (state === undefined) {
      if (this.owners.size >= successorOwnersMax) return null;
      state = { reservations: new SuccessorReservations(), serving: false, restored: false };
      this.owners.set(owner, state);
    }
    return state;
  }

  isServing(owner: string): boolean {
    return this.owners.get(owner)?.serving === true;
  }

  /** Acknowledges the asks it accepts, once they are durable; null for each refused one. */
  async accept(owner: string, boot: string, asks: readonly WireAsk[], covered?: number): Promise<CounterReply> {
    const state = this.state(owner);
    if (state === null || boot !== this.options.boot) return { t: "reserve", acks: asks.map(() => null) };
    // Marked before this message's asks are durable: a takeover needs a later step anyway, and
    // the asks marked here (the held counts were acknowledged before `covered` was sent) are.
    if (covered !== undefined) state.reservations.ownerCovered(covered);
    const acks: (WireAsk | null)[] = [];
    const durable: DurabilityBucket[] = [];
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
          holder: reservationHolder(owner),
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
    for (const [owner, state] of this.owners) {
      // A removed owner's reservations go into the limiter whatever their age (takeOver's
      // `removed`): they only add counts, and the subjects' next owner finds them there.
      if (!voters.includes(owner)) this.takeOver(owner, true);
      // Every pair may have been apart: an owner whose subjects ranked another node second for a
      // while had its admissions covered there, or judged by another node, not here. Serving on,
      // or a later takeover from what is reserved here, would miss them (a successor of an owner
      // that is removed and added back, or replaced by a node added and removed again). So this
      // node stops serving, and takes over again only after the owner's next hand-back (after
      // which the owner covers here every count it holds).
      if (state.serving) {
        state.serving = false;
        state.restored = true;
      }
      state.reservations.requireHandBack();
    }
  }

  /** Keeps copies of a serving successor's admissions (copy-side.ts), durably, before confirming them. */
  async keepCopies(
    from: string,
    buckets: readonly WireBucket[],
    senderVoters: readonly string[],
  ): Promise<CounterReply> {
    // A sender placing subjects over other voters (one of the two lags a membership change) may be
    // serving subjects another node now judges: no copy, so it answers 503 until both agree.
    const voters = this.options.voters();
    if (!sameVoters(senderVoters, voters))
      return { t: "refused", message: `voters differ (${from}: ${senderVoters.join(",")}; here: ${voters.join(",")})` };
    const counts: number[] = [];
    const durable: DurabilityBucket[] = [];
    for (const bucket of buckets) {
      const parsed = parseReservationKey(bucket.key);
      if (parsed === null) return { t: "refused", message: `not a reservation key: ${JSON.stringify(bucket.key)}` };
      const id = `${from}\u0000${bucket.key}\u0000${bucket.bucketStartMs}`;
      const held = this.copies.get(id);
      if (held === undefined && this.copies.size >= copyBucketsMax)
        return { t: "refused", message: "too many copies held" };
      const count = Math.max(held?.bucket.count ?? 0, bucket.count);
      this.copies.set(id, {
        from,
        bucket: { key: bucket.key, limit: bucket.limit, bucketStartMs: bucket.bucketStartMs, count },
      });
      counts.push(count);
      durable.push({
        key: parsed.limiterKey,
        limit: bucket.limit,
        durationMs: parsed.durationMs,
        bucketStartMs: bucket.bucketStartMs,
        count,
        holder: copyHolder(from),
      });
    }
    const written = durable.length === 0 ? null : this.options.durability.cover(durable);
    if (written !== null) await written;
    return { t: "copy", counts };
  }

  /**
   * The counts held here outside the limiter, of subjects `keep` accepts: copies kept for a
   * serving successor, and what is reserved for owners this node does not serve, but never what
   * `asker` sent (it holds those itself). After membership changes they may be the only trace of
   * another node's admissions (its successor of the time, the owner being gone).
   */
  private heldFor(asker: string, keep: (subject: string) => boolean): WireBucket[] {
    const buckets: WireBucket[] = [];
    const add = (bucket: WireBucket): void => {
      const parsed = parseReservationKey(bucket.key);
      const subject = parsed === null ? null : subjectOfLimiterKey(parsed.limiterKey);
      if (subject !== null && keep(subject))
        buckets.push({
          key: bucket.key,
          limit: bucket.limit,
          bucketStartMs: bucket.bucketStartMs,
          count: bucket.count,
        });
    };
    for (const copy of this.copies.values()) if (copy.from !== asker) add(copy.bucket);
    for (const [owner, state] of this.owners)
      if (owner !== asker && !state.serving) for (const bucket of state.reservations.held()) add(bucket);
    return buckets;
  }

  /** The owner is unreachable: fence it and serve its subjects from at least every reserved count. */
  takeOver(owner: string, removed = false): boolean {
    const state = this.state(owner);
    if (state === null) return false;
    if (state.serving) return true;
    // Never its successor yet (a node just added, or restarted), or not since the voters changed:
    // the counts are not all here; 503 rather than serve from too little.
    if (!state.reservations.handedBack() && !removed) return false;
    // Restored already, and fenced since (nothing acknowledged): restoring again would only add them twice.
    if (state.restored && state.reservations.isFenced()) {
      state.serving = true;
      return true;
    }
    const { limiter } = this.options;
    const nowMs = this.options.nowMs();
    const width = (bucket: ReservationBucket) =>
      limiter.bucketWidthMs(parseReservationKey(bucket.key)?.durationMs ?? 1);
    // Filed on the owner's clock: one bucket later here (clocks apart by less than a bucket).
    const restored: BucketCount[] = [];
    for (const bucket of movedBuckets(state.reservations.takeOver(), width, nowMs)) {
      const parsed = parseReservationKey(bucket.key);
      if (parsed === null) continue;
      const count: BucketCount = {
        key: parsed.limiterKey,
        limit: bucket.limit,
        durationMs: parsed.durationMs,
        bucketStartMs: bucket.bucketStartMs,
        count: bucket.count,
      };
      limiter.restoreMovedBucket(count);
      restored.push(count);
    }
    // Held here and by the owner, which may never come back (removed for good): copied elsewhere
    // before this node serves (cluster-limits.ts), as its own admissions are.
    if (!removed && restored.length > 0) this.uncopied.set(owner, restored);
    state.serving = true;
    state.restored = true;
    this.takeovers++;
    this.options.logger.warn(
      { owner },
      "rate limits: owner unreachable; this node (its successor) takes its limits over",
    );
    return true;
  }

  /** The counts restored when `owner` was taken over that no other node keeps a copy of yet. */
  uncopiedOf(owner: string): readonly BucketCount[] {
    return this.uncopied.get(owner) ?? [];
  }

  /** A copy of them is kept elsewhere now. */
  copied(owner: string, buckets: readonly BucketCount[]): void {
    if (this.uncopied.get(owner) === buckets) this.uncopied.delete(owner);
  }

  /** Drops reservations of buckets that left every window (one width plus one window after their start). */
  prune(nowMs: number): void {
    const { limiter } = this.options;
    for (const [id, copy] of this.copies) {
      const parsed = parseReservationKey(copy.bucket.key);
      if (
        parsed === null ||
        copy.bucket.bucketStartMs + limiter.bucketWidthMs(parsed.durationMs) + parsed.durationMs <= nowMs
      )
        this.copies.delete(id);
    }
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
    buckets.push(...this.heldFor(asker, (subject) => rankNodes(subject, askerVoters)[0] === asker));
    const nodes = [...this.options.knownNodes()];
    return {
      t: "collect",
      buckets: buckets.length > handBackBucketsMax ? mergePerKey(buckets) : buckets,
      nodes,
      sameVoters: sameVoters(askerVoters, this.options.voters()),
    };
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
    const wasServing = state.serving || state.restored;
    state.serving = false;
    state.restored = false;
    this.uncopied.delete(owner);
    const handBack = state.reservations.handBack(served, wasServing);
    this.handBacks++;
    this.options.logger.info(
      { owner, generation: handBack.generation, buckets: handBack.buckets.length, wasServing },
      "rate limits: handing limits back to their owner",
    );
    // Copies of what a serving successor admitted and reservations of other owners (either may be
    // gone): added, never merged with this owner's reservations (they count other admissions; the
    // owner sums what lands in one bucket).
    const all = [
      ...handBack.buckets,
      ...this.heldFor(owner, (subject) => {
        const ranked = rankNodes(subject, voters);
        return ranked[0] === owner && ranked[1] === nodeId;
      }),
    ];
    const buckets = all.length > handBackBucketsMax ? mergePerKey(all) : all;
    const nodes = [...this.options.knownNodes()];
    return { t: "handBack", boot: this.options.boot, generation: handBack.generation, buckets, nodes };
  }
}

/**
 * The disk record a reservation acknowledged to `owner` is kept in: its own, apart from copies and
 * other owners' reservations of the same bucket (they may count other admissions; a restart
 * restores their sum, store/counter-durability.ts).
 */
export function reservationHolder(owner: string): string {
  return `reservation:${owner}`;
}

/** The disk record a copy kept for the serving successor `from` is kept in (as reservationHolder). */
export function copyHolder(from: string): string {
  return `copy:${from}`;
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
