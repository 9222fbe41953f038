// What the Ready loop hands to the applier (step 3 of the Ready contract, done asynchronously): a
// snapshot from the leader to install, or committed entries to apply, in log order. The loop goes
// on with the next Ready (appends, heartbeats, acknowledgements, commits) while the state machine
// works through the queue, so a large install or a bulk import never holds up replication.

import { assert } from "../core/assert.js";
import type { Entry, Snapshot } from "../core/types.js";

export type ApplyWork = { kind: "snapshot"; snapshot: Snapshot } | { kind: "entries"; entries: readonly Entry[] };

/**
 * Bounds of the backlog. Past either one the loop stops taking Readies until the applier is back
 * under it (RaftNode.waitForApplier): memory stays bounded when a node applies more slowly than it
 * commits. A Ready hands at most maxCommittedSizePerReadyBytes, so the backlog exceeds a bound by
 * one Ready at most. A snapshot counts as one entry and none of its bytes: the core held them already,
 * and waiting for its install is exactly what the queue is for.
 */
export const applyQueueLimits = {
  entriesMax: 100_000,
  bytesMax: 64 << 20,
} as const;

export class ApplyQueue {
  private items: ApplyWork[] = [];
  private head = 0;
  private entryCount = 0;
  private byteCount = 0;

  /** Entries (a snapshot counts as one) not yet taken by the applier. */
  get entries(): number {
    return this.entryCount;
  }

  get bytes(): number {
    return this.byteCount;
  }

  get empty(): boolean {
    return this.head === this.items.length;
  }

  /** True when the loop must let the applier catch up before it hands more. */
  get backlogged(): boolean {
    return this.entryCount > applyQueueLimits.entriesMax || this.byteCount > applyQueueLimits.bytesMax;
  }

  push(work: ApplyWork): void {
    assert(!this.backlogged, "apply queue: work handed over while backlogged; wait for the applier first");
    if (work.kind === "entries" && work.entries.length === 0) return;
    const last = this.lastIndex();
    const first = work.kind === "snapshot" ? work.snapshot.metadata.index : (work.entries[0]?.index ?? 0);
    // Entries follow each other; a snapshot from the leader is always past what was handed before.
    assert(
      last === null || (work.kind === "snapshot" ? first > last : first === last + 1),
      `apply queue: ${work.kind} at ${first} does not follow ${last}`,
    );
    this.items.push(work);
    this.entryCount += work.kind === "snapshot" ? 1 : work.entries.length;
    this.byteCount += work.kind === "snapshot" ? 0 : entriesBytes(work.entries);
  }

  shift(): ApplyWork | undefined {
    if (this.head === this.items.length) return undefined;
    const work = this.items[this.head];
    this.items[this.head] = undefined as unknown as ApplyWork; // let the entries go
    this.head++;
    if (this.head === this.items.length) {
      this.items = [];
      this.head = 0;
    }
    if (work === undefined) return undefined;
    this.entryCount -= work.kind === "snapshot" ? 1 : work.entries.length;
    this.byteCount -= work.kind === "snapshot" ? 0 : entriesBytes(work.entries);
    assert(this.entryCount >= 0 && this.byteCount >= 0, "apply queue: negative backlog");
    return work;
  }

  private lastIndex(): number | null {
    const last = this.items[this.items.length - 1];
    if (this.head === this.items.length || last === undefined) return null;
    return last.kind === "snapshot"
      ? last.snapshot.metadata.index
      : (last.entries[last.entries.length - 1]?.index ?? null);
  }
}

function entriesBytes(entries: readonly Entry[]): number {
  let bytes = 0;
  for (const entry of entries) bytes += entry.data.byteLength;
  return bytes;
}
