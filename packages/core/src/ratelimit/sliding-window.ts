import { assert } from "../assert.js";
import {
  limiterBucketsPerWindowDefault,
  limiterBucketsPerWindowMax,
  limiterChecksPerCallMax,
  limiterEntriesMax,
  limiterSweepFullMax,
  limiterSweepStepMax,
} from "../limits.js";

// keyraft's rate limiter (decision 3): a sliding window of `durationMs`, never a fixed one.
//
// Each entry keeps k sub-buckets per window, aligned to the Unix epoch, each `widthMs =
// ceil(durationMs / k)` wide; a hit at time h counts in bucket floor(h / widthMs). The count of a
// window at time t is the sum of every bucket that may hold a hit inside (t - durationMs, t]:
// buckets floor((t - durationMs + 1) / widthMs) .. floor(t / widthMs), the oldest, partially
// covered one counted WHOLE. A request of cost c is admitted iff count(t) + c <= limit.
//
// Exact bound: in ANY interval of length durationMs, the admitted cost is at most `limit`. Proof:
// take the last hit admitted in the interval, at time t; every earlier hit of the interval lies
// in (t - durationMs, t], so in a bucket counted at t; its admission needed count(t) + c <= limit.
// Under-admission: count(t) only sees hits of the last durationMs + widthMs - 1 ms, so a request
// is refused only if the admitted cost of those ms plus its own exceeds `limit`: the window is
// at most one bucket width (about durationMs / k) longer than exact. See docs/core-leaves.md.
//
// Time: the limiter keeps a clock, the latest nowMs of an admission, of a restored bucket's start,
// or of a call that had to sweep a full table, and judges at max(clock, nowMs): a clock going
// backwards is judged at the high-water mark, so it never frees capacity, and entries expired at
// the clock may be evicted safely (nothing is ever judged before it again).
//
// Identity and bounds: a counter is (key, durationMs); the same key with another window is another
// counter, so a caller naming a limit with a new window never resets the configured one. Counters
// a caller creates (inline limits, namespace identifiers) carry a `group` with its own bound:
// past it the group's least recently used counter is evicted, and when the whole table is full
// the least recently used grouped counter anywhere is evicted. Evicting only loses counts of a
// caller-created counter; counters without a group (configured by admins) are never evicted
// while live, and only they can still fill the table (then new ungrouped counters fail closed).

/** One limit to judge: `key` names the counter and is the caller's to build (see below). */
export interface LimitCheck {
  /**
   * The counter's key. The counter is (key, durationMs): the same key with another durationMs
   * is another counter, and neither changes the other. With another limit (same duration) its
   * counts are kept and judged against the new limit.
   */
  key: string;
  /** Most cost admitted per window; 0 admits nothing but cost-0 reads. */
  limit: number;
  /** Window length, ms, >= 1. */
  durationMs: number;
  /** Cost of this request; 0 is a pure read that never changes state. */
  cost: number;
  /**
   * The bound group of a caller-created counter (e.g. one limit owner's inline limits): the group
   * holds at most `groupEntriesMax` counters, least recently used evicted. Unset: a configured
   * counter, never evicted while live.
   */
  group?: string;
  /** Most counters of `group` (>= limiterChecksPerCallMax); required with `group`. */
  groupEntriesMax?: number;
}

/** A counter the limiter dropped for a bound (its persisted buckets may be forgotten). */
export interface EvictedCounter {
  key: string;
  durationMs: number;
}

export interface LimitOutcome {
  /** Whether this check alone fits (count + cost <= limit) and, for limit(), was not refused for capacity. */
  success: boolean;
  limit: number;
  /**
   * max(0, limit - count) after the call: with its cost deducted only when the call consumed.
   * 0 for a check refused because the table is full.
   */
  remaining: number;
  /**
   * Unix ms: when the next request of this cost would be admitted, if nothing else is admitted
   * (a request of this cost at resetAtMs succeeds, one at resetAtMs - 1 fails), counting this
   * call's own admission. The judging time when it would be admitted at once (room left); at most
   * durationMs + one bucket width later otherwise. When cost > limit it never fits, and this is
   * when the counter is empty (docs/counters.md, "reset").
   */
  resetAtMs: number;
}

