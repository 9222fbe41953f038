import { isDeepStrictEqual } from "node:util";
import { assert } from "../core/assert.js";
import { RaftStorageError } from "../core/errors.js";
import { limitSize } from "../core/log.js";
import { joinSnapshotData } from "../core/snapshot-data.js";
import { fillSnapshotChunk, type Message, type ReadyMessage } from "../core/messages.js";
import type {
  ConfState,
  Entry,
  HardState,
  RaftStorage,
  RaftStorageWriter,
  Snapshot,
  SnapshotData,
  SnapshotDataReader,
  SnapshotInfo,
} from "../core/types.js";
import { StorageError } from "../errors.js";

interface StorageState {
  hardState: HardState;
  snapshot: Snapshot;
  /** The entry just before firstIndex (its term stays known); at or before the snapshot index. */
  markIndex: number;
  markTerm: number;
  /** Entries after markIndex, contiguous. */
  entries: Entry[];
}

function cloneState(state: StorageState): StorageState {
  return { ...state, hardState: { ...state.hardState }, entries: [...state.entries] };
}

/**
 * Simulated stable storage. Reads see every write (the live state); only synced writes reach the
 * durable state, and `crash()` throws away everything else, as a power loss would. An fsync makes
 * every earlier write durable too (one file, in order). Entries and snapshots are immutable objects.
 * A snapshot keeps the `keepEntries` entries before it, like the LevelDB storage.
 */
export class SimStorage implements RaftStorage, RaftStorageWriter, SnapshotDataReader {
  private live: StorageState;
  private durable: StorageState;
  /** Snapshots transfers are reading (pinSnapshots), and those of them replaced since; in memory only (a crash forgets them). */
  private pinned: readonly number[] = [];
  private readonly retained = new Map<number, Snapshot>();

  constructor(
    conf: ConfState = { voters: [], learners: [] },
    private readonly keepEntries = 0,
  ) {
    const snapshot: Snapshot = { metadata: { index: 0, term: 0, conf }, data: new Uint8Array(0) };
    this.live = { hardState: { term: 0, vote: "", commit: 0 }, snapshot, markIndex: 0, markTerm: 0, entries: [] };
    this.durable = cloneState(this.live);
  }

  initialState(): { hardState: HardState; conf: ConfState } {
    return { hardState: { ...this.live.hardState }, conf: this.live.snapshot.metadata.conf };
  }

  firstIndex(): number {
    return this.live.markIndex + 1;
  }

  lastIndex(): number {
    return this.live.markIndex + this.live.entries.length;
  }

  term(index: number): number {
    const mark = this.live.markIndex;
    if (index === mark) return this.live.markTerm;
    if (index < mark) throw new RaftStorageError("compacted", `term(${index}) below ${mark}`);
    const entry = this.live.entries[index - mark - 1];
    if (entry === undefined) throw new RaftStorageError("unavailable", `term(${index}) past ${this.lastIndex()}`);
    return entry.term;
  }

  entries(lo: number, hi: number, maxBytes: number): Entry[] {
    if (lo < this.firstIndex()) throw new RaftStorageError("compacted", `entries(${lo}) below ${this.firstIndex()}`);
    if (hi > this.lastIndex() + 1)
      throw new RaftStorageError("unavailable", `entries(.., ${hi}) past ${this.lastIndex()}`);
    const offset = this.firstIndex();
    return limitSize(this.live.entries.slice(lo - offset, hi - offset), maxBytes);
  }

  snapshot(): SnapshotInfo {
    const { metadata, data } = this.live.snapshot;
    return { metadata, totalBytes: data.byteLength };
  }

  /** The held (or a pinned) snapshot's bytes [offset, offset + length), as LevelStorage reads them from disk. */
  snapshotData(index: number, offset: number, length: number): Uint8Array {
    const held = this.live.snapshot;
    const data = held.metadata.index === index ? held.data : this.retained.get(index)?.data;
    if (data === undefined)
      throw new StorageError(
        "RAFT_ERR_SNAPSHOT_OUT_OF_DATE",
        `snapshot at ${index} is neither held (${held.metadata.index} is) nor pinned`,
      );
    assert(offset >= 0 && length >= 0 && offset + length <= data.byteLength, "snapshotData: range past the data");
    return data.slice(offset, offset + length);
  }

  /**
   * A Ready's message as it goes on the simulated wire: a snapshot chunk reference gets its bytes
   * from here, as RaftNode fills it from its storage; null when this snapshot is no longer held
   * (the sender then reports the snapshot failed, as RaftNode does on a failed read).
   */
  fill(message: ReadyMessage): Message | null {
    if (message.type !== "snapRef") return message;
    const index = message.metadata.index;
    if (index !== this.live.snapshot.metadata.index && !this.retained.has(index)) return null;
    return fillSnapshotChunk(message, this.snapshotData(message.metadata.index, message.offset, message.length));
  }

