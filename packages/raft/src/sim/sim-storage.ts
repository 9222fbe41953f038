import { assert } from "../core/assert.js";
import { RaftStorageError } from "../core/errors.js";
import { limitSize } from "../core/log.js";
import type { ConfState, Entry, HardState, RaftStorage, RaftStorageWriter, Snapshot } from "../core/types.js";

interface StorageState {
  hardState: HardState;
  snapshot: Snapshot;
  /** Entries after snapshot.metadata.index, contiguous. */
  entries: Entry[];
}

function cloneState(state: StorageState): StorageState {
  return { hardState: { ...state.hardState }, snapshot: state.snapshot, entries: [...state.entries] };
}

/**
 * Simulated stable storage. Reads see every write (the live state); only synced writes reach the
 * durable state, and `crash()` throws away everything else, as a power loss would. An fsync makes
 * every earlier write durable too (one file, in order). Entries and snapshots are immutable objects.
 */
export class SimStorage implements RaftStorage, RaftStorageWriter {
  private live: StorageState;
  private durable: StorageState;

  constructor(conf: ConfState = { voters: [], learners: [] }) {
    const snapshot: Snapshot = { metadata: { index: 0, term: 0, conf }, data: new Uint8Array(0) };
    this.live = { hardState: { term: 0, vote: "", commit: 0 }, snapshot, entries: [] };
    this.durable = cloneState(this.live);
  }

  initialState(): { hardState: HardState; conf: ConfState } {
    return { hardState: { ...this.live.hardState }, conf: this.live.snapshot.metadata.conf };
  }

  firstIndex(): number {
    return this.live.snapshot.metadata.index + 1;
  }

  lastIndex(): number {
    return this.live.snapshot.metadata.index + this.live.entries.length;
  }

  term(index: number): number {
    const snapshotIndex = this.live.snapshot.metadata.index;
    if (index === snapshotIndex) return this.live.snapshot.metadata.term;
    if (index < snapshotIndex) throw new RaftStorageError("compacted", `term(${index}) below ${snapshotIndex}`);
    const entry = this.live.entries[index - snapshotIndex - 1];
    if (entry === undefined) throw new RaftStorageError("unavailable", `term(${index}) past ${this.lastIndex()}`);
    return entry.term;
  }

  entries(lo: number, hi: number, maxBytes: number): Entry[] {
    if (lo < this.firstIndex()) throw new RaftStorageError("compacted", `entries(${lo}) below ${this.firstIndex()}`);
    if (hi > this.lastIndex() + 1) throw new RaftStorageError("unavailable", `entries(.., ${hi}) past ${this.lastIndex()}`);
    const offset = this.live.snapshot.metadata.index + 1;
    return limitSize(this.live.entries.slice(lo - offset, hi - offset), maxBytes);
  }

  snapshot(): Snapshot {
    return this.live.snapshot;
  }

  appendSync(entries: readonly Entry[], hardState: HardState | null, sync: boolean): void {
    const first = entries[0];
    if (first !== undefined) {
      const offset = this.live.snapshot.metadata.index + 1;
      assert(first.index >= offset && first.index <= this.lastIndex() + 1, `append at ${first.index} leaves a gap`);
      entries.forEach((entry, i) => assert(entry.index === first.index + i, "appended entries must be contiguous"));
      this.live.entries = this.live.entries.slice(0, first.index - offset).concat(entries);
    }
    if (hardState !== null) this.live.hardState = { ...hardState };
    if (sync) this.durable = cloneState(this.live);
  }

  applySnapshotSync(snapshot: Snapshot): void {
    const { index, term } = snapshot.metadata;
    const kept = index <= this.lastIndex() && index >= this.firstIndex() && this.term(index) === term
      ? this.live.entries.slice(index - this.live.snapshot.metadata.index)
      : [];
    this.live.snapshot = snapshot;
    this.live.entries = kept;
    this.live.hardState = { ...this.live.hardState, commit: Math.max(this.live.hardState.commit, index) };
    this.durable = cloneState(this.live);
  }

  /** Records the application's snapshot at `index` (<= last index) and makes it durable. */
  createSnapshotSync(index: number, conf: ConfState, data: Uint8Array): void {
    const snapshotIndex = this.live.snapshot.metadata.index;
    if (index <= snapshotIndex) return;
    assert(index <= this.lastIndex(), "snapshot beyond the log");
    const term = this.term(index);
    this.live.snapshot = { metadata: { index, term, conf }, data };
    this.live.entries = this.live.entries.slice(index - snapshotIndex);
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

  createSnapshot(index: number, conf: ConfState, data: Uint8Array): Promise<void> {
    this.createSnapshotSync(index, conf, data);
    return Promise.resolve();
  }

  /** Compaction happens with createSnapshot here (the log starts right after the snapshot). */
  compact(_index: number): Promise<void> {
    return Promise.resolve();
  }

  close(): Promise<void> {
    return Promise.resolve();
  }

  /** Power loss: every write not yet synced is gone. */
  crash(): void {
    this.live = cloneState(this.durable);
  }

  /** Durable hard state (for checks). */
  durableHardState(): HardState {
    return { ...this.durable.hardState };
  }
}