/** The count of one limiter bucket: what an admission changed (`touched`), a snapshot holds, and a restart restores. */
export interface BucketCount {
  key: string;
  limit: number;
  durationMs: number;
  /** Start of the bucket, Unix ms (a multiple of the bucket width). */
  bucketStartMs: number;
  /** Count of the bucket after the admission. */
  count: number;
  /** The counter's bound group, when it has one (restored into the same group). */
  group?: string;
  groupEntriesMax?: number;
  /**
   * In `touched` only: the counter's count in its window after the call (every counted bucket,
   * this one included), so that a durable reservation can cover the counter across buckets.
   */
  windowCount?: number;
}

export interface LimitResult {
  /** True iff every check fit; then all costs were consumed, else none. */
  success: boolean;
  /** One per check, same order. */
  outcomes: LimitOutcome[];
  /** The buckets the call changed (empty unless success and some cost > 0). */
  touched: BucketCount[];
  /** The time the call was judged at, Unix ms: max(the limiter's clock, nowMs). */
  judgedAtMs: number;
  /** Counters the call evicted to stay within a bound (usually none). */
  evicted: EvictedCounter[];
}

interface Entry {
  key: string;
  group: string | undefined;
  groupEntriesMax: number;
  /** The last call that used the entry: an eviction never takes an entry of the current call. */
  callSeq: number;
  limit: number;
  durationMs: number;
  widthMs: number;
  /** Ring of bucket counts; bucket j lives in slot j mod counts.length. */
  counts: number[];
  /** Index of the newest bucket the ring holds; the ring holds headBucket - length + 1 .. headBucket. */
  headBucket: number;
  /** The next counter of the same key with another window (rare): a chain from the map's entry. */
  sibling: Entry | undefined;
}

export interface SlidingWindowLimiterOptions {
  /** Sub-buckets per window, k (default 10): the window is at most durationMs/k longer than exact. */
  bucketsPerWindow?: number;
  /**
   * Most entries held (default 1,000,000). When full, the least recently used grouped entry is
   * evicted; when full of live ungrouped entries, new keys are refused.
   */
  entriesMax?: number;
}

function isCount(value: number): boolean {
  return Number.isSafeInteger(value) && value >= 0;
}

/** The id of counter (key, durationMs) in the limiter's maps of grouped counters. */
function counterId(key: string, durationMs: number): string {
  return `${key}\u0000${durationMs}`;
}

const noEvictions: EvictedCounter[] = [];

export class SlidingWindowLimiter {
  readonly bucketsPerWindow: number;
  readonly entriesMax: number;
  /** Admissions refused because the table was full of live ungrouped entries (fail closed). */
  refusedForCapacity = 0;
  /** Grouped counters evicted for a bound (per group or the whole table). */
  evictedCounters = 0;
  /**
   * Every entry, by its key: the map holds the first counter of a key, its other windows chain
   * from it (Entry.sibling). Keyed by the caller's key string so that a lookup builds no string
   * (a check's key is usually one long-lived string whose hash V8 keeps). Iteration order is the
   * sweep's.
   */
  private readonly entries = new Map<string, Entry>();
  /** Entries held, chained ones included. */
  private entryCount = 0;
  /** Grouped entries by counterId, least recently used first. */
  private readonly grouped = new Map<string, Entry>();
  /** Per group, its entries by counterId, least recently used first. */
  private readonly groups = new Map<string, Map<string, Entry>>();
  private callSeq = 0;
  private evictions: EvictedCounter[] = noEvictions;
  private clockMs = 0;
  private sweepCursor: Iterator<[string, Entry]> | undefined;
  // Per-call scratch, reused so a call allocates only its result.
  private readonly scratchEntries: (Entry | undefined)[] = [];
  private readonly scratchCounts: number[] = [];
  private readonly scratchFits: boolean[] = [];

  constructor(options?: SlidingWindowLimiterOptions) {
    this.bucketsPerWindow = options?.bucketsPerWindow ?? limiterBucketsPerWindowDefault;
    this.entriesMax = options?.entriesMax ?? limiterEntriesMax;
    assert(
      Number.isSafeInteger(this.bucketsPerWindow) &&
        this.bucketsPerWindow >= 1 &&
        this.bucketsPerWindow <= limiterBucketsPerWindowMax,
      "SlidingWindowLimiter: bucketsPerWindow is 1..limiterBucketsPerWindowMax",
    );
    assert(Number.isSafeInteger(this.entriesMax) && this.entriesMax >= 1, "SlidingWindowLimiter: entriesMax >= 1");
  }

