// Storage in memory only, for tests and the simulator: same semantics as LevelStorage, no disk.

import type { ConfState, Entry, HardState, RaftStorageWriter, Snapshot } from "../core/types.js";
import { StorageError } from "../errors.js";
import { copyConf, LogState, type LogKeep } from "./log-state.js";

export interface MemoryStorageOptions {
  /** Membership before any snapshot; leave empty to let the core use its configured voters. Default: empty. */
  conf?: ConfState;
  /** Entries kept behind a new snapshot so slow followers can still catch up from the log. 0 = keep none. Default 0. */
  keepEntries?: number;
  /** Most data bytes of the entries kept behind a new snapshot. Default: no bound. */
  keepBytes?: number;
}

export class MemoryStorage extends LogState implements RaftStorageWriter {
  private readonly keep: LogKeep;
  private closed = false;

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
    return this.run(() => this.apply(this.planApplySnapshot(snapshot)));
  }

  createSnapshot(index: number, conf: ConfState, data: Uint8Array): Promise<void> {
    return this.run(() => this.apply(this.planCreateSnapshot(index, conf, data, this.keep)));
  }

  compact(index: number): Promise<void> {
    return this.run(() => this.apply(this.planCompact(index)));
  }

  close(): Promise<void> {
    this.closed = true;
    return Promise.resolve();
  }

  private run(change: () => void): Promise<void> {
    if (this.closed) return Promise.reject(new StorageError("RAFT_ERR_STORAGE_CLOSED", "memory storage is closed"));
    try {
      change();
      return Promise.resolve();
    } catch (error) {
      return Promise.reject(error);
    }
  }
}
