// Handover-safe rate-limit counts for `async: false` limits (docs/counters.md). The owner of an
// identifier admits only up to a reservation that its successor (the next node in rendezvous
// rank) has acknowledged; the successor takes over with counts >= everything the owner admitted.
// Generations fence stale owners: the successor acknowledges only asks of its current generation,
// a takeover and every hand-back start a new one, and an owner gets a generation only from a
// hand-back, after restoring the counts it carries. So an owner that was taken over (or restarted
// and lost its counts) cannot be covered again until it has restored every count admitted since.
// Reservations are per (limiter key, bucket) like the disk reservations of the single node
// (packages/gateway/src/store/counter-durability.ts), and grow in chunks of ceil(limit / 8).
import { assert } from "../assert.js";

/** Reservations tracked per side; past it, new buckets are refused (fail closed). */
export const reservationBucketsMax = 1_000_000;
export const reservationChunkDivisor = 8;

export interface ReservationBucket {
  key: string;
  limit: number;
  bucketStartMs: number;
  /** For the owner: admitted count; in a request/ack: the reservation. */
  count: number;
}

function bucketId(key: string, bucketStartMs: number): string {
  return `${key}\u0000${bucketStartMs}`;
}

/** The reservation to ask for when `count` is not covered: count plus a chunk, capped at the limit. */
export function nextReservation(count: number, limit: number): number {
  const chunk = Math.max(1, Math.ceil(limit / reservationChunkDivisor));
  return Math.max(count, Math.min(limit, count + chunk));
}

/** A reservation asked or acknowledged in a generation of the owner/successor pair. */
export interface ReservationAsk extends ReservationBucket {
  generation: number;
}

/** What a hand-back gives the owner: the counts to restore, and the generation to serve in. */
export interface HandBack {
  generation: number;
  buckets: ReservationBucket[];
}

/** The owner's side: which admissions are covered by an acknowledged reservation. */
export class OwnerReservations {
  private readonly acked = new Map<string, number>();
  private readonly asked = new Map<string, number>();

  /** `generation` comes from the hand-back whose buckets the owner restored before serving. */
  constructor(readonly generation: number) {
    assert(Number.isSafeInteger(generation) && generation >= 1, "owner reservations: a generation from a hand-back");
  }

  /** Whether an admission bringing the bucket to `countAfter` may be answered now. */
  covered(key: string, bucketStartMs: number, countAfter: number): boolean {
    return (this.acked.get(bucketId(key, bucketStartMs)) ?? 0) >= countAfter;
  }

  /** The reservation to send to the successor for this bucket, or null if one big enough is in flight. */
  request(bucket: ReservationBucket): ReservationAsk | null {
    const id = bucketId(bucket.key, bucket.bucketStartMs);
    const want = nextReservation(bucket.count, bucket.limit);
    if ((this.asked.get(id) ?? 0) >= bucket.count && (this.asked.get(id) ?? 0) >= want) return null;
    if (!this.asked.has(id) && this.asked.size >= reservationBucketsMax) return null;
    this.asked.set(id, want);
    return { ...bucket, count: want, generation: this.generation };
  }

  onAck(ack: ReservationAsk): void {
    if (ack.generation !== this.generation) return; // an acknowledgement of an earlier life
    const id = bucketId(ack.key, ack.bucketStartMs);
    if (!this.acked.has(id) && this.acked.size >= reservationBucketsMax) return;
    this.acked.set(id, Math.max(this.acked.get(id) ?? 0, ack.count));
  }

  /** The ask timed out: allow asking again. */
  onLost(bucket: ReservationBucket): void {
    const id = bucketId(bucket.key, bucket.bucketStartMs);
    if ((this.asked.get(id) ?? 0) <= bucket.count) this.asked.delete(id);
  }

  /** Drops buckets that started before `beforeMs` (they no longer count in any window). */
  prune(beforeMs: number): void {
    for (const map of [this.acked, this.asked]) {
      for (const id of map.keys()) if (Number(id.slice(id.lastIndexOf("\u0000") + 1)) < beforeMs) map.delete(id);
    }
  }
}

/**
 * The successor's side. It acknowledges reservations until it takes over; from then on it
 * refuses them (a fence), so the old owner can never be covered beyond what was acknowledged
 * before the takeover, and the successor starts from those counts.
 */
