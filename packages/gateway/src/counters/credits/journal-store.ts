// The lease holder's journal on disk (docs/counters.md, rule 1-3 of the holder): LevelDB sublevel
// `lease`, written in fsynced batches so a spend is durable before its verification is answered
// and a request before it is proposed.
//
// Records are packed: every record appended while the previous pack was being written goes into
// the next one, one put under a key in append order (a msgpack array of records, at most
// packRecordsMax; a key holding a single record is one written before packing, still read). So
// the journal costs one put per fsync, whatever the number of keys and leases that wrote to it.
// A pack is deleted once every lease with records in it is settled (the journal only needs
// leases that are not settled). A pack that outlives the settle of one of its leases (another
// lease keeps it) still holds that lease's records, so the `settled` record is written in the
// next pack, which is kept until every pack it guards is gone: a restart never brings back a
// settled lease. The highest lease
// number ever requested is kept apart (`seqmax`), so a restarted holder never reuses a number. At
// start the journal is read, compacted (compactHolderJournal) and rewritten.
import { compactHolderJournal, type HolderJournalRecord } from "@keyraft/core";
import { decodeValue, encodeValue, logIndexKey, parseLogIndexKey } from "../../store/codec.js";
import { closedError, corruptError, overloadedError } from "../../store/errors.js";
import { GroupCommitWriter } from "../../store/group-commit.js";
import {
  storeSublevel,
  syncedBatchWrite,
  type StoreDb,
  type StoreOp,
  type StoreSublevel,
  type SyncedBatchWrite,
} from "../../store/level-db.js";
const what = "credit lease journal";
const seqMaxKey = "seqmax";

export const leaseJournalDefaults = {
  /** Records waiting for the disk; past it `append` rejects (KEYRAFT_STORE_OVERLOADED, nothing answered). */
  queueEntriesMax: 100_000,
  batchEntriesMax: 4096,
  batchBytesMax: 4 * 1024 * 1024,
  /** Records in one pack (one put); a larger write is split into several packs of one batch. */
  packRecordsMax: 4096,
  /**
   * Records nobody waits for yet (reservations written ahead, spend-reservations.ts) wait this
   * long for others to share their pack, unless a record someone waits for comes first: a lease
   * journal busy only with reservations ahead writes a few packs a second, not one per fsync.
   */
  aheadDelayMs: 20,
} as const;

export interface LeaseJournalOptions {
  onFatal: (error: Error) => void;
  write?: SyncedBatchWrite;
  /** Default leaseJournalDefaults.aheadDelayMs. */
  aheadDelayMs?: number;
}

function isRecord(value: unknown): value is HolderJournalRecord {
  if (typeof value !== "object" || value === null) return false;
  const record = value as Record<string, unknown>;
  return typeof record["t"] === "string" && typeof record["keyId"] === "string" && Number.isSafeInteger(record["seq"]);
}

interface Pack {
  /** Leases (seq) with records in the pack that are not settled. */
  seqs: Set<number>;
  /** Packs still on disk whose settled leases this pack's `settled` records guard. */
  guarding: number;
  /** Packs guarding this one (holding the `settled` records of leases this one still holds). */
  guardedBy: string[];
}

interface Flush {
  done: Promise<void>;
  resolve: () => void;
  reject: (error: unknown) => void;
}

export class LeaseJournalStore {
  private readonly writer: GroupCommitWriter;
  private nextIndex = 1;
  private seqMax = 0;
  /** The packs on disk by key; one is deleted when it holds no lease that is not settled and guards none. */
  private readonly packs = new Map<string, Pack>();
  /** seq -> the keys of the packs holding its records. */
  private readonly packsBySeq = new Map<number, string[]>();
  /** Records appended since the last pack was taken, and the promise their pack resolves. */
  private buffer: HolderJournalRecord[] = [];
  private next: Flush | null = null;
  /** A pack is being written (or a flush is scheduled): new records wait for the next pack. */
  private busy = false;
  /** The buffer holds a record someone waits for: it is written as soon as the disk is free. */
  private urgent = false;
  /** A flush of records written ahead, waiting for `aheadDelayMs` (cleared by an urgent append). */
  private aheadTimer: NodeJS.Timeout | null = null;
  private idleWaiters: Array<() => void> = [];
  private closed = false;
  /** Records enqueued for writing since the start (GET /metrics). */
  recordsWritten = 0;

  private constructor(
    private readonly level: StoreSublevel,
    write: SyncedBatchWrite,
    onFatal: (error: Error) => void,
    private readonly aheadDelayMs: number,
  ) {
    this.writer = new GroupCommitWriter(what, write, leaseJournalDefaults, onFatal);
  }

