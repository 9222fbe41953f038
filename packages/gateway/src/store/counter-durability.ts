// Rate-limit counters that survive a restart conservatively. The limiter counts in memory; this
// keeps, per (limiter key, bucket), a durable *reservation* that is always >= the count the
// limiter has admitted and answered. Reservations grow in chunks (see `reservationFor`), so most
// admissions find their count already covered and need no disk write at all; the rest share one
// fsynced batch (group commit). After a restart every live bucket is restored to its reservation,
// so the limiter starts from a count at least as high as before: a restart never admits more.
//
// Layout: sublevel `rl`, key = limiter key + "\0" + durationMs + "\0" + bucketStartMs as 16 hex
// digits (fixed width; the duration is part of a counter's identity), value = msgpack
// DurabilityBucket with `count` = the reservation. Keys written before the duration was part of the
// id (limiter key + "\0" + start) are still read.
//
// Pruning is incremental: each write examines a bounded number of reservations from where the
// last one stopped, and the reservations of counters the limiter evicted are dropped at once.
import { assert } from "@keyraft/core";
import type { CounterDurability, EvictedCounter, DurabilityBucket } from "./types.js";
import { decodeValue, encodeValue, logIndexKey } from "./codec.js";
import { closedError, corruptError, overloadedError } from "./errors.js";
import { GroupCommitWriter, type GroupCommitStats } from "./group-commit.js";
import {
  storeSublevel,
  syncedBatchWrite,
  type StoreDb,
  type StoreOp,
  type StoreSublevel,
  type SyncedBatchWrite,
} from "./level-db.js";

/** What `restore` needs of the limiter: set a bucket's count to at least `bucket.count`. */
export interface RestorableLimiter {
  restoreBucket(bucket: DurabilityBucket): void;
}

export interface CounterDurabilityOptions {
  /** Wall clock, Unix ms: only used to prune reservations whose window has passed. */
  nowMs: () => number;
  /** Called once when a write fails; the process must exit non-zero. */
  onFatal: (error: Error) => void;
  /** Most reservations held (live buckets); past it, after pruning, `cover` rejects with KEYRAFT_STORE_OVERLOADED. */
  reservationsMax?: number;
  /** Most reservation batches waiting for the disk; past it `cover` rejects with KEYRAFT_STORE_OVERLOADED. */
  queueEntriesMax?: number;
  /** Least time between two pruning sweeps over the reservations. */
  pruneIntervalMs?: number;
  /**
   * The limiter's bucket width for a window (SlidingWindowLimiter.bucketWidthMs): reservations
   * expire one width plus one window after their bucket starts. Must not be smaller than the
   * limiter's real width. Defaults to durationMs (safe for any limiter, keeps ~2x longer).
   */
  bucketWidthMs?: (durationMs: number) => number;
  write?: SyncedBatchWrite;
}

export const counterDurabilityDefaults = {
  reservationsMax: 1_000_000,
  queueEntriesMax: 10_000,
  pruneIntervalMs: 1_000,
  batchEntriesMax: 1024,
  batchBytesMax: 4 * 1024 * 1024,
  /** Deletions of expired reservations per queued item. */
  pruneDeletesPerItemMax: 1024,
  /** Reservations a pruning step examines (one step per write, at most one per pruneIntervalMs). */
  pruneStepReservationsMax: 4096,
} as const;

/** Denominator of the reservation chunk: a chunk is 1/8 of the limit (at least 1). */
export const reservationChunkDivisor = 8;

/**
 * The reservation to write for a bucket whose count is not covered: the count plus a chunk of
 * ceil(limit / 8), capped at the limit (a count above the limit is reserved as is). So a bucket
 * needs at most ~8 writes to reach its limit, and a restart over-counts by at most a chunk.
 */
export function reservationFor(bucket: DurabilityBucket): number {
  const chunk = Math.max(1, Math.ceil(bucket.limit / reservationChunkDivisor));
  return Math.max(bucket.count, Math.min(bucket.limit, bucket.count + chunk));
}

/**
 * A bucket counts in a sliding window until one full duration after it ends, so from
 * bucketStartMs + bucketWidthMs + durationMs on it is dead for sure. A bucket is never wider than
 * its window, so the width defaults to durationMs (2 * durationMs in all).
 */