  pinSnapshots(indexes: readonly number[]): void {
    this.pinned = [...indexes];
    for (const index of this.retained.keys()) if (!indexes.includes(index)) this.retained.delete(index);
  }

  /** A newer snapshot replaces the held one: a pinned one stays readable. */
  private replaceSnapshot(snapshot: Snapshot): void {
    const replaced = this.live.snapshot;
    if (this.pinned.includes(replaced.metadata.index)) this.retained.set(replaced.metadata.index, replaced);
    this.live.snapshot = snapshot;
  }

  readSnapshotData(index: number, offset: number, length: number): Promise<Uint8Array> {
    try {
      return Promise.resolve(this.snapshotData(index, offset, length));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  appendSync(entries: readonly Entry[], hardState: HardState | null, sync: boolean): void {
    const first = entries[0];
    if (first !== undefined) {
      const offset = this.firstIndex();
      assert(first.index >= offset && first.index <= this.lastIndex() + 1, `append at ${first.index} leaves a gap`);
      entries.forEach((entry, i) => assert(entry.index === first.index + i, "appended entries must be contiguous"));
      this.live.entries = this.live.entries.slice(0, first.index - offset).concat(entries);
    }
    if (hardState !== null) this.live.hardState = { ...hardState };
    if (sync) this.durable = cloneState(this.live);
  }

  applySnapshotSync(snapshot: Snapshot): void {
    const { index, term } = snapshot.metadata;
    const matches = index >= this.firstIndex() && index <= this.lastIndex() && this.term(index) === term;
    this.live.entries = matches ? this.live.entries.slice(index - this.live.markIndex) : [];
    this.replaceSnapshot(snapshot);
    this.live.markIndex = index;
    this.live.markTerm = term;
    this.live.hardState = { ...this.live.hardState, commit: Math.max(this.live.hardState.commit, index) };
    this.durable = cloneState(this.live);
  }

  /** Records the application's snapshot at `index` (<= last index), compacts up to index - keepEntries, durably. */
  createSnapshotSync(index: number, conf: ConfState, data: Uint8Array): void {
    if (index <= this.live.snapshot.metadata.index) return;
    assert(index <= this.lastIndex(), "snapshot beyond the log");
    this.replaceSnapshot({ metadata: { index, term: this.term(index), conf }, data });
    // As LevelStorage does: the application only snapshots applied (so committed) entries, and a
    // restart must not find a snapshot above its commit index (the driver defers commit-only writes).
    this.live.hardState = { ...this.live.hardState, commit: Math.max(this.live.hardState.commit, index) };
    const compactTo = index - this.keepEntries;
    if (compactTo > this.live.markIndex) {
      this.live.markTerm = this.term(compactTo);
      this.live.entries = this.live.entries.slice(compactTo - this.live.markIndex);
      this.live.markIndex = compactTo;
    }
    this.durable = cloneState(this.live);
  }

  append(entries: readonly Entry[], hardState: HardState | null, sync: boolean): Promise<void> {
    this.appendSync(entries, hardState, sync);
    return Promise.resolve();
  }

  applySnapshot(snapshot: Snapshot): Promise<void> {
    this.applySnapshotSync(snapshot);
    return Promise.resolve();
  }

  createSnapshot(index: number, conf: ConfState, data: SnapshotData): Promise<void> {
    this.createSnapshotSync(index, conf, joinSnapshotData(data));
    return Promise.resolve();
  }

  /** Compaction happens with createSnapshot here (up to index - keepEntries). */
  compact(_index: number): Promise<void> {
    return Promise.resolve();
  }

  close(): Promise<void> {
    return Promise.resolve();
  }

  /** A copy of what is on disk now (a backup, a VM snapshot): starting a node on it later rolls it back. */
  copyDurable(): SimStorage {
    const copy = new SimStorage(undefined, this.keepEntries);
    copy.live = cloneState(this.durable);
    copy.durable = cloneState(this.durable);
    return copy;
  }

  /** Whether `other` holds on disk exactly what this one does (a copy nothing was written to since). */
  sameDurableState(other: SimStorage): boolean {
    return isDeepStrictEqual(this.durable, other.durable);
  }

  /** Power loss: every write not yet synced is gone. */
  crash(): void {
    this.live = cloneState(this.durable);
    this.pinned = [];
    this.retained.clear();
  }
}