  /**
   * Opens the journal, compacts it on disk and returns the records a holder restores from
   * (LeaseHolder.restore). The numbering floor is included as a settled request of `seqmax`.
   */
  static async open(
    db: StoreDb,
    options: LeaseJournalOptions,
  ): Promise<{ store: LeaseJournalStore; records: HolderJournalRecord[] }> {
    const level = storeSublevel(db, "lease");
    const store = new LeaseJournalStore(
      level,
      options.write ?? syncedBatchWrite(db),
      options.onFatal,
      options.aheadDelayMs ?? leaseJournalDefaults.aheadDelayMs,
    );
    const loaded: HolderJournalRecord[] = [];
    const stale: StoreOp[] = [];
    let seqMax = 0;
    for await (const [key, value] of level.iterator()) {
      stale.push({ type: "del", sublevel: level, key });
      const decoded = decodeValue(value);
      if (key === seqMaxKey) {
        if (!Number.isSafeInteger(decoded)) throw corruptError(what, "seqmax is not an integer");
        seqMax = Math.max(seqMax, decoded as number);
        continue;
      }
      store.nextIndex = Math.max(store.nextIndex, parseLogIndexKey(key) + 1);
      // A pack, or a single record written before packing.
      for (const record of Array.isArray(decoded) ? (decoded as unknown[]) : [decoded]) {
        if (!isRecord(record)) throw corruptError(what, `record ${key} is malformed`);
        loaded.push(record);
      }
    }
    // A settled lease is done: its records may survive in packs kept for other leases, after
    // the pack of its request was deleted (its `settled` record guards them), so they are dropped
    // here as a whole rather than replayed.
    const settled = new Set<number>();
    for (const record of loaded) if (record.t === "settled") settled.add(record.seq);
    const records = compactHolderJournal(loaded.filter((record) => !settled.has(record.seq)));
    for (const record of records) if (record.t === "request") seqMax = Math.max(seqMax, record.seq);
    if (!records.some((record) => record.t === "request" && record.seq === seqMax) && seqMax > 0) {
      // Keep the numbering: the highest number used, as a lease already settled.
      records.push(
        { t: "request", keyId: "", seq: seqMax },
        { t: "close", keyId: "", seq: seqMax },
        { t: "settled", keyId: "", seq: seqMax },
      );
    }
    // Rewrite: delete what was read, write the compacted records, in one synced batch.
    const { ops } = store.packOps(records);
    await store.writer.enqueue([...stale, ...ops], 0);
    return { store, records };
  }

  /**
   * The ops that write `records` as packs (in order), the settled leases' packs deleted, and the
   * numbering floor raised; updates the bookkeeping as if they were written.
   */
  private packOps(records: readonly HolderJournalRecord[]): { ops: StoreOp[]; bytes: number } {
    const ops: StoreOp[] = [];
    let bytes = 0;
    let seqMaxGrown = false;
    for (let first = 0; first < records.length; first += leaseJournalDefaults.packRecordsMax) {
      const chunk = records.slice(first, first + leaseJournalDefaults.packRecordsMax);
      const key = logIndexKey(this.nextIndex++);
      const pack: Pack = { seqs: new Set<number>(), guarding: 0, guardedBy: [] };
      for (const record of chunk) {
        if (record.t === "settled") {
          // The lease is done: the packs it kept may go; one that stays (for another lease) is
          // guarded by this pack's `settled` record.
          pack.seqs.delete(record.seq);
          for (const packKey of this.packsBySeq.get(record.seq) ?? []) {
            const held = this.packs.get(packKey);
            if (held === undefined) continue; // this pack, or one already deleted
            held.seqs.delete(record.seq);
            if (held.seqs.size === 0 && held.guarding === 0) this.deletePack(packKey, held, ops);
            else {
              held.guardedBy.push(key);
              pack.guarding += 1;
            }
          }
          this.packsBySeq.delete(record.seq);
          continue;
        }
        if (!pack.seqs.has(record.seq)) {
          pack.seqs.add(record.seq);
          const keys = this.packsBySeq.get(record.seq);
          if (keys === undefined) this.packsBySeq.set(record.seq, [key]);
          else if (keys[keys.length - 1] !== key) keys.push(key);
        }
        if (record.t === "request" && record.seq > this.seqMax) {
          this.seqMax = record.seq;
          seqMaxGrown = true;
        }
      }
      // A pack with no lease left to keep and nothing to guard is not written at all.
      if (pack.seqs.size === 0 && pack.guarding === 0) continue;
      const value = encodeValue(chunk);
      ops.push({ type: "put", sublevel: this.level, key, value });
      bytes += value.byteLength;
      this.packs.set(key, pack);
    }
    if (seqMaxGrown) ops.push({ type: "put", sublevel: this.level, key: seqMaxKey, value: encodeValue(this.seqMax) });
    return { ops, bytes };
  }

