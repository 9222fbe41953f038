import { assert } from "./assert.js";
import type { Entry, Snapshot } from "./types.js";

/**
 * The part of the log not yet acknowledged as persisted: an optional incoming snapshot and the
 * entries after it (or after storage's last index). `offset` is the index of entries[0].
 */
export class UnstableLog {
  snapshot: Snapshot | null = null;
  entries: Entry[] = [];
  offset: number;

  constructor(offset: number) {
    assert(offset >= 1, "unstable offset must be >= 1");
    this.offset = offset;
  }

  /** The first index, known only if a snapshot is pending. */
  maybeFirstIndex(): number | null {
    return this.snapshot === null ? null : this.snapshot.metadata.index + 1;
  }

  maybeLastIndex(): number | null {
    if (this.entries.length > 0) return this.offset + this.entries.length - 1;
    return this.snapshot === null ? null : this.snapshot.metadata.index;
  }

  maybeTerm(index: number): number | null {
    if (index < this.offset) {
      if (this.snapshot !== null && this.snapshot.metadata.index === index) return this.snapshot.metadata.term;
      return null;
    }
    const last = this.maybeLastIndex();
    if (last === null || index > last) return null;
    const entry = this.entries[index - this.offset];
    assert(entry !== undefined && entry.index === index, "unstable entry index mismatch");
    return entry.term;
  }

  /** Entries up to (index, term) are persisted: drop them, unless they were replaced meanwhile. */
  stableTo(index: number, term: number): void {
    const ownTerm = this.maybeTerm(index);
    if (ownTerm === null || ownTerm !== term || index < this.offset) return;
    this.entries = this.entries.slice(index + 1 - this.offset);
    this.offset = index + 1;
  }

  stableSnapshotTo(index: number): void {
    if (this.snapshot !== null && this.snapshot.metadata.index === index) this.snapshot = null;
  }

  restore(snapshot: Snapshot): void {
    this.offset = snapshot.metadata.index + 1;
    this.entries = [];
    this.snapshot = snapshot;
  }

  /** Appends `entries`, truncating any conflicting suffix first (entries[0] may be anywhere after the last stable index). */
  truncateAndAppend(entries: readonly Entry[]): void {
    const first = entries[0];
    if (first === undefined) return;
    const after = first.index;
    if (after === this.offset + this.entries.length) {
      this.entries.push(...entries);
    } else if (after <= this.offset) {
      // Replaces everything unstable; storage truncates its own suffix when these are persisted.
      this.offset = after;
      this.entries = [...entries];
    } else {
      this.entries = this.entries.slice(0, after - this.offset);
      this.entries.push(...entries);
    }
    assert(this.entries[0]?.index === this.offset, "unstable entries must start at offset");
  }

  slice(lo: number, hi: number): Entry[] {
    assert(lo >= this.offset && hi <= this.offset + this.entries.length && lo <= hi, "unstable slice out of bounds");
    return this.entries.slice(lo - this.offset, hi - this.offset);
  }
}
