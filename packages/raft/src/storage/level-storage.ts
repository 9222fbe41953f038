// Durable storage on LevelDB (classic-level). Layout, one database per node:
//   log!<u64 BE index>  -> [term u64 BE][type u8][data]   (fixed-width keys: byte order == numeric order)
//   meta!hardState      -> msgpack { term, vote, commit }
//   meta!compacted      -> msgpack { index, term } of the entry just before firstIndex
//   snap!meta           -> msgpack { index, term, conf };  snap!data -> the application's bytes
//   snap!piece!<index>!<n> -> piece n of the bytes of the snapshot at <index>, when it is larger
//                          than a piece, taken here or received (then snap!data is absent)
// Every change is ONE atomic batch across the sublevels, except that the pieces of a large
// snapshot go first, one unsynced batch each, and its synced batch (metadata and compaction, or
// the log it replaces) then makes them part of the state. Writes are serialized (abstract-level defines no
// order between overlapping writes). The log is mirrored in memory (LogState) so the core's reads
// stay synchronous; memory changes only after the batch is on disk.

import { Level } from "level";
import { assert } from "../core/assert.js";
import type { ConfState, Entry, HardState, RaftStorageWriter, Snapshot } from "../core/types.js";
import { StorageError } from "../errors.js";
import {
  copyBytes,
  decodeEntryValue,
  decodeHardState,
  decodeLogMark,
  decodeSnapshotMetadata,
  encodeEntryValue,
  encodeRecord,
  type LogMark,
} from "./codec.js";
import { decodeLogKey, encodeLogKey, encodePrefixedLogKey } from "./keys.js";
import { copyConf, LogState, type LogKeep, type LogPlan } from "./log-state.js";

/** Writes queued behind the one in progress; the driver awaits each write, so a handful at most. */
export const pendingWritesMax = 64;

/**
 * Largest piece of a snapshot's bytes written in one batch. The driver queues a snapshot it took
 * and goes on appending; written whole, a 150 MB snapshot held the next append for about half a
 * second (an election timeout). In pieces, an append waits for one piece at most.
 */
export const defaultSnapshotPieceBytes = 4 << 20;

export interface LevelStorageOptions {
  /** Directory of the LevelDB database (created if missing). */
  path: string;
  /** Membership stored on first boot (before any snapshot). Leave empty to let the core use its configured voters. Default: empty. */
  conf?: ConfState;
  /** Entries kept behind a new snapshot so slow followers can catch up from the log. 0 = keep none. Default 0. */
  keepEntries?: number;
  /** Most data bytes of the entries kept behind a new snapshot (so a few large entries are not all kept). Default: no bound. */
  keepBytes?: number;
  /** Bytes per piece of a snapshot taken here (createSnapshot). Default defaultSnapshotPieceBytes. */
  snapshotPieceBytes?: number;
}

type Bytes = Uint8Array;

export class LevelStorage extends LogState implements RaftStorageWriter {
  private tail: Promise<void> = Promise.resolve();
  private pendingWrites = 0;
  private closed = false;
  /** Piece size of the pieced snapshot last read by readSnapshotData (read once from its first piece). */
  private pieceBytesCache: { index: number; bytes: number } | null = null;
  /** The log sublevel's prefix as bytes: log puts and deletes go to the root database with prefixed keys (see write). */
  private readonly logPrefix: Uint8Array;

  private constructor(
    private readonly db: Level<Bytes, Bytes>,
    private readonly logLevel: ReturnType<typeof logSublevel>,
    private readonly metaLevel: ReturnType<typeof recordSublevel>,
    private readonly snapLevel: ReturnType<typeof recordSublevel>,
    private readonly keep: LogKeep,
    private readonly snapshotPieceBytes: number,
  ) {
    super();
    this.logPrefix = new TextEncoder().encode(logLevel.prefix);
    assert(this.logPrefix.byteLength > 0, "level storage: the log sublevel has no prefix");
  }

  static async open(options: LevelStorageOptions): Promise<LevelStorage> {
    const db = new Level<Bytes, Bytes>(options.path, { keyEncoding: "view", valueEncoding: "view" });
    await db.open();
    const storage = new LevelStorage(
      db,
      logSublevel(db),
      recordSublevel(db, "meta"),
      recordSublevel(db, "snap"),
      { entries: options.keepEntries ?? 0, bytes: options.keepBytes ?? Infinity },
      options.snapshotPieceBytes ?? defaultSnapshotPieceBytes,
    );
    assert(
      Number.isSafeInteger(storage.snapshotPieceBytes) && storage.snapshotPieceBytes > 0,
      "level storage: snapshotPieceBytes must be a positive integer",
    );
    try {
      await storage.loadOrInit(options.conf ?? { voters: [], learners: [] });
    } catch (error) {
      await db.close();
      throw error;
    }
    return storage;
  }

