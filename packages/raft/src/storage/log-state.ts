// The in-memory image of stable storage, shared by MemoryStorage and LevelStorage. Reads are
// synchronous (the RaftStorage contract); every mutation is first planned (pure, no change), so
// LevelStorage can make the plan durable and only then apply it here.

import { assert } from "../core/assert.js";
import { RaftStorageError } from "../core/errors.js";
import type { ConfState, Entry, HardState, RaftStorage, Snapshot, SnapshotInfo } from "../core/types.js";
import { StorageError } from "../errors.js";
import type { LogMark } from "./codec.js";

/** Most entries one append may carry; the core's Ready is bounded far below this. */
export const appendEntriesMax = 1 << 20;

/** A planned change: entries to write, an inclusive index range to delete, the new marks. */
export interface LogPlan {
  put: Entry[];
  /** Inclusive range of log indexes to delete from disk; empty when deleteFrom > deleteTo. */
  deleteFrom: number;
  deleteTo: number;
  mark: LogMark;
  hardState: HardState | null;
  /** The snapshot to record: its bytes are written (or were, in pieces) by the storage, and not kept here. */
  snapshot: SnapshotWrite | null;
}

/** A snapshot to record: `data` null when its bytes are already on disk (in pieces). */
export interface SnapshotWrite {
  info: SnapshotInfo;
  data: Uint8Array | null;
}

/** What a new snapshot keeps of the log behind it, so slow followers can catch up from the log. */
export interface LogKeep {
  /** Most entries kept. */
  entries: number;
  /** Most data bytes kept (the entries' payloads); Infinity: no bound. */
  bytes: number;
}

export class LogState implements RaftStorage {
  hardState: HardState = { term: 0, vote: "", commit: 0 };
  /** The latest snapshot's metadata and size: its bytes are the storage's to keep (on disk for LevelStorage). */
  snap: SnapshotInfo = { metadata: { index: 0, term: 0, conf: { voters: [], learners: [] } }, totalBytes: 0 };
  /** The entry just before firstIndex: its term must stay known for the log-matching check. */
  mark: LogMark = { index: 0, term: 0 };
  /** log[i].index === mark.index + 1 + i. */
  private log: Entry[] = [];

  initialState(): { hardState: HardState; conf: ConfState } {
    return { hardState: { ...this.hardState }, conf: copyConf(this.snap.metadata.conf) };
  }

  firstIndex(): number {
    return this.mark.index + 1;
  }

  lastIndex(): number {
    return this.mark.index + this.log.length;
  }

  term(index: number): number {
    if (index < this.mark.index)
      throw new RaftStorageError("compacted", `term(${index}): below firstIndex-1 (${this.mark.index})`);
    if (index > this.lastIndex())
      throw new RaftStorageError("unavailable", `term(${index}): past lastIndex (${this.lastIndex()})`);
    if (index === this.mark.index) return this.mark.term;
    const entry = this.log[index - this.mark.index - 1];
    assert(entry !== undefined && entry.index === index, `log state: entry ${index} out of place`);
    return entry.term;
  }

  entries(lo: number, hi: number, maxBytes: number): Entry[] {
    assert(lo <= hi, `entries(${lo}, ${hi}): lo must not exceed hi`);
    if (lo <= this.mark.index)
      throw new RaftStorageError("compacted", `entries(${lo}): below firstIndex (${this.firstIndex()})`);
    if (hi > this.lastIndex() + 1)
      throw new RaftStorageError("unavailable", `entries(.., ${hi}): past lastIndex (${this.lastIndex()})`);
    const result: Entry[] = [];
    let bytes = 0;
    for (let index = lo; index < hi; index++) {
      const entry = this.log[index - this.mark.index - 1];
      assert(entry !== undefined && entry.index === index, `log state: entry ${index} out of place`);
      bytes += entry.data.byteLength;
      if (result.length > 0 && bytes > maxBytes) break; // always at least one entry
      result.push(entry);
    }
    return result;
  }

  snapshot(): SnapshotInfo {
    return this.snap;
  }

  /** Appending overwrites any suffix from entries[0].index; entries at or below the mark are already compacted and dropped. */
  planAppend(entries: readonly Entry[], hardState: HardState | null): LogPlan {
    assert(entries.length <= appendEntriesMax, `append: ${entries.length} entries is above appendEntriesMax`);
    assertContiguous(entries);
    const put = entries.filter((entry) => entry.index > this.mark.index);
    const first = put[0];
    const last = put[put.length - 1];
    let deleteFrom = 1;
    let deleteTo = 0;
    if (first !== undefined && last !== undefined) {
      assert(
        first.index <= this.lastIndex() + 1,
        `append: gap between lastIndex ${this.lastIndex()} and ${first.index}`,
      );
      deleteFrom = last.index + 1;
      deleteTo = this.lastIndex();
    }
    return { put, deleteFrom, deleteTo, mark: this.mark, hardState, snapshot: null };
  }

  /** Keeps the entries after the snapshot when the log already holds the snapshot's last entry; otherwise drops the whole log. */
  planApplySnapshot(snapshot: Snapshot): LogPlan {
    const { index, term } = snapshot.metadata;
    if (index <= this.snap.metadata.index) {
      throw new StorageError(
        "RAFT_ERR_SNAPSHOT_OUT_OF_DATE",
        `snapshot at ${index} is not newer than the held one at ${this.snap.metadata.index}`,
      );
    }
    const matches = index >= this.mark.index && index <= this.lastIndex() && this.term(index) === term;
    const deleteTo = matches ? index : this.lastIndex();
    // A snapshot only ever covers committed entries, so the commit index can never be below it.
    const hardState = this.hardState.commit >= index ? null : { ...this.hardState, commit: index };
    return {
      put: [],
      deleteFrom: this.firstIndex(),
      deleteTo,
      mark: { index, term },
      hardState,
      snapshot: { info: snapshotInfo(snapshot), data: snapshot.data },
    };
  }