  /** Number of entries held (live or not yet swept). */
  size(): number {
    return this.entryCount;
  }

  /** Number of entries held for `group`. */
  groupSize(group: string): number {
    return this.groups.get(group)?.size ?? 0;
  }

  /** Bucket width for a window: ceil(durationMs / bucketsPerWindow). */
  bucketWidthMs(durationMs: number): number {
    return Math.ceil(durationMs / this.bucketsPerWindow);
  }

  /**
   * Judges all checks together at max(clock, nowMs): success only if every check fits, and then
   * every cost is consumed; if any check does not fit nothing is consumed (atomic). Checks with
   * the same key are judged with the costs of the earlier ones added. A check with cost > 0 on a
   * key without an entry when the table is full of live entries does not fit (fail closed).
   */
  limit(checks: readonly LimitCheck[], nowMs: number): LimitResult {
    this.callSeq++;
    this.evictions = noEvictions;
    const judgedAtMs = this.judge(checks, nowMs, true);
    let success = true;
    for (let i = 0; i < checks.length; i++) if (!this.scratchFits[i]) success = false;
    const touched: BucketCount[] = [];
    const sizeBefore = this.entryCount;
    if (success) {
      // Mark this call's entries first: an eviction for a new entry never takes one of them.
      for (let i = 0; i < checks.length; i++) {
        const entry = this.scratchEntries[i];
        if (entry !== undefined && checks[i]!.cost > 0) this.touch(entry);
      }
      for (let i = 0; i < checks.length; i++) {
        const check = checks[i]!;
        if (check.cost === 0) continue; // a pure read: not even the clock moves
        this.clockMs = judgedAtMs;
        const entry = this.commit(check, this.scratchEntries[i], judgedAtMs);
        this.scratchEntries[i] = entry;
        const bucket = Math.floor(judgedAtMs / entry.widthMs);
        const bucketTouched: BucketCount = {
          key: check.key,
          limit: check.limit,
          durationMs: check.durationMs,
          bucketStartMs: bucket * entry.widthMs,
          count: entry.counts[bucket % entry.counts.length]!,
          windowCount: this.scratchCounts[i]! + check.cost,
        };
        if (entry.group !== undefined) {
          bucketTouched.group = entry.group;
          bucketTouched.groupEntriesMax = entry.groupEntriesMax;
        }
        touched.push(bucketTouched);
      }
      // Sweep only after the commits: judge() holds entries that a sweep could otherwise delete.
      if (this.entryCount > sizeBefore) this.sweep(limiterSweepStepMax * (this.entryCount - sizeBefore));
    }
    const outcomes: LimitOutcome[] = new Array<LimitOutcome>(checks.length);
    for (let i = 0; i < checks.length; i++) outcomes[i] = this.outcome(checks[i]!, i, judgedAtMs, success);
    const evicted = this.evictions;
    this.evictions = noEvictions;
    return { success, outcomes, touched, judgedAtMs, evicted };
  }

  /**
   * The outcomes limit() would report if nothing were consumed; never changes state (it does not
   * sweep, so on a full table it reports a new key as refused even if a sweep would make room).
   */
  peek(checks: readonly LimitCheck[], nowMs: number): LimitOutcome[] {
    const judgedAtMs = this.judge(checks, nowMs, false);
    const outcomes: LimitOutcome[] = new Array<LimitOutcome>(checks.length);
    for (let i = 0; i < checks.length; i++) outcomes[i] = this.outcome(checks[i]!, i, judgedAtMs, false);
    return outcomes;
  }

  /**
   * Restores a persisted bucket: its count becomes max(current, min(b.count, b.limit)), so
   * restoring never lowers a count (a restart never admits more; a count above the limit, e.g. a
   * reservation, is clamped to the limit, which already refuses every cost > 0). The limiter's
   * clock moves to at least the start of the bucket used. Restore with the same bucketsPerWindow the
   * buckets were written with; a bucket start off this limiter's grid is put in the later bucket
   * it overlaps. Buckets of one key with two durations are two counters. A grouped bucket is
   * restored into its group, evicting the group's least recently used counter past its bound
   * (as live); otherwise restore does not evict, and is bounded by what was persisted.
   */
  restoreBucket(b: BucketCount): void {
    this.restoreInto(b, false);
  }