  append(entries: readonly Entry[], hardState: HardState | null, sync: boolean): Promise<void> {
    return this.enqueue(() => this.planAppend(entries, hardState), sync);
  }

  /** A snapshot larger than a piece is written in pieces first, as createSnapshot does (so it is read back a piece at a time). */
  applySnapshot(snapshot: Snapshot): Promise<void> {
    const pieced = snapshot.data.byteLength > this.snapshotPieceBytes;
    const record = () => this.enqueue(() => this.planApplySnapshot(snapshot), true, pieced);
    return pieced ? this.writePieces(snapshot.metadata.index, snapshot.data).then(record) : record();
  }

  /**
   * A snapshot larger than a piece is written a piece per batch, each queued only once the previous
   * one is done, so writes issued meanwhile (the driver's appends) go in between; then the synced
   * batch that records it and compacts. A crash before that batch leaves pieces that open() clears.
   */
  createSnapshot(index: number, conf: ConfState, data: Uint8Array): Promise<void> {
    const pieced = data.byteLength > this.snapshotPieceBytes;
    const record = () => this.enqueue(() => this.planCreateSnapshot(index, conf, data, this.keep), true, pieced);
    return pieced ? this.writePieces(index, data).then(record) : record();
  }

  /**
   * Writes the pieces of the snapshot at `index`, one unsynced batch each, each queued once the
   * previous one is done. Refuses (before writing) a snapshot not newer than the held one: its
   * pieces would overwrite the held snapshot's under the same keys.
   */
  private writePieces(index: number, data: Uint8Array): Promise<void> {
    const pieces = Math.ceil(data.byteLength / this.snapshotPieceBytes);
    let written: Promise<void> = Promise.resolve();
    for (let n = 0; n < pieces; n++) {
      const piece = data.subarray(n * this.snapshotPieceBytes, (n + 1) * this.snapshotPieceBytes);
      written = written.then(() =>
        this.enqueueRaw((batch) => {
          if (index <= this.snap.metadata.index) {
            throw new StorageError(
              "RAFT_ERR_SNAPSHOT_OUT_OF_DATE",
              `snapshot at ${index} is not newer than the held one at ${this.snap.metadata.index}`,
            );
          }
          batch.put(pieceKey(index, n), piece, { sublevel: this.snapLevel });
        }),
      );
    }
    return written;
  }

  /**
   * Bytes [offset, offset + length) of the data of the held snapshot at `index`, read from disk and
   * only from the pieces that range falls in: a 1 MiB chunk for a follower reads one 4 MiB piece,
   * not the whole snapshot. Throws RAFT_ERR_SNAPSHOT_OUT_OF_DATE when the snapshot at `index` is not
   * (or stops being, during the read) the one held.
   */
  async readSnapshotData(index: number, offset: number, length: number): Promise<Uint8Array> {
    if (this.closed) throw new StorageError("RAFT_ERR_STORAGE_CLOSED", "level storage is closed");
    const totalBytes = this.snap.data.byteLength;
    assert(
      Number.isSafeInteger(offset) && Number.isSafeInteger(length) && offset >= 0 && length >= 0,
      `readSnapshotData: offset ${offset} and length ${length} must be non-negative integers`,
    );
    this.assertSnapshotHeld(index);
    assert(
      offset + length <= totalBytes,
      `readSnapshotData: ${offset}+${length} is past the data (${totalBytes} bytes)`,
    );
    if (length === 0) return new Uint8Array(0);
    const whole = await this.snapLevel.get("data");
    if (whole !== undefined) {
      this.assertSnapshotHeld(index);
      return copyBytes(whole.subarray(offset, offset + length));
    }
    const pieceBytes = await this.pieceBytesOf(index);
    const firstPiece = Math.floor(offset / pieceBytes);
    const lastPiece = Math.floor((offset + length - 1) / pieceBytes);
    const data = new Uint8Array(length);
    let piece = firstPiece;
    for await (const value of this.snapLevel.values({
      gte: pieceKey(index, firstPiece),
      lte: pieceKey(index, lastPiece),
    })) {
      const pieceStart = piece * pieceBytes;
      const from = Math.max(offset, pieceStart);
      const to = Math.min(offset + length, pieceStart + value.byteLength);
      data.set(value.subarray(from - pieceStart, to - pieceStart), from - offset);
      piece++;
    }
    // A newer snapshot's write clears these pieces before it replaces the held one: a short read
    // while the snapshot is still held means pieces are missing from disk.
    this.assertSnapshotHeld(index);
    if (piece !== lastPiece + 1)
      throw new StorageError("RAFT_ERR_STORAGE_CORRUPT", `snapshot at ${index}: pieces ${piece}..${lastPiece} missing`);
    return data;
  }