  /**
   * Appends records after everything appended before; resolves once they are fsynced. Records
   * appended while a pack is being written share the next pack.
   */
  append(records: readonly HolderJournalRecord[]): Promise<void> {
    return this.enqueue(records, true);
  }

  /**
   * As `append`, for records nobody waits for yet (a reservation written ahead): they join the
   * next pack, which waits up to `aheadDelayMs` for other records unless an `append` comes first.
   * Order is kept: every record is written after those appended before it.
   */
  appendAhead(records: readonly HolderJournalRecord[]): Promise<void> {
    return this.enqueue(records, false);
  }

  /** Someone now waits for the records buffered: they are written as soon as the disk is free. */
  hurry(): void {
    if (this.buffer.length === 0) return;
    this.urgent = true;
    if (this.aheadTimer === null) return; // a pack is being written: the buffer follows it at once
    clearTimeout(this.aheadTimer);
    this.aheadTimer = null;
    this.schedule();
  }

  private enqueue(records: readonly HolderJournalRecord[], urgent: boolean): Promise<void> {
    if (records.length === 0) return Promise.resolve();
    if (this.closed) return Promise.reject(closedError(what));
    const failure = this.writer.failed();
    if (failure !== null) return Promise.reject(failure);
    if (this.buffer.length + records.length > leaseJournalDefaults.queueEntriesMax) {
      return Promise.reject(overloadedError(what, leaseJournalDefaults.queueEntriesMax));
    }
    this.recordsWritten += records.length;
    for (const record of records) this.buffer.push(record);
    if (this.next === null) {
      let resolve!: () => void;
      let reject!: (error: unknown) => void;
      const done = new Promise<void>((res, rej) => {
        resolve = res;
        reject = rej;
      });
      this.next = { done, resolve, reject };
    }
    if (urgent) this.urgent = true;
    if (this.aheadTimer !== null && urgent) {
      clearTimeout(this.aheadTimer);
      this.aheadTimer = null;
      this.schedule();
    } else if (!this.busy) this.schedule();
    return this.next.done;
  }

  // Deferred to a microtask so that the records appended in the same run of the event loop share a
  // pack; a buffer of records written ahead only waits `aheadDelayMs` for company.
  private schedule(): void {
    this.busy = true;
    if (this.urgent) {
      queueMicrotask(() => this.flush());
      return;
    }
    this.aheadTimer = setTimeout(() => {
      this.aheadTimer = null;
      this.flush();
    }, this.aheadDelayMs);
  }

  /** Writes the buffered records as the next pack; when it is durable, the records buffered meanwhile follow. */
  private flush(): void {
    const records = this.buffer;
    const flush = this.next;
    this.buffer = [];
    this.next = null;
    this.urgent = false;
    if (flush === null || records.length === 0) {
      this.idle();
      return;
    }
    const { ops, bytes } = this.packOps(records);
    const written = ops.length === 0 ? Promise.resolve() : this.writer.enqueue(ops, bytes);
    written.then(
      () => {
        flush.resolve();
        if (this.buffer.length > 0) this.schedule();
        else this.idle();
      },
      (error: unknown) => {
        flush.reject(error);
        // The writer failed (the process stops): what is buffered can never be written.
        this.next?.reject(error);
        this.next = null;
        this.buffer = [];
        this.idle();
      },
    );
  }

  /** Deletes a pack (in `ops`); the packs that only guarded it and hold nothing else follow. */
  private deletePack(key: string, pack: Pack, ops: StoreOp[]): void {
    this.packs.delete(key);
    ops.push({ type: "del", sublevel: this.level, key });
    for (const guardKey of pack.guardedBy) {
      const guard = this.packs.get(guardKey);
      if (guard === undefined) continue;
      guard.guarding -= 1;
      // A guard only guards packs written before it, so this ends.
      if (guard.guarding === 0 && guard.seqs.size === 0) this.deletePack(guardKey, guard, ops);
    }
  }

  /** Leases with records on disk (for status and tests). */
  leasesOnDisk(): number {
    return this.packsBySeq.size;
  }

  /** Packs on disk (for tests). */
  packsOnDisk(): number {
    return this.packs.size;
  }

  /** Waits for pending appends; later appends are refused. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.aheadTimer !== null) {
      // Records written ahead are written now, not after the delay.
      clearTimeout(this.aheadTimer);
      this.aheadTimer = null;
      this.urgent = true;
      this.schedule();
    }
    if (this.busy) await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
    await this.writer.idle();
  }

  private idle(): void {
    this.busy = false;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const resolve of waiters) resolve();
  }
}
