// The contract between the pure Raft core (src/core), storage (src/storage), the transport
// (src/transport) and the driver (src/node.ts). Everything here is plain data: it crosses the
// wire (msgpackr) and the disk (LevelDB) unchanged.

/** A node id: a short string such as "n1". The empty string means "no node" (no vote, no leader). */
export type NodeId = string;

/** Persistent state that must be on disk before any message that depends on it is sent. */
export interface HardState {
  /** Latest term this node has seen (0 on first boot). */
  term: number;
  /** Candidate voted for in `term`, or "" for none. */
  vote: NodeId;
  /** Highest log index known to be committed. Persisted so a restart does not go back in time. */
  commit: number;
}

export type EntryType = "normal" | "conf";

/** One log entry. `data` is opaque to raft: the application's command bytes (empty for a no-op). */
export interface Entry {
  term: number;
  /** Index in the log, starting at 1. */
  index: number;
  type: EntryType;
  data: Uint8Array;
}

/** Cluster membership: voters decide elections and commitment; learners only receive the log. */
export interface ConfState {
  voters: NodeId[];
  learners: NodeId[];
}

/** A membership change, carried in the `data` of a "conf" entry (encoded by the core). */
export type ConfChange =
  { type: "addLearner"; node: NodeId } | { type: "promote"; node: NodeId } | { type: "remove"; node: NodeId };

export interface SnapshotMetadata {
  /** Last log index covered by the snapshot. */
  index: number;
  /** Term of the entry at `index`. */
  term: number;
  /** Membership as of `index`. */
  conf: ConfState;
}

/** The application's state at `metadata.index`, as opaque bytes. */
export interface Snapshot {
  metadata: SnapshotMetadata;
  data: Uint8Array;
}

/**
 * A snapshot as storage holds it and the core sees it: its metadata and size, never its bytes. A
 * million keys make a snapshot of about 150 MB: held in memory on every node for the rare follower
 * that needs it, it was a tenth of the node's RSS. The bytes stay on disk and are read a range at a
 * time (SnapshotDataReader) when a chunk is sent or the application restarts from them.
 */
export interface SnapshotInfo {
  metadata: SnapshotMetadata;
  /** Size of the snapshot's data. */
  totalBytes: number;
}

/**
 * A snapshot's bytes as the application hands them over: one array, or a list of arrays whose
 * concatenation they are. A list spares the application the copy that joins its encoded parts (the
 * size of the whole state, twice in memory at once): storage cuts its pieces straight from it.
 */
export type SnapshotData = Uint8Array | readonly Uint8Array[];

/** Reads the held snapshot's bytes from storage (the driver fills the leader's chunks and restarts the application with them). */
export interface SnapshotDataReader {
  /**
   * Bytes [offset, offset + length) of the data of the snapshot at `index`. Rejects with
   * RAFT_ERR_SNAPSHOT_OUT_OF_DATE when that snapshot is not (or stops being, during the read) the
   * one held, and RAFT_ERR_STORAGE_CORRUPT when its bytes are missing.
   */
  readSnapshotData(index: number, offset: number, length: number): Promise<Uint8Array>;
  /**
   * The snapshots transfers are reading (RawNode.snapshotsInTransfer): when a newer snapshot
   * replaces one of these, its bytes stay readable until it is no longer pinned. Replaces the
   * previous pins. Never durable: a restarted node pins nothing, and open() clears what was kept.
   */
  pinSnapshots(indexes: readonly number[]): void;
}

/**
 * What the core reads from stable storage. Reads are synchronous: implementations keep the
 * unsnapshotted log in memory (as etcd's MemoryStorage does) and a durable copy on disk.
 * Writes are done by the driver (see the Ready contract), never by the core.
 */
export interface RaftStorage {
  initialState(): { hardState: HardState; conf: ConfState };
  /**
   * Entries in [lo, hi), at most maxBytes of `data` in total but always at least one entry. Throws
   * RaftStorageError "compacted" below firstIndex and "unavailable" past lastIndex.
   */
  entries(lo: number, hi: number, maxBytes: number): Entry[];
  /** Term of the entry at `index`; valid for firstIndex-1 ..= lastIndex. */
  term(index: number): number;
  firstIndex(): number;
  lastIndex(): number;
  /** The latest snapshot's metadata and size (its bytes are read with SnapshotDataReader). */
  snapshot(): SnapshotInfo;
}

/**
 * What the driver writes. Implementations must make `append` atomic and, when `sync`, durable before
 * resolving. A write may be issued before the previous one has resolved (the driver queues a
 * snapshot's write and goes on appending): writes take effect one at a time, in the order issued.
 */
export interface RaftStorageWriter {
  /** Truncates any entries at or after entries[0].index, appends `entries`, and stores `hardState` when given: one atomic batch. */
  append(entries: readonly Entry[], hardState: HardState | null, sync: boolean): Promise<void>;
  /** Replaces the whole log with `snapshot` (entries after it that match are kept). Durable before resolving. */
  applySnapshot(snapshot: Snapshot): Promise<void>;
  /** Records a snapshot taken by the application at `index` and discards entries up to `index - keepEntries`. */
  createSnapshot(index: number, conf: ConfState, data: SnapshotData): Promise<void>;
  compact(index: number): Promise<void>;
  close(): Promise<void>;
}
