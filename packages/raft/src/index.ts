// The public surface of @keyraft/raft. Named exports only (no `export *`).

// Core (pure): types, messages, the RawNode and its Ready contract.
export type {
  NodeId,
  HardState,
  EntryType,
  Entry,
  ConfState,
  ConfChange,
  SnapshotMetadata,
  Snapshot,
  SnapshotData,
  SnapshotInfo,
  SnapshotDataReader,
  RaftStorage,
  RaftStorageWriter,
} from "./core/types.js";
export type {
  Message,
  MessageType,
  AppendMessage,
  AppendResponseMessage,
  VoteMessage,
  VoteResponseMessage,
  HeartbeatMessage,
  HeartbeatResponseMessage,
  SnapshotChunkMessage,
  SnapshotChunkRef,
  ReadyMessage,
  SnapshotChunkResponseMessage,
  TimeoutNowMessage,
  ReadIndexMessage,
  ReadIndexResponseMessage,
  TransferLeaderMessage,
} from "./core/messages.js";
export type { Ready, ReadState, SoftState, Role } from "./core/ready.js";
export { isReadyEmpty } from "./core/ready.js";
export { fillSnapshotChunk } from "./core/messages.js";
export { joinSnapshotData, snapshotDataBytes } from "./core/snapshot-data.js";
export type { RaftConfig, RaftLogger } from "./core/config.js";
export type { Status, ProgressStatus, ProgressState } from "./core/status.js";
export type { ProposalId } from "./core/raft.js";
export { RawNode } from "./core/raw-node.js";
export { encodeConfChange, decodeConfChange } from "./core/confchange.js";
export { RaftError, RaftStorageError, RAFT_ERROR_CODES, isStorageCompacted } from "./core/errors.js";
export type { RaftErrorCode, RaftStorageErrorReason } from "./core/errors.js";
export { RaftAssertionError } from "./core/assert.js";
export { Xoshiro128, seedFromString } from "./core/prng.js";
export type { Random } from "./core/prng.js";

// I/O side: storage, transport, the RaftNode driver (docs/raft-io.md).
export { MemoryStorage } from "./storage/memory-storage.js";
export type { MemoryStorageOptions } from "./storage/memory-storage.js";
export { LevelStorage } from "./storage/level-storage.js";
export { IdentityFile } from "./storage/identity-file.js";
export { foundingClusterId, MemoryIdentityStore } from "./driver/peer-identity.js";
export type { IdentityRecord, IdentityStore } from "./driver/peer-identity.js";
export type { LevelStorageOptions } from "./storage/level-storage.js";
export { WsTransport, defaultTransportLimits } from "./transport/ws-transport.js";
export type { TransportTls, WsTransportOptions, WsTransportLimits } from "./transport/ws-transport.js";
export type { Transport, TransportStats, PeerStats as TransportPeerStats, Addressed } from "./transport/transport.js";
export { closeCodes } from "./transport/transport.js";
export { RaftNode } from "./node.js";
export type { NodeMetrics } from "./node.js";
export type { RaftNodeOptions } from "./driver/options.js";
export type { StateMachine } from "./driver/state-machine.js";
export { applicationMessageType, isApplicationMessage } from "./driver/app-message.js";
export type { ApplicationMessage, WireMessage } from "./driver/app-message.js";
export type { NodeStatus, PeerStatus } from "./driver/status.js";
export {
  RaftNodeError,
  NotLeaderError,
  TimeoutError,
  ShuttingDownError,
  StorageError,
  RAFT_IO_ERROR_CODES,
  RAFT_ERRORS,
} from "./errors.js";
export type { RaftIoErrorCode, RaftNodeErrorCode } from "./errors.js";
export type { Logger } from "./logger.js";
export { silentLogger } from "./logger.js";
