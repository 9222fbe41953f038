import type { Entry, Snapshot, SnapshotData } from "../core/types.js";

/**
 * The application replicated by a RaftNode. Called only from the driver's applier, one call at a
 * time, in log order. `apply` and `installSnapshot` may return a promise, which the applier waits
 * for before the next call; the Ready loop waits for neither (it goes on persisting, sending and
 * committing while the applier works through what it handed over, up to applyQueueLimits).
 * `takeSnapshot` is called between two of those calls; its promise nobody waits for (below).
 */
export interface StateMachine {
  /**
   * Applies one committed "normal" entry carrying a command (entries with empty data, the leaders'
   * no-ops, and membership entries are not passed). Must be deterministic: every node applies the
   * same entries in the same order and must reach the same state. Throwing stops the node.
   */
  apply(entry: Entry): void | Promise<void>;
  /**
   * The whole application state as bytes, as of the last applied entry at the time of the call
   * (used for log compaction). The state must be captured synchronously, in this call; a returned
   * promise may settle later, while the node goes on applying newer entries, so what it encodes
   * must not change with them. The node writes the bytes when the promise settles. A list of
   * arrays stands for their concatenation: storage cuts its pieces from it, so an application that
   * encodes its state in parts need not join them (a copy the size of the state).
   */
  takeSnapshot(): SnapshotData | Promise<SnapshotData>;
  /** Replaces the whole application state with `snapshot.data` (state as of `snapshot.metadata.index`). */
  installSnapshot(snapshot: Snapshot): void | Promise<void>;
}