  /**
   * Restores counts moved from another node's clock (movedBuckets): added to what the bucket
   * holds (clamped to the limit), since a moved count may land in a bucket that holds other
   * admissions, which keeping the higher of the two would lose. Otherwise as restoreBucket.
   */
  restoreMovedBucket(b: BucketCount): void {
    this.restoreInto(b, true);
  }

  private restoreInto(b: BucketCount, adding: boolean): void {
    this.assertCheck(b.key, b.limit, b.durationMs, 0);
    assert(isCount(b.bucketStartMs) && isCount(b.count), "restoreBucket: start and count are non-negative integers");
    if (b.count === 0) return;
    let entry = this.find(b.key, b.durationMs);
    if (entry === undefined) {
      this.callSeq++;
      entry = this.newEntry(b.key, b.limit, b.durationMs, 0, b.group, b.groupEntriesMax);
      this.insert(entry);
    }
    const bucket = Math.ceil(b.bucketStartMs / entry.widthMs);
    if (bucket > entry.headBucket) this.advance(entry, bucket);
    if (bucket <= entry.headBucket - entry.counts.length) return; // older than the ring: long expired
    const slot = bucket % entry.counts.length;
    // A persisted reservation may exceed the limit; `limit` in one bucket already refuses every
    // cost > 0 while the bucket counts, so clamping admits nothing more and keeps cost-0 reads true.
    const held = entry.counts[slot]!;
    entry.counts[slot] = adding ? Math.min(held + b.count, b.limit) : Math.max(held, Math.min(b.count, b.limit));
    // The start of the bucket used (later than b.bucketStartMs when off-grid): admissions must
    // never be judged before the head bucket of any entry.
    this.clockMs = Math.max(this.clockMs, bucket * entry.widthMs);
  }

  /** Every bucket with a count that is still inside its window at max(clock, nowMs). */
  snapshot(nowMs: number): BucketCount[] {
    assert(isCount(nowMs), "snapshot: nowMs is a non-negative integer");
    const atMs = Math.max(this.clockMs, nowMs);
    const buckets: BucketCount[] = [];
    for (const head of this.entries.values()) {
      for (let entry: Entry | undefined = head; entry !== undefined; entry = entry.sibling)
        this.snapshotEntry(entry, atMs, buckets);
    }
    return buckets;
  }

  private snapshotEntry(entry: Entry, atMs: number, buckets: BucketCount[]): void {
    const oldest = this.oldestHeldBucket(entry, atMs);
    for (let bucket = oldest; bucket <= entry.headBucket; bucket++) {
      const count = entry.counts[bucket % entry.counts.length]!;
      if (count === 0) continue;
      const snapshotBucket: BucketCount = {
        key: entry.key,
        limit: entry.limit,
        durationMs: entry.durationMs,
        bucketStartMs: bucket * entry.widthMs,
        count,
      };
      if (entry.group !== undefined) {
        snapshotBucket.group = entry.group;
        snapshotBucket.groupEntriesMax = entry.groupEntriesMax;
      }
      buckets.push(snapshotBucket);
    }
  }

  private assertCheck(key: string, limit: number, durationMs: number, cost: number): void {
    assert(typeof key === "string", "limiter: key is a string");
    assert(isCount(limit), "limiter: limit is a non-negative integer");
    assert(isCount(durationMs) && durationMs >= 1, "limiter: durationMs is a positive integer");
    assert(isCount(cost), "limiter: cost is a non-negative integer");
  }

