import { defaultSnapshotInflightBytes, type RaftConfig } from "../core/config.js";
import type { NodeId, RaftStorage, RaftStorageWriter, SnapshotDataReader } from "../core/types.js";
import type { Logger } from "../logger.js";
import type { TransportTls, WsTransportLimits, WsTransportOptions } from "../transport/ws-transport.js";
import type { Transport } from "../transport/transport.js";
import type { WireMessage } from "./app-message.js";
import type { DriverClock } from "./clock.js";
import type { IdentityStore } from "./peer-identity.js";
import type { StateMachine } from "./state-machine.js";

/** Bounds of the driver's queues (limits on everything). */
export const driverLimits = {
  /** Ticks buffered while a Ready is being handled; more are dropped (as etcd's tick channel does). */
  ticksPendingMax: 128,
  /** Ticks fed to the core per drain; missed ticks beyond it are dropped (see RaftNode.drain). */
  ticksPerDrainMax: 2,
  /** Inputs (received messages, proposals, ...) buffered while a Ready is in flight. */
  inboxMax: 65_536,
} as const;

/** What RaftNode needs of a transport: the Transport contract, and writing what is queued at once. */
export type DriverTransport = Transport<WireMessage> & { flushNow(): void };

export interface RaftNodeOptions {
  id: NodeId;
  /** Stable storage, already opened (LevelStorage in production, MemoryStorage in tests). Closed by stop(). */
  storage: RaftStorage & RaftStorageWriter & SnapshotDataReader;
  stateMachine: StateMachine;
  /** Voters of a brand-new cluster (ignored once storage holds a configuration). Default []: a node that joins an existing cluster and waits for its leader. */
  voters?: NodeId[];
  /** Learners of a brand-new cluster. Default []. */
  learners?: NodeId[];
  /** Network. */
  transport: {
    /** Shared cluster secret, at least 16 bytes; never sent, never logged. */
    secret: Uint8Array | string;
    /** A secret also accepted during a rotation (transport/handshake.ts). */
    previousSecret?: Uint8Array | string;
    /** Mutual TLS for every connection between nodes; absent: plain WebSockets. */
    tls?: TransportTls;
    /** Listen address. Default "127.0.0.1", port 0 (a free port; see RaftNode.port). */
    host?: string;
    port?: number;
    /** Address book: every other node's "ws://host:port". Only these ids may connect. */
    peers: Record<NodeId, string>;
    limits?: Partial<WsTransportLimits>;
  };
  /** Wall-clock length of one tick, in ms. Default 20. */
  tickMs?: number;
  /** Election timeout in ticks (randomized in [electionTicks, 2*electionTicks)). Default 10. */
  electionTicks?: number;
  /** Heartbeat interval in ticks; must be < electionTicks. Default 2. */
  heartbeatTicks?: number;
  /** Take an application snapshot (and compact the log) every this many applied entries. 0 = never. Default 10_000. */
  snapshotEntries?: number;
  /**
   * Also take one when the entries applied since the last snapshot carry this many data bytes, so
   * a few large entries (a bulk import) do not stay in the log and get replayed on restart. 0 = never.
   * Default 64 MiB.
   */
  snapshotBytes?: number;
  /** Deadline of propose(), readIndex(), membership changes and transfers, in ms. Default 5000. */
  requestTimeoutMs?: number;
  /** Proposals (and membership changes) waiting to be applied on this node. Default 65_536. */
  pendingProposalsMax?: number;
  /** readIndex() calls waiting at once. Default 4096. */
  pendingReadsMax?: number;
  /** Further core options (pre-vote, check-quorum, inflight window, message sizes); see RaftConfig. */
  raft?: Omit<RaftConfig, "id" | "voters" | "learners" | "electionTicks" | "heartbeatTicks" | "applied">;
  logger?: Logger;
  /**
   * The per-process part of this node's read contexts (driver/read-context.ts), 8 bytes. Default:
   * random. Only tests set it; two processes of one node must never share it.
   */
  readContextNonce?: Uint8Array;
  /**
   * Cluster and data-directory identity, checked in every handshake (driver/peer-identity.ts).
   * `store` keeps this node's incarnation and its peers' (storage/identity-file.ts: a file inside
   * the Raft data directory); `cluster` is foundingClusterId(voters, secret) for a founding member,
   * "" for a joining one. A founding member with an empty log, and any node with a log, first waits
   * up to `foundingProbeMs` (default two election timeouts) for its peers: a founder refuses to found
   * if one knew another incarnation of it, and a node with a log fails to start if one was told more
   * than its data directory holds (a restored copy). Default: no identity (no checks).
   */
  identity?: { store: IdentityStore; cluster: string; foundingProbeMs?: number };
  /**
   * Time source and ticker. Default: the system clock. The driver simulation injects a fake one
   * (with `transportFactory`), so the real driver runs deterministically. Not for production use.
   */
  clock?: DriverClock;
  /** Builds the transport from the options RaftNode would give WsTransport. Default: a WsTransport. */
  transportFactory?: (options: WsTransportOptions<WireMessage>) => DriverTransport;
  /** Called once if the node stops on an unrecoverable error (storage failure, a failed invariant). */
  onFatal?: (error: unknown) => void;
  /**
   * Receives application payloads other members sent with sendAppMessage, on the same
   * authenticated connection as Raft messages. Called synchronously from the socket handler; they
   * never reach the Raft core. Without it, received application messages are counted and dropped.
   */
  onAppMessage?: (from: NodeId, payload: Uint8Array) => void;
}

