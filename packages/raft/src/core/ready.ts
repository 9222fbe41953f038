import type { Message } from "./messages.js";
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
 * 3. then install `snapshot` into the state machine (if any) and apply `committedEntries` in order;
 * 4. then call `advance(ready)`.
 * Between `ready()` and `advance()` no other RawNode method may be called (buffer inputs meanwhile).
 */
export interface Ready {
  /** Set when leader or role changed since the last Ready. */
  softState?: SoftState;
  /** The hard state to persist, or null when unchanged. */
  hardState: HardState | null;
  /** Entries to append to stable storage (truncating any conflicting suffix at entries[0].index). */
  entries: Entry[];
  /** A snapshot received from the leader, to persist and install; null if none. */
  snapshot: Snapshot | null;
  /** Entries committed and not yet applied, to apply in order (after `snapshot`). */
  committedEntries: Entry[];
  /**
   * Messages that depend on nothing this Ready persists: a leader's appends, heartbeats and snapshot
   * chunks of a term already durable. Send them first so the followers' writes overlap this one (the
   * leader counts its own copy of `entries` only at advance()).
   */
  messagesBeforePersist: Message[];
  /** Messages to send, only after the writes above are durable. */
  messages: Message[];
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
