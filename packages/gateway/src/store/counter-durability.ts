// Rate-limit counters that survive a restart conservatively. The limiter counts in memory; this
// keeps durable *reservations* that are always >= the counts the limiter has admitted and
// answered, so that after a restart the limiter starts from counts at least as high as before: a
// restart never admits more. Reservations grow in chunks (see `reservationFor`), so most
// admissions find their count already covered and need no disk write at all; the rest share one
// fsynced batch (group commit).
//
// Two kinds, in two sublevels:
//
// - Window reservations (sublevel `rlw`), for counts the limiter judged (`windowCount` set): one
//   record per counter (limiter key, durationMs), overwritten in place, holding a count R and the
//   last bucket it covers, `until` (DurabilityBucket.bucketStartMs). An admission is covered by
//   the counter's latest record when its bucket is <= until and its window count <= R. A new
//   record takes R = the window count plus a chunk and until = the bucket plus
//   max(durationMs, windowReservationSpanMinMs), so a counter at a steady rate writes about once
//   per span, whatever its rate and however many buckets that span holds, and the puts of every
//   counter that needs one share a batch. After a restart at t, R is restored into the bucket of
//   min(until, t): every answered admission was covered by the latest record queued at its time,
//   and the latest durable record was taken from a window count that included every earlier one,
//   so at any time from t on the counts the window really holds are <= R, and the restored R
//   stays in the window at least as long as any of them (it sits in a bucket no earlier than
//   theirs). The price: R sits in one bucket, so after a crash a counter stays at R for up to one
//   window from the restart, even where its admissions would have left the window sooner.
//
// - Bucket reservations (sublevel `rl`), for counts handed over without a window count (the
//   successor's side of a cluster, counters/ratelimit/successor-side.ts): one per (limiter key,
//   bucket), key = limiter key + "\0" + durationMs + "\0" + bucketStartMs as 16 hex digits (fixed
//   width; the duration is part of a counter's identity), value = msgpack DurabilityBucket with
//   `count` = the reservation. Keys written before the duration was part of the id (limiter key +
//   "\0" + start) are still read. A count held for another node (`holder`: a successor's
//   reservation for an owner, or a copy kept for a serving successor) has its own record per
//   holder, key + "\0" + holder: the counts of two holders may count different admissions (a copy
//   of what a serving successor admitted, a reservation of what an owner admitted), so one record
//   keeping the higher would restore fewer than were admitted. Within a holder the higher count is
//   kept (its counts only grow). Records written before holders were recorded (one per bucket, the
//   higher of every role) are still read, as a record without a holder.
//
// A restart restores, per counter and limiter bucket, the SUM of every record that lands there
// (each holder's, the one without a holder, and a window record restored into that bucket): no
// rule that keeps the higher one is sound when two records may count disjoint admissions
// (docs/counters-proofs.md, held counts after a restart).
//
// Pruning is incremental: each write examines a bounded number of reservations from where the
// last one stopped, and the reservations of counters the limiter evicted are dropped at once.
import { assert, movedBucketStartMs } from "@keyraft/core";
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
 * Least time a window reservation covers past the bucket that asked for it: a counter of a short
 * window (1 s) then writes once per 10 s rather than once per window. Longer keeps a high R (a
 * burst) durable longer, which after a crash holds the counter at R for one window; it never
 * lets a limit admit more.
 */
export const windowReservationSpanMinMs = 10_000;

/** The last bucket start a window reservation taken at `bucketStartMs` covers (a whole number of buckets later). */
export function windowReservationUntilMs(bucketStartMs: number, durationMs: number, bucketWidthMs: number): number {
  const spanMs = Math.max(durationMs, windowReservationSpanMinMs);
  return bucketStartMs + Math.ceil(spanMs / bucketWidthMs) * bucketWidthMs;
}

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

/** A counter's window reservation: `count` R covers window counts <= R in buckets <= `untilMs`. */
interface WindowCover {
  count: number;
  untilMs: number;
}