  compact(index: number): Promise<void> {
    return this.enqueue(() => this.planCompact(index), true);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.tail.catch(() => undefined);
    await this.db.close();
  }

  /** A batch that changes nothing the log state mirrors (a snapshot's piece), unsynced, in the write queue. */
  private enqueueRaw(fill: (batch: ReturnType<Level<Bytes, Bytes>["batch"]>) => void): Promise<void> {
    if (this.closed) return Promise.reject(new StorageError("RAFT_ERR_STORAGE_CLOSED", "level storage is closed"));
    assert(this.pendingWrites < pendingWritesMax, "level storage: pendingWritesMax overlapping writes");
    this.pendingWrites++;
    const run = this.tail.then(async () => {
      const batch = this.db.batch();
      try {
        fill(batch);
      } catch (error) {
        await batch.close();
        throw error;
      }
      await batch.write({ sync: false });
    });
    this.tail = run.then(
      () => void this.pendingWrites--,
      () => void this.pendingWrites--,
    );
    return run;
  }

  /** Plans against the state left by the previous write (hence inside the queue), writes, then mirrors in memory. */
  /** `pieced`: the plan's snapshot bytes are already on disk in pieces (createSnapshot, applySnapshot). */
  private enqueue(plan: () => LogPlan, sync: boolean, pieced = false): Promise<void> {
    if (this.closed) return Promise.reject(new StorageError("RAFT_ERR_STORAGE_CLOSED", "level storage is closed"));
    assert(
      this.pendingWrites < pendingWritesMax,
      "level storage: pendingWritesMax overlapping writes; the driver must await its writes",
    );
    this.pendingWrites++;
    const run = this.tail.then(async () => {
      const planned = plan();
      await this.write(planned, sync, pieced);
      this.apply(planned);
    });
    this.tail = run.then(
      () => void this.pendingWrites--,
      () => void this.pendingWrites--,
    );
    return run;
  }

  /**
   * Deleted indexes above the new mark must go in the same atomic batch (a stale entry there would be
   * read back as part of the log). Indexes at or below the mark are never read again (open reads
   * after the mark), so they are cleared after the batch by one native range delete: compacting tens
   * of thousands of entries must not cost one JavaScript `del` each on the event loop.
   */
  private async write(plan: LogPlan, sync: boolean, pieced = false): Promise<void> {
    const batch = this.db.batch();
    const atomicFrom = Math.max(plan.deleteFrom, plan.mark.index + 1);
    // Log operations carry the sublevel prefix themselves: identical bytes on disk, without
    // abstract-level's per-operation sublevel delegation (a measurable share of a leader's CPU).
    for (let index = atomicFrom; index <= plan.deleteTo; index++)
      batch.del(encodePrefixedLogKey(this.logPrefix, index));
    for (const entry of plan.put) batch.put(encodePrefixedLogKey(this.logPrefix, entry.index), encodeEntryValue(entry));
    if (plan.hardState !== null) batch.put("hardState", encodeRecord(plan.hardState), { sublevel: this.metaLevel });
    if (plan.mark.index !== this.mark.index)
      batch.put("compacted", encodeRecord(plan.mark), { sublevel: this.metaLevel });
    if (plan.snapshot !== null) {
      batch.put("meta", encodeRecord(plan.snapshot.metadata), { sublevel: this.snapLevel });
      if (pieced)
        batch.del("data", { sublevel: this.snapLevel }); // its pieces, written before, are the data
      else batch.put("data", plan.snapshot.data, { sublevel: this.snapLevel });
    }
    if (batch.length === 0) await batch.close();
    else await batch.write({ sync });
    const clearTo = Math.min(plan.deleteTo, plan.mark.index);
    if (plan.deleteFrom <= clearTo)
      await this.logLevel.clear({ gte: encodeLogKey(plan.deleteFrom), lte: encodeLogKey(clearTo) });
    if (plan.snapshot !== null) await this.clearPiecesExcept(pieced ? plan.snapshot.metadata.index : null);
  }

  /** Deletes every snapshot piece but those of the snapshot at `keep` (a replaced snapshot's, or a crashed write's). */
  private async clearPiecesExcept(keep: number | null): Promise<void> {
    if (keep === null) return this.snapLevel.clear({ gte: piecesPrefix, lt: piecesEnd });
    await this.snapLevel.clear({ gte: piecesPrefix, lt: pieceKeyPrefix(keep) });
    await this.snapLevel.clear({ gt: `${pieceKeyPrefix(keep)}~`, lt: piecesEnd });
  }

  private assertSnapshotHeld(index: number): void {
    if (this.snap.metadata.index !== index)
      throw new StorageError(
        "RAFT_ERR_SNAPSHOT_OUT_OF_DATE",
        `snapshot at ${index} is not the one held (at ${this.snap.metadata.index})`,
      );
  }