export function reservationExpired(
  bucket: Pick<DurabilityBucket, "bucketStartMs" | "durationMs">,
  nowMs: number,
  bucketWidthMs: number = bucket.durationMs,
): boolean {
  return bucket.bucketStartMs + bucketWidthMs + bucket.durationMs <= nowMs;
}

interface Reservation {
  bucket: DurabilityBucket;
  /** Reservation known to be on disk. */
  durable: number;
  /** Highest reservation queued (== durable when nothing is in flight). */
  queued: number;
  /** Resolves when `queued` is durable. */
  queuedDone: Promise<void> | null;
}

const what = "rate-limit reservations";

export class LevelCounterDurability implements CounterDurability {
  private readonly reservations = new Map<string, Reservation>();
  /** Reservation ids per counter (counterKey), to drop an evicted counter's reservations. */
  private readonly byCounter = new Map<string, Set<string>>();
  private pruneCursor: Iterator<[string, Reservation]> | undefined;
  private readonly writer: GroupCommitWriter;
  private readonly limits: { reservationsMax: number; queueEntriesMax: number; pruneIntervalMs: number };
  private lastPruneMs = Number.NEGATIVE_INFINITY;
  private readonly bucketWidthMs: (durationMs: number) => number;
  private closed = false;
  private writes = 0;

  private constructor(
    private readonly level: StoreSublevel,
    private readonly options: CounterDurabilityOptions,
    write: SyncedBatchWrite,
  ) {
    this.limits = {
      reservationsMax: options.reservationsMax ?? counterDurabilityDefaults.reservationsMax,
      queueEntriesMax: options.queueEntriesMax ?? counterDurabilityDefaults.queueEntriesMax,
      pruneIntervalMs: options.pruneIntervalMs ?? counterDurabilityDefaults.pruneIntervalMs,
    };
    this.bucketWidthMs = options.bucketWidthMs ?? ((durationMs) => durationMs);
    this.writer = new GroupCommitWriter(what, write, counterDurabilityDefaults, options.onFatal);
  }

  private expired(bucket: DurabilityBucket, nowMs: number): boolean {
    const widthMs = this.bucketWidthMs(bucket.durationMs);
    assert(widthMs >= 1 && widthMs <= bucket.durationMs, "reservations: a bucket is 1 ms to one window wide");
    return reservationExpired(bucket, nowMs, widthMs);
  }

  /** Loads the live reservations from disk (expired ones are deleted). */
  static async open(db: StoreDb, options: CounterDurabilityOptions): Promise<LevelCounterDurability> {
    const level = storeSublevel(db, "rl");
    const durability = new LevelCounterDurability(level, options, options.write ?? syncedBatchWrite(db));
    await durability.load(options.nowMs());
    return durability;
  }

  /** Restores every live reservation into `limiter`, so its counts start at least at what was admitted. */
  restore(limiter: RestorableLimiter, nowMs: number): number {
    let restored = 0;
    for (const reservation of this.reservations.values()) {
      if (this.expired(reservation.bucket, nowMs)) continue;
      limiter.restoreBucket({ ...reservation.bucket, count: reservation.durable });
      restored += 1;
    }
    return restored;
  }

  cover(touched: readonly DurabilityBucket[]): Promise<void> | null {
    const waits = new Set<Promise<void>>();
    const grown: Array<{ reservation: Reservation; count: number }> = [];
    for (const bucket of touched) {
      const id = reservationId(bucket);
      const reservation = this.reservations.get(id);
      if (reservation !== undefined && bucket.count <= reservation.durable) continue;
      if (reservation !== undefined && bucket.count <= reservation.queued && reservation.queuedDone !== null) {
        waits.add(reservation.queuedDone);
        continue;
      }
      const count = reservationFor(bucket);
      assert(count >= bucket.count, "reservations: a reservation covers the count it was taken for");
      grown.push({ reservation: reservation ?? this.newReservation(id, bucket), count });
    }
    if (grown.length > 0) {
      const written = this.writeReservations(grown);
      if (written instanceof Error) return Promise.reject(written);
      waits.add(written);
    }
    if (waits.size === 0) return null;
    return waits.size === 1 ? [...waits][0]! : Promise.all(waits).then(() => undefined);
  }