interface WindowReservation {
  /** The counter's identity and bound group; `count` and `bucketStartMs` are not used. */
  counter: DurabilityBucket;
  /** The latest record queued (or loaded); only it may cover an admission. */
  latest: WindowCover;
  /** Whether `latest` is on disk. */
  durable: boolean;
  /** Resolves when `latest` is durable (null when it is). */
  latestDone: Promise<void> | null;
  /** The next counter of the same limiter key with another window (windowsByKey's chain). */
  sibling: WindowReservation | undefined;
}

const what = "rate-limit reservations";

export class LevelCounterDurability implements CounterDurability {
  private readonly reservations = new Map<string, Reservation>();
  /** Window reservations by counterKey. */
  private readonly windows = new Map<string, WindowReservation>();
  /**
   * The same by limiter key (other windows chained): the hot path finds a counter's reservation
   * without building its counterKey string.
   */
  private readonly windowsByKey = new Map<string, WindowReservation>();
  private windowPruneCursor: Iterator<[string, WindowReservation]> | undefined;
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
    private readonly windowLevel: StoreSublevel,
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

  /**
   * A count held for another node (`holder`: an owner's reservation, a serving successor's copy)
   * was filed on that node's clock, which may be behind this one's by up to a bucket: it is
   * restored one bucket later (movedBucketStartMs, as a takeover or a hand-back restores it), so
   * it lives one width longer; never earlier than it was filed (a start off this store's grid, or
   * ahead of this clock, stays). A record without a holder is restored where it was filed.
   */
  private restoredStartMs(bucket: DurabilityBucket, nowMs: number): number {
    if (bucket.holder === undefined) return bucket.bucketStartMs;
    const movedMs = movedBucketStartMs(bucket.bucketStartMs, this.bucketWidthMs(bucket.durationMs), nowMs);
    return Math.max(bucket.bucketStartMs, movedMs);
  }

  private heldExpired(bucket: DurabilityBucket, nowMs: number): boolean {
    if (bucket.holder === undefined) return this.expired(bucket, nowMs);
    const widthMs = this.bucketWidthMs(bucket.durationMs);
    return this.expired({ ...bucket, bucketStartMs: bucket.bucketStartMs + widthMs }, nowMs);
  }

  /** Loads the live reservations from disk (expired ones are deleted). */
  static async open(db: StoreDb, options: CounterDurabilityOptions): Promise<LevelCounterDurability> {
    const level = storeSublevel(db, "rl");
    const windowLevel = storeSublevel(db, "rlw");
    const durability = new LevelCounterDurability(level, windowLevel, options, options.write ?? syncedBatchWrite(db));
    await durability.load(options.nowMs());
    return durability;
  }

  /**
   * Restores every live reservation into `limiter`, so its counts start at least at what was
   * admitted: per counter and bucket, the sum of the records that land there (see the header).
   * Returns the number of records restored.
   */
  restore(limiter: RestorableLimiter, nowMs: number): number {
    const sums = new Map<string, DurabilityBucket>();
    const add = (record: DurabilityBucket): void => {
      // Grouped by the bucket of this store's width; the sum goes to the latest start of the
      // group (a count moved later leaves the window later: never an earlier bucket than its own).
      const widthMs = this.bucketWidthMs(record.durationMs);
      const id = `${counterKey(record)}\u0000${Math.ceil(record.bucketStartMs / widthMs)}`;
      const sum = sums.get(id);
      if (sum === undefined) {
        const first: DurabilityBucket = { ...record };
        delete first.holder;
        delete first.windowCount;
        sums.set(id, first);
        return;
      }
      sum.count += record.count;
      sum.limit = Math.max(sum.limit, record.limit);
      sum.bucketStartMs = Math.max(sum.bucketStartMs, record.bucketStartMs);
    };
    let restored = 0;
    for (const reservation of this.reservations.values()) {
      const bucket = reservation.bucket;
      if (this.heldExpired(bucket, nowMs)) continue;
      // Restored where it was filed, a count of another node's clock would leave this node's
      // window early when this clock is ahead (membership schedule 572: 8 admitted for 7).
      add({ ...bucket, count: reservation.durable, bucketStartMs: this.restoredStartMs(bucket, nowMs) });
      restored += 1;
    }
    for (const window of this.windows.values()) {
      const record = this.windowRecord(window.counter, window.latest);
      if (this.expired(record, nowMs)) continue;
      // Into the bucket of min(until, now): never later than now (the limiter's clock must not
      // jump ahead), never earlier than any admission the record covers.
      const widthMs = this.bucketWidthMs(record.durationMs);
      const nowBucketStartMs = Math.floor(nowMs / widthMs) * widthMs;
      add({ ...record, bucketStartMs: Math.min(record.bucketStartMs, nowBucketStartMs) });
      restored += 1;
    }
    for (const sum of sums.values()) {
      assert(Number.isSafeInteger(sum.count), "reservations: a restored sum is a safe integer");
      limiter.restoreBucket(sum);
    }
    return restored;
  }