  /**
   * Fills the scratch arrays (entry, count, fits per check); returns the judging time. With
   * `maySweep`, a call that needs new entries on a full table first sweeps for expired ones.
   */
  private judge(checks: readonly LimitCheck[], nowMs: number, maySweep: boolean): number {
    assert(checks.length <= limiterChecksPerCallMax, "limiter: at most limiterChecksPerCallMax checks per call");
    assert(isCount(nowMs), "limiter: nowMs is a non-negative integer");
    const judgedAtMs = Math.max(this.clockMs, nowMs);
    let entriesNeeded = 0;
    let groupedInCall = 0;
    for (let i = 0; i < checks.length; i++) {
      const check = checks[i]!;
      this.assertCheck(check.key, check.limit, check.durationMs, check.cost);
      assert(
        check.group === undefined ||
          (check.groupEntriesMax !== undefined &&
            Number.isSafeInteger(check.groupEntriesMax) &&
            check.groupEntriesMax >= limiterChecksPerCallMax),
        "limiter: a grouped check has groupEntriesMax >= limiterChecksPerCallMax",
      );
      const entry = this.find(check.key, check.durationMs);
      let count = entry === undefined ? 0 : this.countAt(entry, judgedAtMs);
      let firstOfCounter = true;
      for (let j = 0; j < i; j++) {
        const earlier = checks[j]!;
        if (earlier.key !== check.key || earlier.durationMs !== check.durationMs) continue;
        firstOfCounter = false;
        count += earlier.cost;
      }
      this.scratchEntries[i] = entry;
      this.scratchCounts[i] = count;
      this.scratchFits[i] = count + check.cost <= check.limit;
      if (entry === undefined && check.cost > 0 && firstOfCounter) entriesNeeded++;
      if (entry !== undefined && entry.group !== undefined) groupedInCall++;
    }
    if (entriesNeeded > 0 && this.entryCount + entriesNeeded > this.entriesMax && maySweep) {
      // Evicting by time t is only safe if no later call is judged before t: move the clock.
      this.clockMs = judgedAtMs;
      this.sweep(limiterSweepFullMax);
    }
    // Grouped entries not used by this call can be evicted to make room (see insert()).
    const evictable = maySweep ? Math.max(0, this.grouped.size - groupedInCall) : 0;
    if (entriesNeeded > 0 && this.entryCount + entriesNeeded > this.entriesMax + evictable) this.refuseNewKeys(checks);
    return judgedAtMs;
  }

  private refuseNewKeys(checks: readonly LimitCheck[]): void {
    for (let i = 0; i < checks.length; i++) {
      const check = checks[i]!;
      if (check.cost > 0 && this.scratchEntries[i] === undefined && this.scratchFits[i]) {
        this.scratchFits[i] = false;
        this.refusedForCapacity++;
      }
    }
  }

  private outcome(check: LimitCheck, index: number, judgedAtMs: number, consumed: boolean): LimitOutcome {
    const fits = this.scratchFits[index]!;
    const count = this.scratchCounts[index]!;
    const used = consumed ? count + check.cost : count;
    const refusedForCapacity = !fits && count + check.cost <= check.limit;
    // A key refused for capacity reports no capacity left: the caller must not read it as room.
    const remaining = refusedForCapacity ? 0 : Math.max(0, check.limit - used);
    // After a commit the scratch holds the committed entry; a cost-0 check keeps what judge found.
    // (A cost-0 check after a same-key check that created the entry must look it up.)
    const entry = this.scratchEntries[index] ?? (consumed ? this.find(check.key, check.durationMs) : undefined);
    let resetAtMs: number;
    if (refusedForCapacity) {
      // Fits by count but was refused for capacity: no counter to age out; retry a window later.
      resetAtMs = judgedAtMs + check.durationMs;
    } else if (used + check.cost <= check.limit || entry === undefined) {
      resetAtMs = judgedAtMs; // the next request of this cost fits now
    } else {
      resetAtMs = this.fitTime(entry, judgedAtMs, used, check);
    }
    return { success: fits, limit: check.limit, remaining, resetAtMs };
  }

  /** Sum of the buckets counted at atMs (atMs >= clock, so >= the head bucket's start). */
  private countAt(entry: Entry, atMs: number): number {
    assert(entry.headBucket * entry.widthMs <= atMs, "countAt: no entry's head bucket is after the clock");
    const counts = entry.counts;
    const ringLength = counts.length;
    const oldest = this.oldestHeldBucket(entry, atMs);
    // Bucket numbers are large (Unix ms / width): one modulo, then walk the slots.
    let slot = oldest % ringLength;
    let count = 0;
    for (let left = entry.headBucket - oldest; left >= 0; left--) {
      count += counts[slot]!;
      slot = slot + 1 === ringLength ? 0 : slot + 1;
    }
    return count;
  }

  /** Oldest bucket both counted at atMs and held by the ring (buckets after the head are empty). */
  private oldestHeldBucket(entry: Entry, atMs: number): number {
    const oldestCounted = Math.floor((atMs - entry.durationMs + 1) / entry.widthMs);
    return Math.max(oldestCounted, entry.headBucket - entry.counts.length + 1, 0);
  }

  /** When `bucket` stops being counted: its last ms plus the window. */
  private expiryMs(entry: Entry, bucket: number): number {
    return (bucket + 1) * entry.widthMs + entry.durationMs - 1;
  }