  /** Discards entries up to and including `index`; never past the snapshot, which must cover what is discarded. */
  planCompact(index: number): LogPlan {
    if (index <= this.mark.index)
      return { put: [], deleteFrom: 1, deleteTo: 0, mark: this.mark, hardState: null, snapshot: null };
    assert(index <= this.snap.metadata.index, `compact(${index}): past the snapshot at ${this.snap.metadata.index}`);
    assert(index <= this.lastIndex(), `compact(${index}): past lastIndex ${this.lastIndex()}`);
    return {
      put: [],
      deleteFrom: this.firstIndex(),
      deleteTo: index,
      mark: { index, term: this.term(index) },
      hardState: null,
      snapshot: null,
    };
  }

  /**
   * Records the application's snapshot at `index` and compacts the entries behind it, keeping at
   * most `keep.entries` entries and, of those, only as many as fit in `keep.bytes` of data: a few
   * large entries (a bulk import) must not stay in memory for the sake of an entry count.
   */
  planCreateSnapshot(
    index: number,
    conf: ConfState,
    totalBytes: number,
    data: Uint8Array | null,
    keep: LogKeep,
  ): LogPlan {
    assert(data === null || data.byteLength === totalBytes, "createSnapshot: data of another size");
    if (index <= this.snap.metadata.index) {
      throw new StorageError(
        "RAFT_ERR_SNAPSHOT_OUT_OF_DATE",
        `snapshot at ${index} is not newer than the held one at ${this.snap.metadata.index}`,
      );
    }
    if (index > this.lastIndex())
      throw new RaftStorageError("unavailable", `createSnapshot(${index}): past lastIndex (${this.lastIndex()})`);
    const snapshot: SnapshotWrite = {
      info: { metadata: { index, term: this.term(index), conf: copyConf(conf) }, totalBytes },
      data,
    };
    const compactTo = this.keptFrom(index, keep) - 1;
    const compacts = compactTo > this.mark.index;
    return {
      put: [],
      deleteFrom: this.firstIndex(),
      deleteTo: compacts ? compactTo : 0,
      mark: compacts ? { index: compactTo, term: this.term(compactTo) } : this.mark,
      // The application only snapshots applied (so committed) entries: commit is at least `index`.
      hardState: this.hardState.commit >= index ? null : { ...this.hardState, commit: index },
      snapshot,
    };
  }

  /** The first index kept behind a snapshot at `index` (index + 1 when none is kept). */
  private keptFrom(index: number, keep: LogKeep): number {
    let first = index + 1;
    let bytes = 0;
    const lowest = Math.max(index - keep.entries + 1, this.firstIndex());
    for (let candidate = index; candidate >= lowest; candidate--) {
      const entry = this.log[candidate - this.mark.index - 1];
      assert(entry !== undefined && entry.index === candidate, `log state: entry ${candidate} out of place`);
      bytes += entry.data.byteLength;
      if (bytes > keep.bytes) break;
      first = candidate;
    }
    return first;
  }

  /** Applies a plan made by one of the plan* methods against the current state (no other change in between). */
  apply(plan: LogPlan): void {
    if (plan.snapshot !== null) this.snap = plan.snapshot.info;
    if (plan.hardState !== null) this.hardState = { ...plan.hardState };
    const first = plan.put[0];
    if (first !== undefined) {
      this.log.length = first.index - this.mark.index - 1; // truncate the conflicting suffix
      for (const entry of plan.put) this.log.push(entry);
    } else if (plan.deleteFrom <= plan.deleteTo) {
      assert(plan.deleteFrom === this.firstIndex(), "log state: only a prefix is deleted without a put");
      const drop = plan.deleteTo - this.mark.index;
      this.log = drop >= this.log.length ? [] : this.log.slice(drop);
    }
    this.mark = { ...plan.mark };
    assert(this.mark.index <= this.snap.metadata.index, "log state: compacted past the snapshot");
    assert(
      this.log.length === 0 || this.log[0]?.index === this.mark.index + 1,
      "log state: first entry does not follow the mark",
    );
  }

  /** Used by LevelStorage on open: installs what was read from disk. */
  load(state: { hardState: HardState; snapshot: SnapshotInfo; mark: LogMark; log: Entry[] }): void {
    assertContiguous(state.log);
    assert(
      state.log.length === 0 || state.log[0]?.index === state.mark.index + 1,
      "load: log does not follow the mark",
    );
    this.hardState = state.hardState;
    this.snap = state.snapshot;
    this.mark = state.mark;
    this.log = state.log;
  }
}

function assertContiguous(entries: readonly Entry[]): void {
  for (let i = 1; i < entries.length; i++) {
    assert(entries[i]?.index === (entries[i - 1]?.index ?? 0) + 1, "entries must have contiguous indexes");
  }
}

/** What storage keeps of a snapshot in memory: everything but its bytes. */
export function snapshotInfo(snapshot: Snapshot): SnapshotInfo {
  return { metadata: snapshot.metadata, totalBytes: snapshot.data.byteLength };
}

export function copyConf(conf: ConfState): ConfState {
  return { voters: [...conf.voters], learners: [...conf.learners] };
}
