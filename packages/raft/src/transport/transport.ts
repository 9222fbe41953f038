// The transport the RaftNode driver needs: best-effort, unordered-tolerant delivery of raft
// messages between authenticated peers. Raft itself recovers from loss, so nothing here retries
// a message; limits drop (and count) instead of growing.

import type { NodeId } from "../core/types.js";

/** What the transport needs to know of a message: where it goes and who claims to send it. */
export interface Addressed {
  type: string;
  from: NodeId;
  to: NodeId;
}

export interface Transport<M extends Addressed> {
  /** Starts listening (and dialing known peers). Resolves with the port actually bound. */
  start(): Promise<{ port: number }>;
  /**
   * Queues messages for their `to` peers; never blocks, never throws for an unreachable peer.
   * Returns how many were queued (unknown peers and oversize messages are not).
   */
  send(messages: readonly M[]): number;
  /** Adds or updates a peer's address (`ws://host:port`). Only known peers may connect. */
  addPeer(id: NodeId, url: string): void;
  removePeer(id: NodeId): void;
  /** True while an authenticated connection to `id` is open. */
  isConnected(id: NodeId): boolean;
  stats(): TransportStats;
  /** Closes every connection and the listener; queued messages are discarded. Idempotent. */
  close(): Promise<void>;
}

export interface PeerStats {
  connected: boolean;
  /** Messages waiting in the send queue. */
  queuedMessages: number;
  sentMessages: number;
  sentFrames: number;
  receivedMessages: number;
  /** Dropped because the peer's send queue was full (oldest dropped first). */
  droppedQueueFull: number;
  /** Dropped because one encoded message exceeded messageBytesMax. */
  droppedOversize: number;
  /** Authenticated connections adopted since start. */
  connects: number;
  /** Outbound attempts that failed before authenticating. */
  dialFailures: number;
}

export interface TransportStats {
  peers: Record<NodeId, PeerStats>;
  /** Inbound or outbound connections refused: unknown id, failed proof, protocol error, timeout. */
  refusedConnections: number;
  /** Of which failed the challenge-response (wrong secret). */
  authFailures: number;
  /** Connections refused by this node, or by the peer, over an identity check (another cluster, a replaced data directory). */
  identityRefusals: number;
  /**
   * Connections refused by this node, or by the peer, because the peer's data directory holds less
   * than the peer already told this node (a copy restored from earlier; driver/peer-identity.ts).
   */
  rollbackRefusals: number;
  /** Received messages dropped: malformed, or `from`/`to` not matching the authenticated connection. */
  invalidMessages: number;
  /** Messages sent to an id that is not in the address book. */
  droppedUnknownPeer: number;
}

/** WebSocket close codes used by the transport (4000-4999 is the application range). */
export const closeCodes = {
  authFailed: 4001,
  unknownNode: 4002,
  duplicate: 4003,
  protocolError: 4004,
  handshakeTimeout: 4005,
  shuttingDown: 4006,
  busy: 4007,
  peerRemoved: 4008,
  /** The peer's cluster or data-directory incarnation is not the one this node knows (driver/peer-identity.ts). */
  identityRefused: 4009,
  /** The peer's data directory holds less than it already told this node: a rolled-back copy (driver/peer-identity.ts). */
  rolledBackRefused: 4010,
  /** Set by ws itself when a frame exceeds maxPayload. */
  messageTooBig: 1009,
} as const;
