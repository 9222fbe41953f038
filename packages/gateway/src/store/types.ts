// The contract between the HTTP routes and whatever makes admin writes durable and ordered.
// Single node: a LevelDB command log with group commit (store/level-command-log.ts).
// Cluster: Raft (a later adapter with the same interface). Routes and `core` never know which.

/**
 * A deterministic state machine over commands: the same sequence of `apply` calls always gives
 * the same state. `snapshot`/`restore` write and read the whole state as plain data.
 */
export interface ReplicatedStateMachine<Command, Outcome> {
  apply(command: Command): Outcome;
  snapshot(): unknown;
  /** The state as it is now, uncopied and never changed afterwards (records are replaced, not edited): encoded in slices by the Raft snapshot. */
  capture(): unknown;
  restore(snapshot: unknown): void;
  /**
   * The same restore in steps of about `recordsPerStep` records, one per event-loop turn for the
   * caller; the state changes only in the last step (readers never see half of it). "adopt":
   * the snapshot was just decoded and nothing else holds it, so its records are taken over, not copied.
   */
  restoreSteps(snapshot: unknown, recordsPerStep: number, ownership?: "copy" | "adopt"): Generator<void, void>;
}

/**
 * An ordered, durable log of commands in front of a ReplicatedStateMachine.
 *
 * `append` applies the command to the state machine synchronously, in log order, before it
 * returns its promise (so a later read or `append` in the same tick sees it), and resolves with
 * the apply outcome once the command is durable (fsynced). It rejects, and the process must stop,
 * if the write fails: nothing acknowledged may be lost.
 */
export interface CommandLog<Command, Outcome> {
  append(command: Command): Promise<Outcome>;
  /** Index of the last command applied (0 for an empty log). */
  appliedIndex(): number;
  close(): Promise<void>;
}

/** A rate-limit bucket count handed to CounterDurability to be covered by a durable reservation (and restored from it after a restart). */
export interface DurabilityBucket {
  /** The limiter entry key (identifier plus window parameters). */
  key: string;
  limit: number;
  durationMs: number;
  /** Start of the bucket, Unix ms. */
  bucketStartMs: number;
  /** Count in the bucket after the commit. */
  count: number;
  /** The counter's bound group (caller-created counters), restored into the same group. */
  group?: string;
  groupEntriesMax?: number;
  /**
   * The counter's whole count in its window after the admission (every counted bucket; the
   * limiter's `touched` carries it). With it, one reservation covers the counter across buckets
   * (counter-durability.ts, window reservations); without it, the bucket is reserved alone.
   */
  windowCount?: number;
  /**
   * Whom a bucket reservation (no `windowCount`) is held for when it is not this node's own count:
   * on a successor, the owner it acknowledged a reservation to, or the serving successor it keeps
   * a copy for (counters/ratelimit/successor-side.ts). Counts of different holders may count
   * different admissions, so each holder has its own record and a restore adds them up
   * (counter-durability.ts).
   */
  holder?: string;
}

/** A counter the limiter evicted for a bound: its reservations may be dropped. */
export interface EvictedCounter {
  key: string;
  durationMs: number;
}

/**
 * Makes rate-limit state survive a restart conservatively: before an admission is answered, the
 * count it produced is covered by a durable reservation (reservations are taken in chunks, so
 * most admissions need no disk write). After a restart every bucket is restored to its
 * reservation, which is at least what was admitted: a restart never lets a limit admit more.
 */
export interface CounterDurability {
  /** Returns null when every touched bucket is already covered, else a promise that resolves once it is. */
  cover(touched: readonly DurabilityBucket[]): Promise<void> | null;
  /**
   * Drops the reservations of counters the limiter evicted (they would otherwise live until their
   * windows pass, up to a year for a caller-chosen window). Housekeeping: nothing waits for it.
   */
  forget?(evicted: readonly EvictedCounter[]): void;
}
