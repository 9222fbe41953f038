import { assert } from "./assert.js";
import { Xoshiro128, seedFromString, type Random } from "./prng.js";
import type { NodeId } from "./types.js";

/** The logger the core accepts: object-first, a subset of pino's API (etcd's tiny Logger). Default: silent. */
export interface RaftLogger {
  debug(fields: object, message: string): void;
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
}

const ignore = (): void => undefined;
export const silentRaftLogger: RaftLogger = { debug: ignore, info: ignore, warn: ignore };

/** Hard upper bounds; a config above them is rejected (limits on everything). */
export const electionTicksMax = 10_000;
export const maxInflightMsgsMax = 4_096;
export const pendingReadIndexMax = 4_096;
export const readStatesMax = 4_096;
export const messagesPerReadyMax = 65_536;
/** Default of maxSnapshotInflightBytes. */
export const defaultSnapshotInflightBytes = 8 << 20;

/** Options of a Raft node. Time is in ticks: the driver decides how long a tick is. */
export interface RaftConfig {
  /** This node's id; must be non-empty. */
  id: NodeId;
  /**
   * Voters of a brand-new cluster, used only on first boot (empty storage): they become conf
   * entries 1..k of term 1, committed at once, so every founding member must be given the SAME
   * list in the SAME order. Afterwards membership comes from the snapshot and the log. Default []: a node
   * joining an existing cluster starts with no configuration and waits for the leader to contact it
   * (it never campaigns until it is a voter).
   */
  voters?: NodeId[];
  /** Learners of a brand-new cluster (see `voters`). Default []. */
  learners?: NodeId[];
  /** A follower that hears nothing from a leader for a random number of ticks in [electionTicks, 2*electionTicks) campaigns. Default 10. */
  electionTicks?: number;
  /** A leader sends heartbeats every heartbeatTicks; must be < electionTicks. Default 1. */
  heartbeatTicks?: number;
  /** Pre-vote (dissertation 9.6): a partitioned node cannot raise the term on rejoin. Default true. */
  preVote?: boolean;
  /** A leader that has not heard from a quorum for electionTicks steps down; followers keep a lease. Default true. */
  checkQuorum?: boolean;
  /** Max append messages in flight per follower in the replicate state (0 is invalid). Default 256. */
  maxInflightMsgs?: number;
  /** Max bytes of entry data per append message (always at least one entry). Default 1 MiB. */
  maxSizePerMsgBytes?: number;
  /** Max bytes of data in the leader's uncommitted tail; proposals past it are refused. 0 = no limit. Default 64 MiB. */
  maxUncommittedEntriesSize?: number;
  /** Max bytes of snapshot data per InstallSnapshot chunk. Default 1 MiB. */
  maxSnapshotChunkBytes?: number;
  /**
   * Max bytes of snapshot data unacknowledged per follower (always at least one chunk; also at most
   * maxInflightMsgs chunks). The driver keeps it below what its transport queues per peer, so a
   * chunk is never dropped for want of room. Default 8 MiB.
   */
  maxSnapshotInflightBytes?: number;
  /** Max bytes of committed entries handed out per Ready (always at least one entry). Default 16 MiB. */
  maxCommittedSizePerReadyBytes?: number;
  /** Max bytes of one proposed command. Default 4 MiB. */
  maxEntryBytes?: number;
  /** The application's applied index at start (entries after it are handed out again). Default: the snapshot index. */
  applied?: number;
  /** Randomness for election jitter. Default: xoshiro128** seeded from a hash of `id` (deterministic). */
  random?: Random;
  /** Role changes, step-downs, membership and snapshot events. Never receives entry data. Default: silent. */
  logger?: RaftLogger;
}

/** The config with every default filled in and every bound checked. */
export interface ResolvedConfig {
  id: NodeId;
  voters: NodeId[];
  learners: NodeId[];
  electionTicks: number;
  heartbeatTicks: number;
  preVote: boolean;
  checkQuorum: boolean;
  maxInflightMsgs: number;
  maxSizePerMsgBytes: number;
  maxUncommittedEntriesSize: number;
  maxSnapshotChunkBytes: number;
  maxSnapshotInflightBytes: number;
  maxCommittedSizePerReadyBytes: number;
  maxEntryBytes: number;
  applied: number | null;
  random: Random;
  logger: RaftLogger;
}

export function resolveConfig(config: RaftConfig): ResolvedConfig {
  const resolved: ResolvedConfig = {
    id: config.id,
    voters: config.voters ?? [],
    learners: config.learners ?? [],
    electionTicks: config.electionTicks ?? 10,
    heartbeatTicks: config.heartbeatTicks ?? 1,
    preVote: config.preVote ?? true,
    checkQuorum: config.checkQuorum ?? true,
    maxInflightMsgs: config.maxInflightMsgs ?? 256,
    maxSizePerMsgBytes: config.maxSizePerMsgBytes ?? 1 << 20,
    maxUncommittedEntriesSize: config.maxUncommittedEntriesSize ?? 64 << 20,
    maxSnapshotChunkBytes: config.maxSnapshotChunkBytes ?? 1 << 20,
    maxSnapshotInflightBytes: config.maxSnapshotInflightBytes ?? defaultSnapshotInflightBytes,
    maxCommittedSizePerReadyBytes: config.maxCommittedSizePerReadyBytes ?? 16 << 20,
    maxEntryBytes: config.maxEntryBytes ?? 4 << 20,
    applied: config.applied ?? null,
    random: config.random ?? new Xoshiro128(seedFromString(config.id)),
    logger: config.logger ?? silentRaftLogger,
  };
  validateConfig(resolved);
  return resolved;
}

function validateConfig(c: ResolvedConfig): void {
  assert(c.id.length > 0, "config: id must be non-empty");
  assert(
    Number.isInteger(c.heartbeatTicks) && c.heartbeatTicks > 0,
    "config: heartbeatTicks must be a positive integer",
  );
  assert(
    Number.isInteger(c.electionTicks) && c.electionTicks > c.heartbeatTicks,
    "config: electionTicks must exceed heartbeatTicks",
  );
  assert(c.electionTicks <= electionTicksMax, "config: electionTicks above electionTicksMax");
  assert(Number.isInteger(c.maxInflightMsgs) && c.maxInflightMsgs > 0, "config: maxInflightMsgs must be positive");
  assert(c.maxInflightMsgs <= maxInflightMsgsMax, "config: maxInflightMsgs above maxInflightMsgsMax");
  assert(c.maxSizePerMsgBytes > 0 && c.maxSnapshotChunkBytes > 0, "config: message and chunk sizes must be positive");
  assert(c.maxSnapshotInflightBytes > 0, "config: maxSnapshotInflightBytes must be positive");
  assert(c.maxCommittedSizePerReadyBytes > 0 && c.maxEntryBytes > 0, "config: ready and entry sizes must be positive");
  assert(c.maxUncommittedEntriesSize >= 0, "config: maxUncommittedEntriesSize must be >= 0");
  assert(c.applied === null || (Number.isInteger(c.applied) && c.applied >= 0), "config: applied must be >= 0");
  const members = new Set([...c.voters, ...c.learners]);
  assert(members.size === c.voters.length + c.learners.length, "config: voters and learners must be distinct");
}
