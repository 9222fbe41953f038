import { assert } from "./assert.js";
import type { Entry, NodeId, SnapshotMetadata } from "./types.js";

/**
 * Every message raft nodes exchange. Plain data (msgpackr-friendly). `term` is the sender's term;
 * a term of 0 never appears on the wire. Handlers switch on `type` exhaustively.
 */
export type Message =
  | AppendMessage
  | AppendResponseMessage
  | VoteMessage
  | VoteResponseMessage
  | HeartbeatMessage
  | HeartbeatResponseMessage
  | SnapshotChunkMessage
  | SnapshotChunkResponseMessage
  | TimeoutNowMessage
  | ReadIndexMessage
  | ReadIndexResponseMessage
  | TransferLeaderMessage;

export type MessageType = Message["type"];

interface MessageBase {
  from: NodeId;
  to: NodeId;
  term: number;
}

/** Leader -> follower: entries following (index, logTerm); also carries the leader's commit index. */
export interface AppendMessage extends MessageBase {
  type: "app";
  /** Index of the entry just before `entries`. */
  index: number;
  /** Term of the entry at `index`. */
  logTerm: number;
  entries: Entry[];
  commit: number;
}

/**
 * Follower -> leader. On success `index` is the last index the follower now matches.
 * On reject `index` is the rejected `app.index`, and (`rejectHint`, `logTerm`) let the leader skip
 * a whole conflicting term at once: the follower's largest index <= hint whose term <= logTerm.
 */
export interface AppendResponseMessage extends MessageBase {
  type: "appResp";
  index: number;
  reject: boolean;
  rejectHint: number;
  logTerm: number;
}

/** Candidate (or pre-candidate, `preVote`) asks for a vote. `term` is the term it will use. */
export interface VoteMessage extends MessageBase {
  type: "vote";
  preVote: boolean;
  lastLogIndex: number;
  lastLogTerm: number;
  /** Set when campaigning because of a leadership transfer: voters then ignore their leader lease. */
  transfer: boolean;
}

export interface VoteResponseMessage extends MessageBase {
  type: "voteResp";
  preVote: boolean;
  reject: boolean;
}

/**
 * Leader -> follower liveness and commit propagation. `context` is set while reads are pending: the
 * leader's round number of the newest pending read (core/read-only.ts), echoed in the response.
 */
export interface HeartbeatMessage extends MessageBase {
  type: "heartbeat";
  /** min(leader commit, follower match): never tells a follower to commit entries it may not have. */
  commit: number;
  context: Uint8Array | null;
}

export interface HeartbeatResponseMessage extends MessageBase {
  type: "heartbeatResp";
  context: Uint8Array | null;
}

/** One chunk of an InstallSnapshot. Chunks are sent one at a time and acknowledged. */
export interface SnapshotChunkMessage extends MessageBase {
  type: "snap";
  metadata: SnapshotMetadata;
  /** Byte offset of `data` within the whole snapshot data. */
  offset: number;
  /** Total size of the snapshot data in bytes. */
  totalBytes: number;
  data: Uint8Array;
}

/**
 * What the core emits in place of a snapshot chunk: which bytes to send, not the bytes (the core
 * holds no snapshot data; storage keeps it on disk). The driver reads [offset, offset + length) of
 * the snapshot at `metadata.index` from storage and sends the SnapshotChunkMessage that
 * fillSnapshotChunk makes of it; when the read fails it reports the snapshot failed for `to`. Never
 * on the wire, never stepped.
 */
export interface SnapshotChunkRef extends MessageBase {
  type: "snapRef";
  metadata: SnapshotMetadata;
  offset: number;
  totalBytes: number;
  /** Bytes of the chunk: at most maxSnapshotChunkBytes, and offset + length <= totalBytes. */
  length: number;
}

/** What a Ready hands the driver to send: wire messages, and snapshot chunks still to be read from storage. */
export type ReadyMessage = Message | SnapshotChunkRef;

/** The chunk `ref` names, with its bytes (read from storage by the driver or a simulator). */
export function fillSnapshotChunk(ref: SnapshotChunkRef, data: Uint8Array): SnapshotChunkMessage {
  assert(
    data.byteLength === ref.length,
    `snapshot chunk at ${ref.offset}: ${data.byteLength} bytes read, ${ref.length} named`,
  );
  const { from, to, term, metadata, offset, totalBytes } = ref;
  return { type: "snap", from, to, term, metadata, offset, totalBytes, data };
}

/** Follower -> leader: the next byte offset it expects for the snapshot at `snapshotIndex`. */
export interface SnapshotChunkResponseMessage extends MessageBase {
  type: "snapResp";
  snapshotIndex: number;
  nextOffset: number;
}

/** Leader -> transfer target: start an election now (leadership transfer). */
export interface TimeoutNowMessage extends MessageBase {
  type: "timeoutNow";
}

/** Follower -> leader: a ReadIndex request forwarded on behalf of a local client. */
export interface ReadIndexMessage extends MessageBase {
  type: "readIndex";
  context: Uint8Array;
}

/**
 * Leader -> follower: the confirmed read index for `context`; or, with `reject`, that the read was
 * not taken (this node is not the leader, its queue is full, or the context is already pending)
 * and will never be answered: the follower fails it at once instead of waiting for its deadline.
 */
export interface ReadIndexResponseMessage extends MessageBase {
  type: "readIndexResp";
  /** The read index; 0 when `reject`. */
  index: number;
  context: Uint8Array;
  reject: boolean;
}

/** Follower -> leader: a leadership transfer request forwarded to the leader. */
export interface TransferLeaderMessage extends MessageBase {
  type: "transferLeader";
  transferee: NodeId;
}

/** Messages a leader sends to maintain its leadership and replicate; used to recognise the current leader. */
export function isLeaderMessage(message: Message): boolean {
  return (
    message.type === "app" || message.type === "heartbeat" || message.type === "snap" || message.type === "timeoutNow"
  );
}
