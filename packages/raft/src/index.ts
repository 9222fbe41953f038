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
  SnapshotChunkResponseMessage,
  TimeoutNowMessage,
  ReadIndexMessage,
  ReadIndexResponseMessage,
  TransferLeaderMessage,
} from "./core/messages.js";
export type { Ready, ReadState, SoftState, Role } from "./core/ready.js";
export { isReadyEmpty } from "./core/ready.js";
export type { RaftConfig } from "./core/config.js";
export type { Status, ProgressStatus, ProgressState } from "./core/status.js";
export type { ProposalId } from "./core/raft.js";
export { RawNode } from "./core/raw-node.js";
export { RaftError, RaftStorageError, RAFT_ERROR_CODES, isStorageCompacted } from "./core/errors.js";
export type { RaftErrorCode, RaftStorageErrorReason } from "./core/errors.js";
export { RaftAssertionError } from "./core/assert.js";
export { Xoshiro128, seedFromString } from "./core/prng.js";
export type { Random } from "./core/prng.js";