  /** Stops taking reservations and resolves once every queued one is fsynced. */
  async close(): Promise<void> {
    this.closed = true;
    await this.writer.idle();
  }

  size(): number {
    return this.reservations.size;
  }

  forget(evicted: readonly EvictedCounter[]): void {
    if (evicted.length === 0 || this.closed) return;
    const deletes: StoreOp[] = [];
    for (const counter of evicted) {
      const ids = this.byCounter.get(counterKey(counter));
      if (ids === undefined) continue;
      for (const id of ids) {
        const reservation = this.reservations.get(id);
        // One in flight stays: its write must not be undone by a delete queued before it lands.
        if (reservation === undefined || reservation.queuedDone !== null) continue;
        this.drop(id, reservation);
        deletes.push({ type: "del", sublevel: this.level, key: id });
      }
    }
    this.enqueueDeletes(deletes);
  }

  statistics(): GroupCommitStats & { reservations: number; reservationWrites: number } {
    return { ...this.writer.statistics(), reservations: this.reservations.size, reservationWrites: this.writes };
  }

  private newReservation(id: string, bucket: DurabilityBucket): Reservation {
    const reservation: Reservation = { bucket: { ...bucket, count: 0 }, durable: 0, queued: 0, queuedDone: null };
    // Inserted now (even if the bound is hit below) so that the size check sees it; removed again on refusal.
    this.hold(id, reservation);
    return reservation;
  }

  private hold(id: string, reservation: Reservation): void {
    this.reservations.set(id, reservation);
    const counter = counterKey(reservation.bucket);
    let ids = this.byCounter.get(counter);
    if (ids === undefined) {
      ids = new Set<string>();
      this.byCounter.set(counter, ids);
    }
    ids.add(id);
  }

  private drop(id: string, reservation: Reservation): void {
    this.reservations.delete(id);
    const counter = counterKey(reservation.bucket);
    const ids = this.byCounter.get(counter);
    ids?.delete(id);
    if (ids !== undefined && ids.size === 0) this.byCounter.delete(counter);
  }

  private enqueueDeletes(deletes: StoreOp[]): void {
    // Deleting is only housekeeping (restore skips expired reservations), so nothing awaits it.
    for (let start = 0; start < deletes.length; start += counterDurabilityDefaults.pruneDeletesPerItemMax) {
      const chunk = deletes.slice(start, start + counterDurabilityDefaults.pruneDeletesPerItemMax);
      this.writer.enqueue(chunk, 0).catch(() => undefined);
    }
  }

  private writeReservations(grown: Array<{ reservation: Reservation; count: number }>): Promise<void> | Error {
    const refusal = this.refusal();
    if (refusal !== null) {
      for (const { reservation } of grown) {
        if (reservation.queuedDone === null && reservation.durable === 0)
          this.drop(reservationId(reservation.bucket), reservation);
      }
      return refusal;
    }
    const ops: StoreOp[] = [];
    let bytes = 0;
    for (const { reservation, count } of grown) {
      const value = encodeValue({ ...reservation.bucket, count });
      ops.push({ type: "put", sublevel: this.level, key: reservationId(reservation.bucket), value });
      bytes += value.byteLength;
      reservation.queued = Math.max(reservation.queued, count);
    }
    this.writes += 1;
    const done = this.writer.enqueue(ops, bytes).then(() => {
      for (const { reservation, count } of grown) {
        reservation.durable = Math.max(reservation.durable, count);
        if (reservation.durable >= reservation.queued) reservation.queuedDone = null;
      }
    });
    for (const { reservation } of grown) reservation.queuedDone = done;
    return done;
  }

  /** Why a new write must be refused now, or null. Prunes first when the table is full. */
  private refusal(): Error | null {
    if (this.closed) return closedError(what);
    const failure = this.writer.failed();
    if (failure !== null) return failure;
    const nowMs = this.options.nowMs();
    if (nowMs - this.lastPruneMs >= this.limits.pruneIntervalMs)
      this.prune(nowMs, counterDurabilityDefaults.pruneStepReservationsMax);
    // Full: a whole pass (bounded by reservationsMax) before refusing.
    if (this.reservations.size > this.limits.reservationsMax) this.prune(nowMs, this.reservations.size);
    if (this.reservations.size > this.limits.reservationsMax)
      return overloadedError(`${what} (table full)`, this.limits.reservationsMax);
    if (this.writer.pendingItems() >= this.limits.queueEntriesMax)
      return overloadedError(what, this.limits.queueEntriesMax);
    return null;
  }