export interface ResolvedNodeOptions {
  tickMs: number;
  electionTicks: number;
  heartbeatTicks: number;
  snapshotEntries: number;
  snapshotBytes: number;
  requestTimeoutMs: number;
  pendingProposalsMax: number;
  pendingReadsMax: number;
}

/** Bytes a snapshot chunk's envelope (ids, term, metadata with the membership) may add to its data on the wire. */
export const snapshotChunkOverheadBytesMax = 16 << 10;

/**
 * Snapshot flow control must fit the transport: a chunk (with its envelope) must fit one message,
 * and the window of unacknowledged chunks (plus a chunk and one message of other traffic) the
 * per-peer send queue, which drops its oldest message when full. Otherwise a large snapshot never
 * installs. Values left unset are derived from the transport's limits (at most 1 MiB chunks and an
 * 8 MiB window); values set that do not fit are refused (RangeError).
 */
export function resolveSnapshotFlow(
  raft: RaftNodeOptions["raft"],
  limits: WsTransportLimits,
): { maxSnapshotChunkBytes: number; maxSnapshotInflightBytes: number } {
  const chunkRoom =
    limits.messageBytesMax >= 2 * snapshotChunkOverheadBytesMax
      ? limits.messageBytesMax - snapshotChunkOverheadBytesMax
      : Math.floor(limits.messageBytesMax / 2);
  const chunkBytes = raft?.maxSnapshotChunkBytes ?? Math.min(1 << 20, chunkRoom);
  if (chunkBytes > chunkRoom)
    throw new RangeError(
      `raft.maxSnapshotChunkBytes ${chunkBytes} does not fit the transport's messageBytesMax ${limits.messageBytesMax}`,
    );
  const windowRoom = limits.sendQueueBytesMax - limits.messageBytesMax - chunkBytes;
  const windowBytes =
    raft?.maxSnapshotInflightBytes ?? Math.max(chunkBytes, Math.min(defaultSnapshotInflightBytes, windowRoom));
  if (Math.max(windowBytes, chunkBytes) > windowRoom)
    throw new RangeError(
      `raft.maxSnapshotInflightBytes ${windowBytes} does not fit the transport's sendQueueBytesMax ${limits.sendQueueBytesMax}`,
    );
  return { maxSnapshotChunkBytes: chunkBytes, maxSnapshotInflightBytes: windowBytes };
}

export function resolveNodeOptions(options: RaftNodeOptions): ResolvedNodeOptions {
  const resolved = {
    tickMs: options.tickMs ?? 20,
    electionTicks: options.electionTicks ?? 10,
    heartbeatTicks: options.heartbeatTicks ?? 2,
    snapshotEntries: options.snapshotEntries ?? 10_000,
    snapshotBytes: options.snapshotBytes ?? 64 * 1024 * 1024,
    requestTimeoutMs: options.requestTimeoutMs ?? 5000,
    pendingProposalsMax: options.pendingProposalsMax ?? 65_536,
    pendingReadsMax: options.pendingReadsMax ?? 4096,
  };
  for (const [name, value] of Object.entries(resolved)) {
    if (
      !Number.isInteger(value) ||
      value < 0 ||
      (value === 0 && name !== "snapshotEntries" && name !== "snapshotBytes")
    ) {
      throw new RangeError(`RaftNode option ${name} must be a positive integer, got ${value}`);
    }
  }
  return resolved;
}
