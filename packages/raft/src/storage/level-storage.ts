// Durable storage on LevelDB (classic-level). Layout, one database per node:
//   log!<u64 BE index>  -> [term u64 BE][type u8][data]   (fixed-width keys: byte order == numeric order)
//   meta!hardState      -> msgpack { term, vote, commit }
//   meta!compacted      -> msgpack { index, term } of the entry just before firstIndex
//   snap!meta           -> msgpack { v: 2, index, term, conf, totalBytes, pieces, pieceBytes }
//                          (version 1, still read: { index, term, conf })
//   snap!data           -> the application's bytes, when they fit in one piece (pieces: 0)
//   snapshot-pieces/<index>-<n>.piece -> piece n of the bytes of the snapshot at <index>, when it
//                          is larger than a piece, taken here or received (then snap!data is
//                          absent); a file beside the LevelDB files (piece-files.ts says why)
//   snap!piece!<index>!<n> -> the same, as releases before piece files wrote it (still read)
// Every change is ONE atomic batch across the sublevels, except that the pieces of a large
// snapshot go first, one file each, synced, outside the write queue (one snapshot written at a
// time), and its synced batch (metadata and compaction, or
// the log it replaces) then makes them part of the state. Writes are serialized (abstract-level defines no
// order between overlapping writes). The log is mirrored in memory (LogState) so the core's reads
// stay synchronous; memory changes only after the batch is on disk. The snapshot's bytes are not:
// they are read from disk a range at a time (readSnapshotData), and open() checks that the layout
// snap!meta records is all there (the pieces are written unsynced).

import { Level } from "level";
import { assert } from "../core/assert.js";
import type {
  ConfState,
  Entry,
  HardState,
  RaftStorageWriter,
  Snapshot,
  SnapshotData,
  SnapshotDataReader,
  SnapshotMetadata,
} from "../core/types.js";
import { joinSnapshotData, snapshotDataBytes } from "../core/snapshot-data.js";
import { StorageError } from "../errors.js";
import {
  copyBytes,
  decodeEntryValue,
  decodeHardState,
  decodeLogMark,
  decodeSnapshotRecord,
  encodeEntryValue,
  encodeRecord,
  encodeSnapshotRecord,
  type LogMark,
  type SnapshotLayout,
} from "./codec.js";
import { decodeLogKey, encodeLogKey, encodePrefixedLogKey } from "./keys.js";
import { copyConf, LogState, type LogKeep, type LogPlan } from "./log-state.js";
import { PieceFiles } from "./piece-files.js";

/** Writes queued behind the one in progress; the driver awaits each write, so a handful at most. */
export const pendingWritesMax = 64;

/**
 * Largest piece of a snapshot's bytes written in one batch. The driver queues a snapshot it took
 * and goes on appending; written whole, a 150 MB snapshot held the next append for about half a
 * second (an election timeout). In pieces, an append waits for one piece at most.
 */
export const defaultSnapshotPieceBytes = 4 << 20;
/** Pieces one read of a held snapshot asks LevelDB for at once (at most this many pieces' bytes held). */
const pieceReadsInFlight = 4;

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

export class LevelStorage extends LogState implements RaftStorageWriter, SnapshotDataReader {
  private tail: Promise<void> = Promise.resolve();
  private pendingWrites = 0;
  /** The snapshot whose pieces and record are being written, if any (oneSnapshotWrite). */
  private snapshotWriting: SnapshotWriting | null = null;
  private closed = false;
  /** Where the held snapshot's bytes are on disk. */
  private layout: SnapshotLayout = { totalBytes: 0, pieces: 0, pieceBytes: 0, inFiles: false };
  /**
   * Counts up once before a batch that replaces the held snapshot is written and once after memory
   * follows it: odd while the disk may hold another snapshot than the one memory says is held. A
   * read of the snapshot's bytes that starts at an odd count or sees it change may have met a
   * replaced snapshot's deleted bytes: it is out of date, not corrupt.
   */
  private snapshotEpoch = 0;
  /** Snapshots transfers are reading (pinSnapshots). */
  private pinned: readonly number[] = [];
  /**
   * Pinned snapshots replaced since: their pieces stay on disk until unpinned (a whole one's bytes,
   * at most a piece, are kept here: snap!data is overwritten by the next snapshot).
   */
  private readonly retained = new Map<number, Retained>();
  /** The piece readPieceRange read last (a piece's key names its snapshot: it never goes stale, it is only dropped). */
  private lastPiece: { index: number; piece: number; value: Uint8Array } | null = null;