  cover(touched: readonly DurabilityBucket[]): Promise<void> | null {
    // The hot path: one counter, covered by its durable window reservation: no allocation.
    if (touched.length === 1) {
      const only = touched[0]!;
      if (only.windowCount !== undefined) {
        const window = this.findWindow(only.key, only.durationMs);
        if (window !== undefined && window.durable && windowCovers(window.latest, only)) return null;
      }
    }
    const waits = new Set<Promise<void>>();
    const grown: Array<{ reservation: Reservation; count: number }> = [];
    const grownWindows: Array<{ window: WindowReservation; cover: WindowCover }> = [];
    for (const bucket of touched) {
      if (bucket.windowCount !== undefined) {
        assert(bucket.holder === undefined, "reservations: a count held for another node is a bucket reservation");
        const window = this.findWindow(bucket.key, bucket.durationMs);
        if (window !== undefined && windowCovers(window.latest, bucket)) {
          if (!window.durable) waits.add(window.latestDone!);
          continue;
        }
        const cover = this.windowCoverFor(bucket);
        assert(windowCovers(cover, bucket), "reservations: a window reservation covers the count it was taken for");
        grownWindows.push({ window: window ?? this.newWindow(counterKey(bucket), bucket), cover });
        continue;
      }
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
    if (grown.length > 0 || grownWindows.length > 0) {
      const written = this.writeReservations(grown, grownWindows);
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

  /** Reservations held: buckets and window reservations of counters. */
  size(): number {
    return this.reservations.size + this.windows.size;
  }

  forget(evicted: readonly EvictedCounter[]): void {
    if (evicted.length === 0 || this.closed) return;
    const deletes: StoreOp[] = [];
    for (const counter of evicted) {
      const windowId = counterKey(counter);
      const window = this.windows.get(windowId);
      // One in flight stays (as below); it is pruned once its window passes.
      if (window !== undefined && window.durable) {
        this.dropWindow(windowId, window);
        deletes.push({ type: "del", sublevel: this.windowLevel, key: windowId });
      }
      const ids = this.byCounter.get(counterKey(counter));
      if (ids === undefined) continue;
      for (const id of ids) {
        const reservation = this.reservations.get(id);
        // One in flight stays: its write must not be undone by a delete queued before it lands.
        if (reservation === undefined || reservation.queuedDone !== null) continue;
        // A count held for another node is not this limiter's: its eviction says nothing of it
        // (pruned once its window passes).
        if (reservation.bucket.holder !== undefined) continue;
        this.drop(id, reservation);
        deletes.push({ type: "del", sublevel: this.level, key: id });
      }
    }
    this.enqueueDeletes(deletes);
  }

  statistics(): GroupCommitStats & { reservations: number; reservationWrites: number } {
    return { ...this.writer.statistics(), reservations: this.size(), reservationWrites: this.writes };
  }

  /** The record a window reservation is stored (and restored) as. */
  private windowRecord(counter: DurabilityBucket, cover: WindowCover): DurabilityBucket {
    const record: DurabilityBucket = {
      key: counter.key,
      limit: counter.limit,
      durationMs: counter.durationMs,
      bucketStartMs: cover.untilMs,
      count: cover.count,
    };
    if (counter.group !== undefined) {
      record.group = counter.group;
      record.groupEntriesMax = counter.groupEntriesMax!;
    }
    return record;
  }

  /** A new window reservation for `bucket`: its window count plus a chunk, until a span later. */
  private windowCoverFor(bucket: DurabilityBucket): WindowCover {
    const windowCount = bucket.windowCount!;
    assert(
      Number.isSafeInteger(windowCount) && windowCount >= bucket.count,
      "reservations: a window count includes its bucket",
    );
    return {
      count: reservationFor({ ...bucket, count: windowCount }),
      untilMs: windowReservationUntilMs(bucket.bucketStartMs, bucket.durationMs, this.bucketWidthMs(bucket.durationMs)),
    };
  }

  private newWindow(id: string, bucket: DurabilityBucket): WindowReservation {
    const window: WindowReservation = {
      counter: { ...bucket, count: 0 },
      latest: { count: 0, untilMs: -1 },
      // Not on disk yet: pruning and forgetting leave it alone until its first record lands.
      durable: false,
      latestDone: null,
      sibling: undefined,
    };
    delete window.counter.windowCount;
    // Inserted now (the size check sees it); removed again on refusal.
    this.holdWindow(id, window);
    return window;
  }

  private findWindow(key: string, durationMs: number): WindowReservation | undefined {
    let window = this.windowsByKey.get(key);
    while (window !== undefined && window.counter.durationMs !== durationMs) window = window.sibling;
    return window;
  }

  private holdWindow(id: string, window: WindowReservation): void {
    this.windows.set(id, window);
    const head = this.windowsByKey.get(window.counter.key);
    if (head === undefined) this.windowsByKey.set(window.counter.key, window);
    else {
      window.sibling = head.sibling;
      head.sibling = window;
    }
  }

  private dropWindow(id: string, window: WindowReservation): void {
    this.windows.delete(id);
    const key = window.counter.key;
    const head = this.windowsByKey.get(key)!;
    if (head === window) {
      if (window.sibling === undefined) this.windowsByKey.delete(key);
      else this.windowsByKey.set(key, window.sibling);
    } else {
      let before = head;
      while (before.sibling !== window) before = before.sibling!;
      before.sibling = window.sibling;
    }
    window.sibling = undefined;
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

  private writeReservations(
    grown: Array<{ reservation: Reservation; count: number }>,
    grownWindows: Array<{ window: WindowReservation; cover: WindowCover }>,
  ): Promise<void> | Error {
    const refusal = this.refusal();
    if (refusal !== null) {
      for (const { reservation } of grown) {
        if (reservation.queuedDone === null && reservation.durable === 0)
          this.drop(reservationId(reservation.bucket), reservation);
      }
      for (const { window } of grownWindows) {
        if (
          window.latestDone === null &&
          window.latest.untilMs < 0 &&
          this.windows.get(counterKey(window.counter)) === window
        )
          this.dropWindow(counterKey(window.counter), window);
      }
      return refusal;
    }
    const ops: StoreOp[] = [];
    let bytes = 0;
    for (const { window, cover } of grownWindows) {
      const value = encodeValue(this.windowRecord(window.counter, cover));
      ops.push({ type: "put", sublevel: this.windowLevel, key: counterKey(window.counter), value });
      bytes += value.byteLength;
      // From now on only this record covers the counter (see the header): it replaces the last.
      window.latest = cover;
      window.durable = false;
    }
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
      for (const { window, cover } of grownWindows) {
        // A later record may have been queued since: that one is still in flight.
        if (window.latest !== cover) continue;
        window.durable = true;
        window.latestDone = null;
      }
    });
    for (const { reservation } of grown) reservation.queuedDone = done;
    for (const { window } of grownWindows) window.latestDone = done;
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
    if (this.size() > this.limits.reservationsMax) this.prune(nowMs, this.size());
    if (this.size() > this.limits.reservationsMax)
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
      if (reservation.queuedDone !== null || !this.heldExpired(reservation.bucket, nowMs)) continue;
      this.drop(id, reservation);
      deletes.push({ type: "del", sublevel: this.level, key: id });
    }
    for (let i = 0; i < steps; i++) {
      if (this.windowPruneCursor === undefined) this.windowPruneCursor = this.windows.entries();
      const next = this.windowPruneCursor.next();
      if (next.done === true) {
        this.windowPruneCursor = undefined;
        if (i > 0 || this.windows.size === 0) break;
        continue;
      }
      const [id, window] = next.value;
      if (!window.durable || !this.expired(this.windowRecord(window.counter, window.latest), nowMs)) continue;
      this.dropWindow(id, window);
      deletes.push({ type: "del", sublevel: this.windowLevel, key: id });
    }
    this.enqueueDeletes(deletes);
  }

  private async load(nowMs: number): Promise<void> {
    const expired: StoreOp[] = [];
    const moved: StoreOp[] = [];
    for await (const [id, value] of this.level.iterator()) {
      const bucket = decodeBucket(value, id);
      if (this.heldExpired(bucket, nowMs)) {
        expired.push({ type: "del", sublevel: this.level, key: id });
        continue;
      }
      const current = reservationId(bucket);
      if (current !== id && (bucket.holder !== undefined || legacyReservationId(bucket) !== id))
        throw corruptError(what, `reservation stored under ${JSON.stringify(id)}`);
      if (current !== id) {
        // Written before the duration was part of the id: moved to its id now.
        expired.push({ type: "del", sublevel: this.level, key: id });
        moved.push({ type: "put", sublevel: this.level, key: current, value });
      }
      this.hold(current, { bucket, durable: bucket.count, queued: bucket.count, queuedDone: null });
    }
    for await (const [id, value] of this.windowLevel.iterator()) {
      const record = decodeBucket(value, id);
      if (this.expired(record, nowMs)) {
        expired.push({ type: "del", sublevel: this.windowLevel, key: id });
        continue;
      }
      if (counterKey(record) !== id) throw corruptError(what, `window reservation stored under ${JSON.stringify(id)}`);
      this.holdWindow(id, {
        counter: { ...record, count: 0 },
        latest: { count: record.count, untilMs: record.bucketStartMs },
        durable: true,
        latestDone: null,
        sibling: undefined,
      });
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

/** Whether a window reservation covers an admission: its bucket is no later than `untilMs` and its window count fits. */
function windowCovers(cover: WindowCover, bucket: DurabilityBucket): boolean {
  return bucket.bucketStartMs <= cover.untilMs && bucket.windowCount! <= cover.count;
}

export function reservationId(
  bucket: Pick<DurabilityBucket, "key" | "durationMs" | "bucketStartMs" | "holder">,
): string {
  // bucketStartMs is a Unix time in ms (>= 0); fixed-width hex keeps the split unambiguous. The
  // holder comes last, so the ids without one (this node's own, and every id written before
  // holders were recorded) stay as they were.
  const id = `${counterKey(bucket)}\u0000${logIndexKey(bucket.bucketStartMs)}`;
  return bucket.holder === undefined ? id : `${id}\u0000${bucket.holder}`;
}

/** The id of a reservation written before the duration was part of it. */
function legacyReservationId(bucket: Pick<DurabilityBucket, "key" | "bucketStartMs">): string {
  return `${bucket.key}\u0000${logIndexKey(bucket.bucketStartMs)}`;
}

/** The id of a counter's window reservation (in sublevel `rlw`). */
export function reservationCounterId(key: string, durationMs: number): string {
  return counterKey({ key, durationMs });
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
    typeof record["count"] === "number" &&
    (record["holder"] === undefined || typeof record["holder"] === "string")
  );
}
