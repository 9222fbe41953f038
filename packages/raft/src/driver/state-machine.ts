import type { Entry, Snapshot } from "../core/types.js";

/**
 * The application replicated by a RaftNode. Called only from the driver's loop, one call at a time,
 * in log order. Every method may return a promise; the loop waits for it before going on.
 */
export interface StateMachine {
  /**
   * Applies one committed "normal" entry carrying a command (entries with empty data, the leaders'
   * no-ops, and membership entries are not passed). Must be deterministic: every node applies the
   * same entries in the same order and must reach the same state. Throwing stops the node.
   */
  apply(entry: Entry): void | Promise<void>;
  /** The whole application state as bytes, as of the last applied entry (used for log compaction). */
  takeSnapshot(): Uint8Array | Promise<Uint8Array>;
  /** Replaces the whole application state with `snapshot.data` (state as of `snapshot.metadata.index`). */
  installSnapshot(snapshot: Snapshot): void | Promise<void>;
}