export class SuccessorReservations {
  private readonly reserved = new Map<string, ReservationBucket>();
  private fenced = false;
  /** 0 until the first hand-back: nothing is acknowledged before an owner restored counts. */
  private generation = 0;
  /**
   * Whether the owner said it covered here every count it held after the current generation's
   * hand-back (`ownerCovered`), with no `requireHandBack` since: a takeover needs it.
   */
  private current = false;

  /** Returns the acknowledgement to send back, or null when fenced, of another generation, or full (fail closed). */
  accept(bucket: ReservationAsk): ReservationAsk | null {
    assert(Number.isSafeInteger(bucket.count) && bucket.count >= 0, "reservation: count >= 0");
    if (this.fenced || bucket.generation !== this.generation || this.generation === 0) return null;
    const id = bucketId(bucket.key, bucket.bucketStartMs);
    const current = this.reserved.get(id);
    if (current === undefined && this.reserved.size >= reservationBucketsMax) return null;
    const count = Math.max(current?.count ?? 0, bucket.count);
    this.reserved.set(id, { key: bucket.key, limit: bucket.limit, bucketStartMs: bucket.bucketStartMs, count });
    return { ...bucket, count };
  }

  /** Become the serving node: fence the old owner and return the buckets to restore (restoreBucket keeps the higher count). */
  takeOver(): ReservationBucket[] {
    this.fenced = true;
    this.generation++;
    return [...this.reserved.values()];
  }

  /**
   * An owner asks to serve (it is back, or it just started). This side stops serving first;
   * `served` are the counts it admitted while it served (its limiter's buckets, [] if it never
   * did). Returns, per bucket, the higher of those and the reservations, for the owner to restore
   * before it serves, and a new generation: from now on only asks of that generation are
   * acknowledged (an owner that has not restored this hand-back gets none).
   */
  handBack(served: readonly ReservationBucket[], wasServing = false): HandBack {
    // Serving, this side restored every reservation into its limiter at the takeover (one bucket
    // later when moved between clocks, movedBuckets) and acknowledged nothing since: its limiter's
    // buckets are then the whole count, and merging them per bucket with the reservations filed on
    // the owner's clock could lose admissions that the two clocks put in one bucket.
    if (wasServing && served.length > 0) this.reserved.clear();
    for (const bucket of served) {
      const id = bucketId(bucket.key, bucket.bucketStartMs);
      const current = this.reserved.get(id);
      if (current === undefined && this.reserved.size >= reservationBucketsMax) continue;
      this.reserved.set(id, { ...bucket, count: Math.max(current?.count ?? 0, bucket.count) });
    }
    this.fenced = false;
    this.generation++;
    // Not yet a base for a takeover: the owner restores these, collects what other nodes hold,
    // and covers all of it here before it serves (ownerCovered).
    this.current = false;
    return { generation: this.generation, buckets: [...this.reserved.values()] };
  }

  /**
   * The owner covered here every count it held after this generation's hand-back (counts it
   * collected from other nodes included): from now on a takeover serves from at least them.
   */
  ownerCovered(generation: number): void {
    if (generation === this.generation && !this.fenced && this.generation > 0) this.current = true;
  }

  /**
   * The pair may have been apart (the voters changed): the owner may since have had its
   * admissions covered at another node, so what is reserved here no longer covers them. A new
   * generation fences every ask of the old one, and no takeover is possible until the owner's
   * next hand-back (whose counts it then covers here before it serves). What is reserved stays
   * (it only ever over-counts).
   */
  requireHandBack(): void {
    if (this.generation > 0) this.generation++;
    this.current = false;
  }

  /**
   * Whether the owner got a hand-back here (this process) and covered what it held
   * (`ownerCovered`) since the pair last may have been apart (`requireHandBack`): before that this
   * side never acknowledged it anything, or what it acknowledged misses what the owner held or
   * had covered elsewhere meanwhile, so a takeover from here would serve its subjects from too
   * little.
   */
  handedBack(): boolean {
    return this.current;
  }

  /** What is reserved here now (a copy): a node collecting counts of these subjects counts them too. */
  held(): ReservationBucket[] {
    return [...this.reserved.values()].map((bucket) => ({ ...bucket }));
  }

  isFenced(): boolean {
    return this.fenced;
  }

  /** Drops reservations for which `dead` holds: only buckets that left every window may go (a takeover restores what is kept). */
  prune(dead: (bucket: ReservationBucket) => boolean): void {
    for (const [id, bucket] of this.reserved) if (dead(bucket)) this.reserved.delete(id);
  }
}
