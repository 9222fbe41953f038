// Storage in memory only, for tests and the simulator: same semantics as LevelStorage, no disk.

import { assert } from "../core/assert.js";
import { joinSnapshotData } from "../core/snapshot-data.js";
import type {
  ConfState,
  Entry,
  HardState,
  RaftStorageWriter,
  Snapshot,
  SnapshotData,
  SnapshotDataReader,
} from "../core/types.js";
import { StorageError } from "../errors.js";
import { copyConf, LogState, type LogKeep, type LogPlan } from "./log-state.js";

export interface MemoryStorageOptions {
  /** Membership before any snapshot; leave empty to let the core use its configured voters. Default: empty. */
  conf?: ConfState;
  /** Entries kept behind a new snapshot so slow followers can still catch up from the log. 0 = keep none. Default 0. */
  keepEntries?: number;
  /** Most data bytes of the entries kept behind a new snapshot. Default: no bound. */
  keepBytes?: number;
}

export class MemoryStorage extends LogState implements RaftStorageWriter, SnapshotDataReader {
  private readonly keep: LogKeep;
  private closed = false;
  /** The held snapshot's bytes (LevelStorage keeps them on disk). */
  private snapData: Uint8Array = new Uint8Array(0);
  /** Snapshots that transfers are reading (pinSnapshots), and the bytes of those replaced since. */
  private pinned: readonly number[] = [];
  private readonly retained = new Map<number, Uint8Array>();

  constructor(options: MemoryStorageOptions = {}) {
    super();
    this.keep = { entries: options.keepEntries ?? 0, bytes: options.keepBytes ?? Infinity };
    if (options.conf !== undefined)
      this.snap = { ...this.snap, metadata: { ...this.snap.metadata, conf: copyConf(options.conf) } };
  }

  append(entries: readonly Entry[], hardState: HardState | null, _sync: boolean): Promise<void> {
    return this.run(() => this.apply(this.planAppend(entries, hardState)));
  }

  applySnapshot(snapshot: Snapshot): Promise<void> {
    return this.run(() => this.replaceSnapshot(this.planApplySnapshot(snapshot), snapshot.data));
  }

  createSnapshot(index: number, conf: ConfState, data: SnapshotData): Promise<void> {
    const bytes = joinSnapshotData(data);
    return this.run(() =>
      this.replaceSnapshot(this.planCreateSnapshot(index, conf, bytes.byteLength, bytes, this.keep), bytes),
    );
  }

  private replaceSnapshot(plan: LogPlan, data: Uint8Array): void {
    const replaced = this.snap.metadata.index;
    this.apply(plan);
    if (this.pinned.includes(replaced)) this.retained.set(replaced, this.snapData);
    this.snapData = data;
  }

  pinSnapshots(indexes: readonly number[]): void {
    this.pinned = [...indexes];
    for (const index of this.retained.keys()) if (!indexes.includes(index)) this.retained.delete(index);
  }

  readSnapshotData(index: number, offset: number, length: number): Promise<Uint8Array> {
    return this.run(() => this.snapshotData(index, offset, length));
  }

  /** readSnapshotData, synchronously (for drivers that step the core themselves, as the simulators do). */
  snapshotData(index: number, offset: number, length: number): Uint8Array {
    const data = index === this.snap.metadata.index ? this.snapData : this.retained.get(index);
    if (data === undefined)
      throw new StorageError(
        "RAFT_ERR_SNAPSHOT_OUT_OF_DATE",
        `snapshot at ${index} is not the one held (at ${this.snap.metadata.index}) nor a pinned one`,
      );
    assert(
      Number.isSafeInteger(offset) && Number.isSafeInteger(length) && offset >= 0 && length >= 0,
      `readSnapshotData: offset ${offset} and length ${length} must be non-negative integers`,
    );
    assert(offset + length <= data.byteLength, `readSnapshotData: ${offset}+${length} is past the data`);
    return data.slice(offset, offset + length);
  }

  compact(index: number): Promise<void> {
    return this.run(() => this.apply(this.planCompact(index)));
  }

  close(): Promise<void> {
    this.closed = true;
    return Promise.resolve();
  }

  private run<T>(work: () => T): Promise<T> {
    if (this.closed) return Promise.reject(new StorageError("RAFT_ERR_STORAGE_CLOSED", "memory storage is closed"));
    try {
      return Promise.resolve(work());
    } catch (error) {
      return Promise.reject(error);
    }
  }
}
