// The lease holder's journal on disk (docs/counters.md, rule 1-3 of the holder): LevelDB sublevel
// `lease`, one record per key in append order, written in fsynced batches (group commit) so a
// spend is durable before its verification is answered and a request before it is proposed.
//
// Records of a lease are deleted once its settle is applied (the journal only needs leases that
// are not settled); the highest lease number ever requested is kept apart (`seqmax`), so a
// restarted holder never reuses a number. At start the journal is read, compacted
// (compactHolderJournal) and rewritten.
import { assert, compactHolderJournal, type HolderJournalRecord } from "@keyraft/core";
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
  /** Appends waiting for the disk; past it `append` rejects (KEYRAFT_STORE_OVERLOADED, nothing answered). */
  queueEntriesMax: 100_000,
  batchEntriesMax: 4096,
  batchBytesMax: 4 * 1024 * 1024,
  /** Journal records kept per lease (a lease with more spends than this is an invariant failure). */
  recordsPerLeaseMax: 1_000_000,
} as const;

export interface LeaseJournalOptions {
  onFatal: (error: Error) => void;
  write?: SyncedBatchWrite;
}

function isRecord(value: unknown): value is HolderJournalRecord {
  if (typeof value !== "object" || value === null) return false;
  const record = value as Record<string, unknown>;
  return typeof record["t"] === "string" && typeof record["keyId"] === "string" && Number.isSafeInteger(record["seq"]);
}

export class LeaseJournalStore {
  private readonly writer: GroupCommitWriter;
  private nextIndex = 1;
  private seqMax = 0;
  /** seq -> journal keys of its records (deleted together once the lease is settled). */
  private readonly keysBySeq = new Map<number, string[]>();
  private closed = false;
  /** Records enqueued for writing since the start (GET /metrics). */
  recordsWritten = 0;

  private constructor(
    private readonly level: StoreSublevel,
    write: SyncedBatchWrite,
    onFatal: (error: Error) => void,
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
    const store = new LeaseJournalStore(level, options.write ?? syncedBatchWrite(db), options.onFatal);
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
      parseLogIndexKey(key);
      if (!isRecord(decoded)) throw corruptError(what, `record ${key} is malformed`);
      loaded.push(decoded);
    }
    const records = compactHolderJournal(loaded);
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
    const ops: StoreOp[] = [...stale, ...store.recordOps(records)];
    await store.writer.enqueue(ops, 0);
    return { store, records };
  }

  private recordOps(records: readonly HolderJournalRecord[]): StoreOp[] {
    const ops: StoreOp[] = [];
    for (const record of records) {
      if (record.t === "settled") {
        // The lease is done: its records go (the seqmax key keeps the numbering).
        for (const key of this.keysBySeq.get(record.seq) ?? []) ops.push({ type: "del", sublevel: this.level, key });
        this.keysBySeq.delete(record.seq);
        continue;
      }
      const key = logIndexKey(this.nextIndex++);
      ops.push({ type: "put", sublevel: this.level, key, value: encodeValue(record) });
      let keys = this.keysBySeq.get(record.seq);
      if (keys === undefined) {
        keys = [];
        this.keysBySeq.set(record.seq, keys);
      }
      keys.push(key);
      assert(keys.length <= leaseJournalDefaults.recordsPerLeaseMax, "lease journal: records per lease bounded");
      if (record.t === "request" && record.seq > this.seqMax) {
        this.seqMax = record.seq;
        ops.push({ type: "put", sublevel: this.level, key: seqMaxKey, value: encodeValue(record.seq) });
      }
    }
    return ops;
  }

  /** Appends records after everything appended before; resolves once they are fsynced. */
  append(records: readonly HolderJournalRecord[]): Promise<void> {
    if (records.length === 0) return Promise.resolve();
    if (this.closed) return Promise.reject(closedError(what));
    if (this.writer.pendingItems() >= leaseJournalDefaults.queueEntriesMax) {
      return Promise.reject(overloadedError(what, leaseJournalDefaults.queueEntriesMax));
    }
    this.recordsWritten += records.length;
    return this.writer.enqueue(this.recordOps(records), 64 * records.length);
  }

  /** Leases with records on disk (for status and tests). */
  leasesOnDisk(): number {
    return this.keysBySeq.size;
  }

  /** Waits for pending appends; later appends are refused. */
  async close(): Promise<void> {
    this.closed = true;
    await this.writer.idle();
  }
}