  /**
   * Examines up to `steps` reservations from where the last step stopped and drops those whose
   * window has passed, from memory now and from disk in the next batches.
   */
  private prune(nowMs: number, steps: number): void {
    this.lastPruneMs = nowMs;
    const deletes: StoreOp[] = [];
    for (let i = 0; i < steps; i++) {
      if (this.pruneCursor === undefined) this.pruneCursor = this.reservations.entries();
      const next = this.pruneCursor.next();
      if (next.done === true) {
        this.pruneCursor = undefined;
        if (i > 0 || this.reservations.size === 0) break;
        continue;
      }
      const [id, reservation] = next.value;
      if (reservation.queuedDone !== null || !this.expired(reservation.bucket, nowMs)) continue;
      this.drop(id, reservation);
      deletes.push({ type: "del", sublevel: this.level, key: id });
    }
    this.enqueueDeletes(deletes);
  }

  private async load(nowMs: number): Promise<void> {
    const expired: StoreOp[] = [];
    const moved: StoreOp[] = [];
    for await (const [id, value] of this.level.iterator()) {
      const bucket = decodeBucket(value, id);
      if (this.expired(bucket, nowMs)) {
        expired.push({ type: "del", sublevel: this.level, key: id });
        continue;
      }
      const current = reservationId(bucket);
      if (current !== id && legacyReservationId(bucket) !== id)
        throw corruptError(what, `reservation stored under ${JSON.stringify(id)}`);
      if (current !== id) {
        // Written before the duration was part of the id: moved to its id now.
        expired.push({ type: "del", sublevel: this.level, key: id });
        moved.push({ type: "put", sublevel: this.level, key: current, value });
      }
      this.hold(current, { bucket, durable: bucket.count, queued: bucket.count, queuedDone: null });
    }
    for (let start = 0; start < moved.length; start += counterDurabilityDefaults.pruneDeletesPerItemMax) {
      await this.writer.enqueue(moved.slice(start, start + counterDurabilityDefaults.pruneDeletesPerItemMax), 0);
    }
    this.lastPruneMs = nowMs;
    for (let start = 0; start < expired.length; start += counterDurabilityDefaults.pruneDeletesPerItemMax) {
      await this.writer.enqueue(expired.slice(start, start + counterDurabilityDefaults.pruneDeletesPerItemMax), 0);
    }
  }
}

export function reservationId(bucket: Pick<DurabilityBucket, "key" | "durationMs" | "bucketStartMs">): string {
  // bucketStartMs is a Unix time in ms (>= 0); fixed-width hex keeps the split unambiguous.
  return `${counterKey(bucket)}\u0000${logIndexKey(bucket.bucketStartMs)}`;
}

/** The id of a reservation written before the duration was part of it. */
function legacyReservationId(bucket: Pick<DurabilityBucket, "key" | "bucketStartMs">): string {
  return `${bucket.key}\u0000${logIndexKey(bucket.bucketStartMs)}`;
}

/** A counter is (limiter key, durationMs), as in the limiter. */
function counterKey(counter: Pick<DurabilityBucket, "key" | "durationMs">): string {
  return `${counter.key}\u0000${counter.durationMs}`;
}

function decodeBucket(value: Uint8Array, id: string): DurabilityBucket {
  let decoded: unknown;
  try {
    decoded = decodeValue(value);
  } catch (error) {
    throw corruptError(what, `reservation ${JSON.stringify(id)} does not decode`, error);
  }
  if (!isDurabilityBucket(decoded)) throw corruptError(what, `reservation ${JSON.stringify(id)} has the wrong shape`);
  return decoded;
}

function isDurabilityBucket(value: unknown): value is DurabilityBucket {
  if (typeof value !== "object" || value === null) return false;
  const record = value as Record<string, unknown>;
  return (
    typeof record["key"] === "string" &&
    typeof record["limit"] === "number" &&
    typeof record["durationMs"] === "number" &&
    typeof record["bucketStartMs"] === "number" &&
    typeof record["count"] === "number"
  );
}