  /**
   * The held snapshot's bytes as open() read them to check them, for the first readSnapshotData
   * (a node's start reads them all at once): one read of the snapshot instead of two. Let go at
   * that first read, whatever it asks.
   */
  private openedData: { index: number; data: Uint8Array } | null = null;
  /** The log sublevel's prefix as bytes: log puts and deletes go to the root database with prefixed keys (see write). */
  private readonly logPrefix: Uint8Array;

  private constructor(
    private readonly db: Level<Bytes, Bytes>,
    private readonly logLevel: ReturnType<typeof logSublevel>,
    private readonly metaLevel: ReturnType<typeof recordSublevel>,
    private readonly snapLevel: ReturnType<typeof recordSublevel>,
    private readonly pieceFiles: PieceFiles,
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
    let pieceFiles: PieceFiles;
    try {
      pieceFiles = await PieceFiles.open(options.path);
    } catch (error) {
      await db.close();
      throw error;
    }
    const storage = new LevelStorage(
      db,
      logSublevel(db),
      recordSublevel(db, "meta"),
      recordSublevel(db, "snap"),
      pieceFiles,
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
    this.openedData = null; // another snapshot is about to be held
    const layout = this.layoutOf(snapshot.data.byteLength);
    const record = () => this.enqueue(() => this.planApplySnapshot(snapshot), true, layout);
    return this.oneSnapshotWrite(snapshot.metadata.index, async (writing) => {
      if (layout.pieces > 0) await this.writePieces(writing, new PieceCutter(snapshot.data), layout);
      await record();
    });
  }

  /**
   * A snapshot larger than a piece is written a piece per batch, each queued only once the previous
   * one is done, so writes issued meanwhile (the driver's appends) go in between; then the synced
   * batch that records it and compacts. A crash before that batch leaves pieces that open() clears.
   * Given as a list, the pieces are cut from it and each part is let go once cut: the whole
   * snapshot never exists in one array.
   */
  createSnapshot(index: number, conf: ConfState, data: SnapshotData): Promise<void> {
    this.openedData = null; // another snapshot is about to be held
    const layout = this.layoutOf(snapshotDataBytes(data));
    if (layout.pieces === 0) {
      const whole = joinSnapshotData(data);
      return this.oneSnapshotWrite(index, () =>
        this.enqueue(() => this.planCreateSnapshot(index, conf, whole.byteLength, whole, this.keep), true, layout),
      );
    }
    // No closure below holds `data`: the cutter lets each part go once its bytes are written.
    const cutter = new PieceCutter(data);
    return this.oneSnapshotWrite(index, async (writing) => {
      await this.writePieces(writing, cutter, layout);
      await this.enqueue(() => this.planCreateSnapshot(index, conf, layout.totalBytes, null, this.keep), true, layout);
    });
  }

  /**
   * Runs the write of the snapshot at `index` (its pieces, then the batch that records it and
   * clears other pieces) once no other snapshot's write is under way. Two at once could not be
   * told apart on disk: pieces of the same index would overwrite each other's files, and the batch
   * of the first to finish would clear the other's pieces written so far, which would then be
   * recorded incomplete (a node taking its own snapshot while it receives the leader's). A write
   * under way of a snapshot not newer than `index` stops at its next piece (out of date).
   */
  private async oneSnapshotWrite(index: number, write: (writing: SnapshotWriting) => Promise<void>): Promise<void> {
    while (this.snapshotWriting !== null) {
      const other = this.snapshotWriting;
      if (other.index <= index) other.superseded = true;
      await other.done.catch(() => undefined);
      if (this.snapshotWriting === other) this.snapshotWriting = null;
    }
    const writing: SnapshotWriting = { index, superseded: false, done: Promise.resolve() };
    writing.done = write(writing).catch(async (error: unknown) => {
      // Its pieces written so far go before the next write starts: left, they would be taken for
      // pieces of a later snapshot of the same index (open refuses a snapshot with pieces past its
      // own). None of them is the held snapshot's: a write never starts at or below the held index.
      if (index !== this.snap.metadata.index && !this.closed) await this.pieceFiles.clear(index).catch(() => undefined);
      throw error;
    });
    this.snapshotWriting = writing;
    try {
      await writing.done;
    } finally {
      if (this.snapshotWriting === writing) this.snapshotWriting = null;
    }
  }

  /** Whole when the bytes fit in one piece; else in pieces of snapshotPieceBytes. */
  private layoutOf(totalBytes: number): SnapshotLayout {
    if (totalBytes <= this.snapshotPieceBytes) return { totalBytes, pieces: 0, pieceBytes: 0, inFiles: false };
    const pieces = Math.ceil(totalBytes / this.snapshotPieceBytes);
    return { totalBytes, pieces, pieceBytes: this.snapshotPieceBytes, inFiles: true };
  }

  /**
   * Writes the pieces of the snapshot being written, a file each, synced one by one, outside the
   * write queue: appends never wait for a piece (oneSnapshotWrite keeps other snapshot writes, and
   * the clears of their batches, away meanwhile). Refuses (before each piece) a snapshot not newer
   * than the held one, or superseded by a newer one waiting to be written: its pieces would be of
   * no use, or overwrite the held snapshot's under the same names.
   */
  private async writePieces(writing: SnapshotWriting, cutter: PieceCutter, layout: SnapshotLayout): Promise<void> {
    assert(layout.inFiles, "level storage: new pieces are written as files");
    const index = writing.index;
    for (let n = 0; n < layout.pieces; n++) {
      if (this.closed) throw new StorageError("RAFT_ERR_STORAGE_CLOSED", "level storage is closed");
      if (writing.superseded || index <= this.snap.metadata.index) {
        throw new StorageError(
          "RAFT_ERR_SNAPSHOT_OUT_OF_DATE",
          writing.superseded
            ? `snapshot at ${index} was superseded by a newer one while it was written`
            : `snapshot at ${index} is not newer than the held one at ${this.snap.metadata.index}`,
        );
      }
      const piece = cutter.next(Math.min(layout.pieceBytes, layout.totalBytes - n * layout.pieceBytes));
      await this.pieceFiles.write(index, n, piece);
      await this.pieceFiles.syncPiece(index, n);
    }
    assert(cutter.done(), "level storage: a snapshot's pieces left bytes over");
    await this.pieceFiles.syncDir();
  }

  /**
   * Bytes [offset, offset + length) of the data of the held snapshot at `index`, read from disk and
   * only from the pieces that range falls in: a 1 MiB chunk for a follower reads one 4 MiB piece,
   * not the whole snapshot. Rejects with RAFT_ERR_SNAPSHOT_OUT_OF_DATE when the snapshot at `index`
   * is not (or stops being, during the read) the one held, RAFT_ERR_STORAGE_CORRUPT when bytes of
   * the held one are missing.
   */
  async readSnapshotData(index: number, offset: number, length: number): Promise<Uint8Array> {
    if (this.closed) throw new StorageError("RAFT_ERR_STORAGE_CLOSED", "level storage is closed");
    assert(
      Number.isSafeInteger(offset) && Number.isSafeInteger(length) && offset >= 0 && length >= 0,
      `readSnapshotData: offset ${offset} and length ${length} must be non-negative integers`,
    );
    const opened = this.openedData;
    this.openedData = null;
    if (opened !== null && opened.index === index && offset === 0 && length === opened.data.byteLength) {
      this.assertSnapshotHeld(index);
      return opened.data;
    }
    const retained = this.retained.get(index);
    if (retained === undefined) this.assertSnapshotHeld(index);
    const layout = retained?.layout ?? this.layout;
    assert(
      offset + length <= layout.totalBytes,
      `readSnapshotData: ${offset}+${length} is past the data (${layout.totalBytes} bytes)`,
    );
    if (length === 0) return new Uint8Array(0);
    if (retained?.whole) return copyBytes(retained.whole.subarray(offset, offset + length));
    const epoch = this.snapshotEpoch;
    if (layout.pieces === 0) {
      // snap!data holds whichever snapshot is held: a replacement under way or done meanwhile may
      // have put another's bytes there.
      if (epoch % 2 === 1) throw this.replacedWhileRead(index);
      const data = await this.readWhole(offset, length);
      if (this.snapshotEpoch !== epoch) throw this.replacedWhileRead(index);
      if (typeof data === "string") throw new StorageError("RAFT_ERR_STORAGE_CORRUPT", `snapshot at ${index}: ${data}`);
      return data;
    }
    // A piece's key names its snapshot: what is read is this snapshot's, whatever happened meanwhile.
    const data = await this.readPieceRange(index, layout, offset, length);
    if (typeof data !== "string") return data;
    // Missing pieces of a snapshot replaced (and not pinned) or unpinned meanwhile were deleted on purpose.
    const held = index === this.snap.metadata.index && this.snapshotEpoch === epoch && epoch % 2 === 0;
    if (!held && !this.retained.has(index)) throw this.replacedWhileRead(index);
    throw new StorageError("RAFT_ERR_STORAGE_CORRUPT", `snapshot at ${index}: ${data}`);
  }

  pinSnapshots(indexes: readonly number[]): void {
    this.pinned = [...indexes];
    const released = [...this.retained.keys()].filter((index) => !indexes.includes(index));
    if (released.length === 0 || this.closed) return;
    for (const index of released) this.retained.delete(index);
    if (this.lastPiece !== null && released.includes(this.lastPiece.index)) this.lastPiece = null;
    // In the write queue: a snapshot write in progress decides what it keeps against `retained`.
    this.tail = this.tail
      .then(async () => {
        for (const index of released) {
          await this.snapLevel.clear({ gte: pieceKeyPrefix(index), lt: `${pieceKeyPrefix(index)}~` });
          await this.pieceFiles.clear(index);
        }
      })
      .catch(() => undefined); // leftovers are cleared on open
  }

  private replacedWhileRead(index: number): StorageError {
    return new StorageError(
      "RAFT_ERR_SNAPSHOT_OUT_OF_DATE",
      `snapshot at ${index}: replaced while its bytes were read`,
    );
  }

  /** Bytes of snap!data, or what is wrong with it. */
  private async readWhole(offset: number, length: number): Promise<Uint8Array | string> {
    const whole = await this.snapLevel.get("data");
    if (whole === undefined || whole.byteLength < offset + length) return "snap!data missing or short";
    return copyBytes(whole.subarray(offset, offset + length));
  }

  /**
   * Bytes [offset, offset + length) from the pieces they fall in, or what is missing. The last
   * piece read is kept: a transfer's chunks (1 MiB) go through a piece (4 MiB) in order, and
   * reading it from LevelDB once instead of once per chunk saves three quarters of the reads.
   */
  private async readPieceRange(
    index: number,
    layout: SnapshotLayout,
    offset: number,
    length: number,
  ): Promise<Uint8Array | string> {
    const firstPiece = Math.floor(offset / layout.pieceBytes);
    const lastPiece = Math.floor((offset + length - 1) / layout.pieceBytes);
    const data = new Uint8Array(length);
    let problem: string | null = null;
    await this.eachPiece(index, layout.inFiles, firstPiece, lastPiece, (piece, value) => {
      if (value === undefined) {
        problem = `piece ${piece} is missing`;
        return false;
      }
      this.lastPiece = { index, piece, value };
      const pieceStart = piece * layout.pieceBytes;
      const from = Math.max(offset, pieceStart);
      const to = Math.min(offset + length, pieceStart + value.byteLength);
      if (to <= from) {
        problem = `piece ${piece} is short`;
        return false;
      }
      data.set(value.subarray(from - pieceStart, to - pieceStart), from - offset);
      return true;
    });
    if (problem !== null) return problem;
    return data;
  }

  compact(index: number): Promise<void> {
    return this.enqueue(() => this.planCompact(index), true);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.openedData = null;
    await this.snapshotWriting?.done.catch(() => undefined); // its pieces stop at the next one
    await this.tail.catch(() => undefined);
    await this.db.close();
  }

  /**
   * Plans against the state left by the previous write (hence inside the queue), writes, then
   * mirrors in memory. `layout`: where the plan's snapshot bytes go (pieces: already on disk).
   */
  private enqueue(plan: () => LogPlan, sync: boolean, layout: SnapshotLayout | null = null): Promise<void> {
    if (this.closed) return Promise.reject(new StorageError("RAFT_ERR_STORAGE_CLOSED", "level storage is closed"));
    assert(
      this.pendingWrites < pendingWritesMax,
      "level storage: pendingWritesMax overlapping writes; the driver must await its writes",
    );
    this.pendingWrites++;
    const run = this.tail.then(async () => {
      const planned = plan();
      const retain = await this.write(planned, sync, layout);
      this.applyWithLayout(planned, layout, retain);
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
  private async write(plan: LogPlan, sync: boolean, layout: SnapshotLayout | null): Promise<Retained | null> {
    // A pinned snapshot this one replaces stays readable: its pieces are not cleared, its whole bytes kept.
    const replaced = this.snap.metadata.index;
    let retain: Retained | null = null;
    if (plan.snapshot !== null && this.pinned.includes(replaced)) {
      const whole = this.layout.pieces === 0 ? await this.snapLevel.get("data") : undefined;
      retain = { index: replaced, layout: this.layout, whole: whole === undefined ? null : copyBytes(whole) };
    }
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
      const { info, data } = plan.snapshot;
      assert(
        layout !== null && layout.totalBytes === info.totalBytes,
        "level storage: a snapshot's write without its layout",
      );
      batch.put("meta", encodeSnapshotRecord(info.metadata, layout), { sublevel: this.snapLevel });
      if (layout.pieces > 0)
        batch.del("data", { sublevel: this.snapLevel }); // its pieces, written before, are the data
      else {
        assert(
          data !== null && data.byteLength === info.totalBytes,
          "level storage: a whole snapshot without its bytes",
        );
        batch.put("data", data, { sublevel: this.snapLevel });
      }
      this.snapshotEpoch++; // before the batch: a read of the held snapshot's bytes must see it replaced
    }
    if (batch.length === 0) await batch.close();
    else await batch.write({ sync });
    const clearTo = Math.min(plan.deleteTo, plan.mark.index);
    if (plan.deleteFrom <= clearTo)
      await this.logLevel.clear({ gte: encodeLogKey(plan.deleteFrom), lte: encodeLogKey(clearTo) });
    if (plan.snapshot !== null && layout !== null) {
      const keep = [...this.retained.keys()];
      if (layout.pieces > 0) keep.push(plan.snapshot.info.metadata.index);
      if (retain !== null) keep.push(retain.index);
      await this.clearPiecesExcept(keep);
    }
    return retain;
  }

  private applyWithLayout(plan: LogPlan, layout: SnapshotLayout | null, retain: Retained | null): void {
    this.apply(plan);
    if (plan.snapshot === null) return;
    assert(layout !== null, "level storage: a snapshot applied without its layout");
    if (retain !== null) this.retained.set(retain.index, retain);
    this.layout = layout;
    this.snapshotEpoch++; // even again: memory holds what the disk holds
    assert(this.snapshotEpoch % 2 === 0, "level storage: snapshot epoch out of step");
  }

  /** Deletes every snapshot piece but those of the snapshots at `keep` (a replaced snapshot's, or a crashed write's). */
  private async clearPiecesExcept(keep: readonly number[]): Promise<void> {
    if (this.lastPiece !== null && !keep.includes(this.lastPiece.index)) this.lastPiece = null;
    await this.pieceFiles.clearExcept(keep);
    let from = piecesPrefix;
    for (const index of [...new Set(keep)].sort((a, b) => a - b)) {
      await this.snapLevel.clear({ gte: from, lt: pieceKeyPrefix(index) });
      from = `${pieceKeyPrefix(index)}~`;
    }
    await this.snapLevel.clear({ gte: from, lt: piecesEnd });
  }

  private assertSnapshotHeld(index: number): void {
    if (this.snap.metadata.index !== index)
      throw new StorageError(
        "RAFT_ERR_SNAPSHOT_OUT_OF_DATE",
        `snapshot at ${index} is not the one held (at ${this.snap.metadata.index})`,
      );
  }

  private async loadOrInit(conf: ConfState): Promise<void> {
    const snapMeta = await this.snapLevel.get("meta");
    if (snapMeta === undefined) {
      // First boot: record the empty snapshot (carrying the initial membership) durably.
      const metadata = { index: 0, term: 0, conf: copyConf(conf) };
      const plan: LogPlan = {
        put: [],
        deleteFrom: 1,
        deleteTo: 0,
        mark: this.mark,
        hardState: this.hardState,
        snapshot: { info: { metadata, totalBytes: 0 }, data: new Uint8Array(0) },
      };
      const layout = this.layoutOf(0);
      await this.write(plan, true, layout);
      this.applyWithLayout(plan, layout, null);
      return;
    }
    const hardStateValue = await this.metaLevel.get("hardState");
    const markValue = await this.metaLevel.get("compacted");
    const record = decodeSnapshotRecord(snapMeta);
    const metadata = record.metadata;
    const layout =
      record.layout === null ? await this.findLayout(metadata) : await this.verifyLayout(metadata, record.layout);
    // Pieces of a snapshot write cut short by a crash, or of one replaced just before it.
    await this.clearPiecesExcept(layout.pieces > 0 ? [metadata.index] : []);
    const mark: LogMark = markValue === undefined ? { index: 0, term: 0 } : decodeLogMark(markValue);
    await this.logLevel.clear({ lte: encodeLogKey(mark.index) }); // leftovers of a compaction cut short by a crash
    const log = await this.readLog(mark);
    const hardState = hardStateValue === undefined ? { term: 0, vote: "", commit: 0 } : decodeHardState(hardStateValue);
    if (mark.index > metadata.index)
      throw new StorageError(
        "RAFT_ERR_STORAGE_CORRUPT",
        `compacted index ${mark.index} is past the snapshot at ${metadata.index}`,
      );
    this.load({ hardState, snapshot: { metadata, totalBytes: layout.totalBytes }, mark, log });
    this.layout = layout;
  }

  /**
   * The snapshot's bytes are all there as snap!meta records them. Each piece was written by one
   * batch (atomic: whole or absent) or is a file synced before the record was written, and a
   * piece's key or file name says its place, so pieces 0..pieces-1 with their sizes, and none after
   * them, prove the whole: a crash that lost unsynced pieces, or a
   * copied directory missing some, is found here rather than when a follower asks for the bytes.
   */
  private async verifyLayout(metadata: SnapshotMetadata, layout: SnapshotLayout): Promise<SnapshotLayout> {
    const incomplete = (what: string) =>
      new StorageError("RAFT_ERR_STORAGE_CORRUPT", `snapshot at ${metadata.index}: ${what}; the node cannot serve it`);
    if (layout.pieces === 0) {
      const whole = await this.snapLevel.get("data");
      if (whole === undefined) throw incomplete("snap!data is missing");
      if (whole.byteLength !== layout.totalBytes)
        throw incomplete(`snap!data has ${whole.byteLength} bytes, its record ${layout.totalBytes}`);
      return layout;
    }
    // Every piece is read (listing the keys would read them from disk all the same: LevelDB keeps
    // values beside their keys), and the bytes are kept for the node's start, which reads them next.
    const lastBytes = layout.totalBytes - (layout.pieces - 1) * layout.pieceBytes;
    const data = new Uint8Array(layout.totalBytes);
    const missing: number[] = [];
    await this.eachPiece(metadata.index, layout.inFiles, 0, layout.pieces - 1, (n, value) => {
      if (value === undefined) {
        missing.push(n);
        return true;
      }
      const expected = n === layout.pieces - 1 ? lastBytes : layout.pieceBytes;
      if (value.byteLength !== expected)
        throw incomplete(
          `${n === layout.pieces - 1 ? "its last piece" : `piece ${n}`} has ${value.byteLength} bytes, not ${expected}`,
        );
      data.set(value, n * layout.pieceBytes);
      return true;
    });
    if (missing.length > 0)
      throw incomplete(
        `piece ${missing[0]} is missing (${layout.pieces - missing.length} of its ${layout.pieces} pieces on disk)`,
      );
    const extra = layout.inFiles
      ? await this.pieceFiles.has(metadata.index, layout.pieces)
      : await this.snapLevel.has(pieceKey(metadata.index, layout.pieces));
    if (extra) throw incomplete(`more pieces on disk than its ${layout.pieces}`);
    this.openedData = { index: metadata.index, data };
    return layout;
  }

  /**
   * Reads pieces first..last of the snapshot at `index` in order, a few in flight (LevelDB reads on
   * its own threads, so this thread copies one piece while the next ones are read), and hands each
   * to `take` (undefined: missing) until it returns false.
   */
  private async eachPiece(
    index: number,
    inFiles: boolean,
    first: number,
    last: number,
    take: (piece: number, value: Uint8Array | undefined) => boolean,
  ): Promise<void> {
    const readPiece = (piece: number): Promise<Uint8Array | undefined | Error> => {
      const cached = this.lastPiece;
      if (cached !== null && cached.index === index && cached.piece === piece) return Promise.resolve(cached.value);
      // Settled as a value: a read still in flight when this one stops early rejects unobserved.
      const read = inFiles ? this.pieceFiles.read(index, piece) : this.snapLevel.get(pieceKey(index, piece));
      return read.catch((error: unknown) => toError(error));
    };
    const reads = new Map<number, Promise<Uint8Array | undefined | Error>>();
    let issued = first;
    for (let piece = first; piece <= last; piece++) {
      for (; issued <= last && issued < piece + pieceReadsInFlight; issued++) reads.set(issued, readPiece(issued));
      const value = await reads.get(piece)!;
      reads.delete(piece);
      if (value instanceof Error) throw value;
      if (!take(piece, value)) return;
    }
  }

  /**
   * A version-1 snap!meta record has no layout: it is worked out from the bytes on disk (snap!data,
   * else the pieces, which must run 0..n-1 with every piece but the last as long as the first).
   */
  private async findLayout(metadata: SnapshotMetadata): Promise<SnapshotLayout> {
    const whole = await this.snapLevel.get("data");
    if (whole !== undefined) return { totalBytes: whole.byteLength, pieces: 0, pieceBytes: 0, inFiles: false };
    let pieces = 0;
    let totalBytes = 0;
    let pieceBytes = 0;
    let lastBytes = 0;
    for await (const [key, value] of this.snapLevel.iterator({
      gte: pieceKeyPrefix(metadata.index),
      lt: `${pieceKeyPrefix(metadata.index)}~`,
    })) {
      if (key !== pieceKey(metadata.index, pieces) || (pieces > 0 && lastBytes !== pieceBytes))
        throw new StorageError("RAFT_ERR_STORAGE_CORRUPT", `snapshot at ${metadata.index}: piece ${pieces} is missing`);
      if (pieces === 0) pieceBytes = value.byteLength;
      lastBytes = value.byteLength;
      totalBytes += value.byteLength;
      pieces++;
    }
    if (pieces === 0 && metadata.index > 0)
      throw new StorageError("RAFT_ERR_STORAGE_CORRUPT", `snapshot at ${metadata.index}: its bytes are missing`);
    return { totalBytes, pieces, pieceBytes: pieces === 0 ? 0 : pieceBytes, inFiles: false };
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

/**
 * Cuts consecutive pieces from a snapshot's bytes given as one array or a list: a piece within one
 * part is a view of it, one across parts a copy; a part is let go once it is cut through.
 */
class PieceCutter {
  private readonly parts: (Uint8Array | undefined)[];
  /** The part the next byte is in; the parts before it are let go (undefined). */
  private part = 0;
  /** Offset in parts[part] of the next byte. */
  private at = 0;

  constructor(data: SnapshotData) {
    // A snapshot of a large key table is hundreds of thousands of views: the list is walked by
    // index, never shifted (a shift per part made cutting a 146 MB snapshot take seconds).
    this.parts = data instanceof Uint8Array ? [data] : Array.from(data);
    this.skipEmpty();
  }

  next(length: number): Uint8Array {
    const first = this.parts[this.part];
    if (first !== undefined && first.byteLength - this.at >= length) {
      const piece = first.subarray(this.at, this.at + length);
      this.advance(length);
      return piece;
    }
    const piece = new Uint8Array(length);
    let filled = 0;
    while (filled < length) {
      const part = this.parts[this.part];
      assert(part !== undefined, "level storage: a snapshot's pieces past its bytes");
      const take = Math.min(length - filled, part.byteLength - this.at);
      piece.set(part.subarray(this.at, this.at + take), filled);
      filled += take;
      this.advance(take);
    }
    return piece;
  }

  done(): boolean {
    return this.part >= this.parts.length;
  }

  private advance(bytes: number): void {
    this.at += bytes;
    this.skipEmpty();
  }

  /** Moves past parts cut through (and empty ones), letting each go. */
  private skipEmpty(): void {
    let part = this.parts[this.part];
    while (part !== undefined && this.at >= part.byteLength) {
      this.at -= part.byteLength;
      this.parts[this.part] = undefined;
      this.part++;
      part = this.parts[this.part];
    }
  }
}

/** The snapshot LevelStorage is writing (oneSnapshotWrite). */
interface SnapshotWriting {
  index: number;
  /** A newer snapshot waits to be written: this one stops at its next piece. */
  superseded: boolean;
  done: Promise<void>;
}

/** A replaced snapshot kept readable while pinned. */
interface Retained {
  index: number;
  layout: SnapshotLayout;
  /** The bytes of a whole (unpieced) one. */
  whole: Uint8Array | null;
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

function toError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}
