import type { ReadyMessage } from "./messages.js";
import type { Entry, HardState, NodeId, Snapshot } from "./types.js";

export type Role = "follower" | "preCandidate" | "candidate" | "leader";

/** Volatile state; reported in a Ready only when it changed. */
export interface SoftState {
  /** The known leader, "" if none. */
  leader: NodeId;
  role: Role;
}

/** A read that is linearizable once the local applied index reaches `index`. */
export interface ReadState {
  index: number;
  context: Uint8Array;
}

/**
 * One batch of work for the driver. The Ready contract (docs/raft-core.md):
 * 0. `messagesBeforePersist` may be sent at once, before or while persisting (or with `messages`);
 * 1. persist `snapshot` (if any), then `entries` and `hardState` in ONE atomic batch, fsynced when `mustSync`;
 * 2. then send `messages` (they may depend on what was just persisted);
 * 3. then hand `snapshot` (if any) and then `committedEntries` to the application, to install and
 *    apply in log order, each once;
 * 4. then call `advance(ready)`.
 * Between `ready()` and `advance()` no other RawNode method may be called (buffer inputs meanwhile).
 * Step 3 may finish after advance(): the application may still be installing or applying while the
 * driver takes the next Readies (their committed entries queue behind). advance() counts what was
 * handed over as applied: the core then hands out later entries and applies membership changes.
 * Whatever depends on the application's state (answering a proposal or a read, taking a snapshot
 * and the membership recorded with it) must follow what the application has really applied.
 */
export interface Ready {
  /** Set when leader or role changed since the last Ready. */
  softState?: SoftState;
  /** The hard state to persist, or null when unchanged. */
  hardState: HardState | null;
  /** Entries to append to stable storage (truncating any conflicting suffix at entries[0].index). */
  entries: Entry[];
  /** A snapshot received from the leader, to persist and install (before `committedEntries`); null if none. */
  snapshot: Snapshot | null;
  /** Entries committed and not yet applied, to apply in order (after `snapshot`). */
  committedEntries: Entry[];
  /**
   * Messages that depend on nothing this Ready persists: a leader's appends, heartbeats and snapshot
   * chunks of a term already durable. Send them first so the followers' writes overlap this one (the
   * leader counts its own copy of `entries` only at advance()). Snapshot chunks come as references
   * (SnapshotChunkRef): the driver reads their bytes from storage, then sends them.
   */
  messagesBeforePersist: ReadyMessage[];
  /** Messages to send, only after the writes above are durable. */
  messages: ReadyMessage[];
  /** True when term, vote or entries changed: the write must be fsynced before sending. */
  mustSync: boolean;
  /** ReadIndex results whose index is confirmed by a quorum. */
  readStates: ReadState[];
  /** Contexts of this node's forwarded reads the leader refused: they will never be confirmed, fail them now. */
  droppedReads: Uint8Array[];
}

export function isReadyEmpty(ready: Ready): boolean {
  return (
    ready.softState === undefined &&
    ready.hardState === null &&
    ready.entries.length === 0 &&
    ready.snapshot === null &&
    ready.committedEntries.length === 0 &&
    ready.messagesBeforePersist.length === 0 &&
    ready.messages.length === 0 &&
    ready.readStates.length === 0 &&
    ready.droppedReads.length === 0
  );
}
