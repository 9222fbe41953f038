import { assert } from "./assert.js";
import { isStorageCompacted } from "./errors.js";
import { UnstableLog } from "./log-unstable.js";
import type { Entry, RaftStorage, Snapshot, SnapshotInfo } from "./types.js";

/** Bytes an entry counts for in size limits (its data; the envelope is small and bounded). */
export function entryBytes(entry: Entry): number {
  return entry.data.byteLength;
}

/** Keeps a prefix of `entries` whose total size is within `maxBytes`, but always at least one entry. */
export function limitSize(entries: Entry[], maxBytes: number): Entry[] {
  let total = 0;
  for (let i = 0; i < entries.length; i++) {
    const entry = entries[i];
    assert(entry !== undefined, "limitSize: hole");
    total += entryBytes(entry);
    if (total > maxBytes && i > 0) return entries.slice(0, i);
  }
  return entries;
}

/**
 * The Raft log: stable storage (read-only here) followed by the unstable tail.
 * Invariants: applied <= committed <= lastIndex; firstIndex-1 <= applied.
 */
export class RaftLog {
  readonly storage: RaftStorage;
  readonly unstable: UnstableLog;
  /** Highest index known to be committed. */
  committed: number;
  /** Highest index the application has acknowledged applying (advance()). */
  applied: number;

  constructor(storage: RaftStorage) {
    this.storage = storage;
    const first = storage.firstIndex();
    const last = storage.lastIndex();
    assert(first >= 1 && last >= first - 1, "storage indexes out of order");
    this.unstable = new UnstableLog(last + 1);
    this.committed = first - 1;
    this.applied = first - 1;
  }

  firstIndex(): number {
    return this.unstable.maybeFirstIndex() ?? this.storage.firstIndex();
  }

  lastIndex(): number {
    return this.unstable.maybeLastIndex() ?? this.storage.lastIndex();
  }

  /** Term at `index`, or null when it is compacted away or past the end. */
  term(index: number): number | null {
    if (index < this.firstIndex() - 1 || index > this.lastIndex()) return null;
    const unstableTerm = this.unstable.maybeTerm(index);
    if (unstableTerm !== null) return unstableTerm;
    try {
      return this.storage.term(index);
    } catch (error) {
      if (isStorageCompacted(error)) return null;
      throw error;
    }
  }

  lastTerm(): number {
    const term = this.term(this.lastIndex());
    assert(term !== null, "the last entry's term must be known");
    return term;
  }

  matchTerm(index: number, term: number): boolean {
    return this.term(index) === term;
  }

  /** A voter grants its vote only to a candidate whose log is at least as up to date (5.4.1). */
  isUpToDate(lastIndex: number, lastTerm: number): boolean {
    const ownTerm = this.lastTerm();
    return lastTerm > ownTerm || (lastTerm === ownTerm && lastIndex >= this.lastIndex());
  }

  /**
   * Follower side of AppendEntries. Returns the new last index matched, or null when (index, logTerm)
   * does not match (the leader must back up).
   */
  maybeAppend(index: number, logTerm: number, committed: number, entries: readonly Entry[]): number | null {
    if (!this.matchTerm(index, logTerm)) return null;
    const lastNewIndex = index + entries.length;
    const conflict = this.findConflict(entries);
    if (conflict !== 0) {
      assert(conflict > this.committed, `conflict at ${conflict} with committed entry (committed ${this.committed})`);
      this.append(entries.slice(conflict - (index + 1)));
    }
    this.commitTo(Math.min(committed, lastNewIndex));
    return lastNewIndex;
  }

  append(entries: readonly Entry[]): number {
    const first = entries[0];
    if (first === undefined) return this.lastIndex();
    assert(first.index - 1 >= this.committed, `append would overwrite committed entry ${first.index}`);
    assert(first.index <= this.lastIndex() + 1, "append leaves a gap");
    for (let i = 1; i < entries.length; i++)
      assert(entries[i]?.index === first.index + i, "append: indexes not contiguous");
    this.unstable.truncateAndAppend(entries);
    return this.lastIndex();
  }

  /** Index of the first entry that conflicts with (or extends) the log, or 0 if all are present. */
  findConflict(entries: readonly Entry[]): number {
    for (const entry of entries) {
      if (!this.matchTerm(entry.index, entry.term)) return entry.index;
    }
    return 0;
  }

  /** The largest index <= `index` whose term is <= `term` (and that term): the rejection hint (etcd's findConflictByTerm). */
  findConflictByTerm(index: number, term: number): { index: number; term: number } {
    let at = Math.min(index, this.lastIndex());
    for (;;) {
      const ownTerm = this.term(at);
      if (ownTerm === null) return { index: at, term: 0 };
      if (ownTerm <= term) return { index: at, term: ownTerm };
      at--;
    }
  }

  /** Entries in [lo, hi) within maxBytes (at least one). Throws RaftStorageError "compacted" below firstIndex. */
  slice(lo: number, hi: number, maxBytes: number): Entry[] {
    assert(lo <= hi && hi <= this.lastIndex() + 1, `slice [${lo}, ${hi}) out of bounds`);
    if (lo === hi) return [];
    let result: Entry[] = [];
    const offset = this.unstable.offset;
    if (lo < offset) {
      result = this.storage.entries(lo, Math.min(hi, offset), maxBytes);
      assert(result.length > 0 && result[0]?.index === lo, "storage returned wrong entries");
      if (result.length < Math.min(hi, offset) - lo) return result; // size limit reached
    }
    if (hi > offset) result = result.concat(this.unstable.slice(Math.max(lo, offset), hi));
    return limitSize(result, maxBytes);
  }

  commitTo(index: number): void {
    if (index <= this.committed) return;
    assert(index <= this.lastIndex(), `commit ${index} beyond last index ${this.lastIndex()}`);
    this.committed = index;
  }

  /** Leader: commit `index` only if its entry is from the current term (5.4.2, Figure 8). */
  maybeCommit(index: number, term: number): boolean {
    if (index > this.committed && this.term(index) === term) {
      this.commitTo(index);
      return true;
    }
    return false;
  }

  appliedTo(index: number): void {
    if (index === 0) return;
    assert(
      index <= this.committed && index >= this.applied,
      `applied ${index} outside [${this.applied}, ${this.committed}]`,
    );
    this.applied = index;
  }

  hasNextCommittedEntries(): boolean {
    return this.committed > Math.max(this.applied, this.firstIndex() - 1) && this.unstable.snapshot === null;
  }

  nextCommittedEntries(maxBytes: number): Entry[] {
    if (!this.hasNextCommittedEntries()) return [];
    const lo = Math.max(this.applied + 1, this.firstIndex());
    return this.slice(lo, this.committed + 1, maxBytes);
  }

  /** The latest snapshot: one received and not yet persisted, else storage's. */
  snapshot(): SnapshotInfo {
    const unstable = this.unstable.snapshot;
    return unstable === null
      ? this.storage.snapshot()
      : { metadata: unstable.metadata, totalBytes: unstable.data.byteLength };
  }

  /** Follower installs a leader's snapshot: everything up to its index is committed. */
  restore(snapshot: Snapshot): void {
    assert(snapshot.metadata.index > this.committed, "restore: snapshot must be beyond commit");
    this.committed = snapshot.metadata.index;
    this.unstable.restore(snapshot);
  }
}