  /** Earliest time >= atMs at which `check.cost` fits as buckets age out (or the empty time). */
  private fitTime(entry: Entry, atMs: number, count: number, check: LimitCheck): number {
    let left = count;
    let emptyAtMs = atMs;
    const ringLength = entry.counts.length;
    const oldest = this.oldestHeldBucket(entry, atMs);
    let slot = oldest % ringLength;
    for (let bucket = oldest; bucket <= entry.headBucket; bucket++) {
      const bucketCount = entry.counts[slot]!;
      slot = slot + 1 === ringLength ? 0 : slot + 1;
      if (bucketCount === 0) continue;
      left -= bucketCount;
      emptyAtMs = this.expiryMs(entry, bucket);
      if (left + check.cost <= check.limit) {
        assert(emptyAtMs > atMs, "fitTime: a counted bucket expires after the judging time");
        return emptyAtMs;
      }
    }
    return emptyAtMs;
  }

  private newEntry(
    key: string,
    limit: number,
    durationMs: number,
    atMs: number,
    group: string | undefined,
    groupEntriesMax: number | undefined,
  ): Entry {
    const widthMs = this.bucketWidthMs(durationMs);
    // Counted buckets at any time span at most ceil(durationMs / widthMs) + 1 buckets.
    const ringLength = Math.ceil(durationMs / widthMs) + 1;
    assert(ringLength <= this.bucketsPerWindow + 1, "newEntry: ring holds at most k + 1 buckets");
    assert(group === undefined || (groupEntriesMax ?? 0) >= 1, "newEntry: a group has a bound");
    return {
      key,
      group,
      groupEntriesMax: group === undefined ? 0 : groupEntriesMax!,
      callSeq: this.callSeq,
      limit,
      durationMs,
      widthMs,
      counts: new Array<number>(ringLength).fill(0),
      headBucket: Math.floor(atMs / widthMs),
      sibling: undefined,
    };
  }

  /** Moves the ring's head to `bucket`, zeroing the slots of the buckets it passes. */
  private advance(entry: Entry, bucket: number): void {
    const ringLength = entry.counts.length;
    const steps = Math.min(bucket - entry.headBucket, ringLength);
    let slot = (entry.headBucket + 1) % ringLength;
    for (let i = 0; i < steps; i++) {
      entry.counts[slot] = 0;
      slot = slot + 1 === ringLength ? 0 : slot + 1;
    }
    entry.headBucket = bucket;
  }

  private commit(check: LimitCheck, judged: Entry | undefined, atMs: number): Entry {
    // judge() found `judged` for this counter; a duplicate check's first one may have created one since.
    let entry = judged ?? this.find(check.key, check.durationMs);
    if (entry === undefined) {
      entry = this.newEntry(check.key, check.limit, check.durationMs, atMs, check.group, check.groupEntriesMax);
      this.insert(entry);
      // judge() refused new keys unless they fit; restore may overfill, but then no key is new here.
      assert(this.entryCount <= this.entriesMax, "limiter: entries within entriesMax");
    }
    entry.limit = check.limit;
    const bucket = Math.floor(atMs / entry.widthMs);
    if (bucket > entry.headBucket) this.advance(entry, bucket);
    assert(bucket === entry.headBucket, "commit: admissions go to the head bucket (the clock is monotone)");
    const slot = bucket % entry.counts.length;
    entry.counts[slot] = entry.counts[slot]! + check.cost;
    return entry;
  }

  /** Marks an entry used by the current call: most recently used in its group. */
  private touch(entry: Entry): void {
    entry.callSeq = this.callSeq;
    if (entry.group === undefined) return;
    const id = counterId(entry.key, entry.durationMs);
    this.grouped.delete(id);
    this.grouped.set(id, entry);
    const members = this.groups.get(entry.group)!;
    members.delete(id);
    members.set(id, entry);
  }

  /** The entry of counter (key, durationMs), if held. */
  private find(key: string, durationMs: number): Entry | undefined {
    let entry = this.entries.get(key);
    while (entry !== undefined && entry.durationMs !== durationMs) entry = entry.sibling;
    return entry;
  }