  /** Bytes per piece of the pieced snapshot at `index` (its first piece's size: every piece but the last is as large). */
  private async pieceBytesOf(index: number): Promise<number> {
    if (this.pieceBytesCache?.index === index) return this.pieceBytesCache.bytes;
    const first = await this.snapLevel.get(pieceKey(index, 0));
    if (first === undefined || first.byteLength === 0) {
      this.assertSnapshotHeld(index); // cleared because the snapshot at `index` was just replaced
      throw new StorageError("RAFT_ERR_STORAGE_CORRUPT", `snapshot at ${index}: no first piece`);
    }
    this.pieceBytesCache = { index, bytes: first.byteLength };
    return first.byteLength;
  }

  /** The pieces of the snapshot at `index`, joined; null when it has none. */
  private async readPieces(index: number): Promise<Uint8Array | null> {
    const pieces: Uint8Array[] = [];
    for await (const value of this.snapLevel.values({ gte: pieceKeyPrefix(index), lt: `${pieceKeyPrefix(index)}~` }))
      pieces.push(value);
    if (pieces.length === 0) return null;
    const data = new Uint8Array(pieces.reduce((bytes, piece) => bytes + piece.byteLength, 0));
    let at = 0;
    for (const piece of pieces) {
      data.set(piece, at);
      at += piece.byteLength;
    }
    return data;
  }

  private async loadOrInit(conf: ConfState): Promise<void> {
    const snapMeta = await this.snapLevel.get("meta");
    if (snapMeta === undefined) {
      // First boot: record the empty snapshot (carrying the initial membership) durably.
      const snapshot: Snapshot = { metadata: { index: 0, term: 0, conf: copyConf(conf) }, data: new Uint8Array(0) };
      const plan: LogPlan = {
        put: [],
        deleteFrom: 1,
        deleteTo: 0,
        mark: this.mark,
        hardState: this.hardState,
        snapshot,
      };
      await this.write(plan, true);
      this.apply(plan);
      return;
    }
    const hardStateValue = await this.metaLevel.get("hardState");
    const markValue = await this.metaLevel.get("compacted");
    const metadata = decodeSnapshotMetadata(snapMeta);
    const whole = await this.snapLevel.get("data");
    const pieces = whole === undefined ? await this.readPieces(metadata.index) : null;
    // Pieces of a snapshot write cut short by a crash, or of one replaced just before it.
    await this.clearPiecesExcept(pieces === null ? null : metadata.index);
    const snapData = whole ?? pieces;
    const mark: LogMark = markValue === undefined ? { index: 0, term: 0 } : decodeLogMark(markValue);
    await this.logLevel.clear({ lte: encodeLogKey(mark.index) }); // leftovers of a compaction cut short by a crash
    const log = await this.readLog(mark);
    const hardState = hardStateValue === undefined ? { term: 0, vote: "", commit: 0 } : decodeHardState(hardStateValue);
    if (mark.index > metadata.index)
      throw new StorageError(
        "RAFT_ERR_STORAGE_CORRUPT",
        `compacted index ${mark.index} is past the snapshot at ${metadata.index}`,
      );
    this.load({
      hardState,
      snapshot: { metadata, data: snapData === null ? new Uint8Array(0) : copyBytes(snapData) },
      mark,
      log,
    });
  }

  private async readLog(mark: LogMark): Promise<Entry[]> {
    const log: Entry[] = [];
    let expected = mark.index + 1;
    for await (const [key, value] of this.logLevel.iterator({ gt: encodeLogKey(mark.index) })) {
      const index = decodeLogKey(key);
      if (index !== expected)
        throw new StorageError("RAFT_ERR_STORAGE_CORRUPT", `log gap: expected index ${expected}, found ${index}`);
      log.push(decodeEntryValue(index, value));
      expected++;
    }
    return log;
  }
}

/** Keys of snapshot pieces in the snap sublevel: fixed-width decimal, so key order is (index, piece) order. */
const piecesPrefix = "piece!";
const piecesEnd = "piece!~";

function pieceKeyPrefix(index: number): string {
  return `${piecesPrefix}${String(index).padStart(16, "0")}!`;
}

function pieceKey(index: number, piece: number): string {
  return `${pieceKeyPrefix(index)}${String(piece).padStart(10, "0")}`;
}

function logSublevel(db: Level<Bytes, Bytes>) {
  return db.sublevel<Bytes, Bytes>("log", { keyEncoding: "view", valueEncoding: "view" });
}

function recordSublevel(db: Level<Bytes, Bytes>, name: "meta" | "snap") {
  return db.sublevel<string, Bytes>(name, { keyEncoding: "utf8", valueEncoding: "view" });
}