  /** Adds a new entry, first evicting within its group's bound and the table's (grouped entries only). */
  private insert(entry: Entry): void {
    assert(this.find(entry.key, entry.durationMs) === undefined, "insert: a new counter");
    const id = counterId(entry.key, entry.durationMs);
    if (entry.group !== undefined) {
      let members = this.groups.get(entry.group);
      if (members === undefined) {
        members = new Map<string, Entry>();
        this.groups.set(entry.group, members);
      }
      if (members.size >= entry.groupEntriesMax) this.evictFirst(members);
      assert(members.size < entry.groupEntriesMax, "insert: the group is within its bound");
    }
    if (this.entryCount >= this.entriesMax && this.grouped.size > 0) this.evictFirst(this.grouped);
    // After the evictions: they may have removed this key's head.
    const head = this.entries.get(entry.key);
    if (head === undefined) this.entries.set(entry.key, entry);
    else {
      entry.sibling = head.sibling;
      head.sibling = entry;
    }
    this.entryCount++;
    if (entry.group !== undefined) {
      this.grouped.set(id, entry);
      this.groups.get(entry.group)!.set(id, entry);
    }
  }

  /** Evicts the least recently used entry of `lru` that the current call does not use. */
  private evictFirst(lru: Map<string, Entry>): void {
    for (const entry of lru.values()) {
      if (entry.callSeq === this.callSeq) continue;
      this.remove(entry);
      this.evictedCounters++;
      if (this.evictions === noEvictions) this.evictions = [];
      this.evictions.push({ key: entry.key, durationMs: entry.durationMs });
      return;
    }
  }

  private remove(entry: Entry): void {
    const head = this.entries.get(entry.key)!;
    if (head === entry) {
      if (entry.sibling === undefined) this.entries.delete(entry.key);
      else this.entries.set(entry.key, entry.sibling);
    } else {
      let before = head;
      while (before.sibling !== entry) before = before.sibling!;
      before.sibling = entry.sibling;
    }
    entry.sibling = undefined;
    this.entryCount--;
    if (entry.group === undefined) return;
    const id = counterId(entry.key, entry.durationMs);
    this.grouped.delete(id);
    const members = this.groups.get(entry.group)!;
    members.delete(id);
    if (members.size === 0) this.groups.delete(entry.group);
  }

  /** Examines up to `steps` entries from where the last sweep stopped; deletes expired ones. */
  private sweep(steps: number): void {
    for (let i = 0; i < steps; i++) {
      if (this.sweepCursor === undefined) this.sweepCursor = this.entries.entries();
      const next = this.sweepCursor.next();
      if (next.done === true) {
        this.sweepCursor = undefined;
        if (i > 0 || this.entries.size === 0) return;
        continue;
      }
      // The key's first counter and the rest of its chain (other windows) in one step.
      for (let entry: Entry | undefined = next.value[1]; entry !== undefined;) {
        const sibling: Entry | undefined = entry.sibling;
        if (this.expiryMs(entry, entry.headBucket) <= this.clockMs) this.remove(entry);
        entry = sibling;
      }
    }
  }
}

/**
 * Where a count judged on another node's clock (a takeover's reservations, a hand-back) is restored
 * on this one: one bucket later than it was filed, and never after this node's current bucket. If
 * the two clocks differ by less than a bucket width, the restored bucket is then never earlier
 * than the bucket this node's clock would have filed the admission in, so the count leaves the
 * window no earlier than it should (never more admitted); and a restore never moves this node's
 * limiter clock forward (which would drop the current window of every other key).
 */
export function movedBucketStartMs(bucketStartMs: number, widthMs: number, nowMs: number): number {
  assert(widthMs > 0, "movedBucketStartMs: a positive width");
  const currentStartMs = Math.floor(nowMs / widthMs) * widthMs;
  return Math.max(0, Math.min(bucketStartMs + widthMs, currentStartMs));
}

/**
 * Buckets judged on another node's clock, moved for a restore here (movedBucketStartMs) and summed
 * per key where several land in one bucket (the cap at this node's current bucket may join them;
 * restoreBucket keeps the higher of two counts of one bucket, which would lose one of them).
 */
export function movedBuckets<T extends { key: string; bucketStartMs: number; count: number }>(
  buckets: readonly T[],
  widthMsOf: (bucket: T) => number,
  nowMs: number,
): T[] {
  const merged = new Map<string, T>();
  for (const bucket of buckets) {
    const startMs = movedBucketStartMs(bucket.bucketStartMs, widthMsOf(bucket), nowMs);
    const id = `${bucket.key}\u0000${startMs}`;
    const held = merged.get(id);
    if (held === undefined) merged.set(id, { ...bucket, bucketStartMs: startMs });
    else held.count += bucket.count;
  }
  return [...merged.values()];
}
