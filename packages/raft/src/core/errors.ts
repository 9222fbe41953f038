import type { NodeId } from "./types.js";

/** Stable error codes of the Raft core. Never reuse or renumber a code; document every one in docs/raft-core.md. */
export const RAFT_ERROR_CODES = {
  RAFT_ERR_NOT_LEADER: "this node is not the leader; `leader` names the known leader or is empty",
  RAFT_ERR_PROPOSAL_DROPPED:
    "the leader refused the proposal (leadership transfer in progress or uncommitted log too large)",
  RAFT_ERR_CONF_CHANGE_PENDING: "a membership change is already in progress; one server at a time",
  RAFT_ERR_CONF_CHANGE_INVALID: "the membership change is not valid for the current configuration",
  RAFT_ERR_ENTRY_TOO_LARGE: "a proposed command is larger than maxEntryBytes",
  RAFT_ERR_READ_INDEX_DROPPED:
    "a read index request could not be queued (no leader yet, queue full, or the node asked is no longer the leader)",
  RAFT_ERR_STORAGE_COMPACTED: "storage: the requested index is below firstIndex (compacted into a snapshot)",
  RAFT_ERR_STORAGE_UNAVAILABLE: "storage: the requested index is past lastIndex",
} as const;

export type RaftErrorCode = keyof typeof RAFT_ERROR_CODES;

/** An operating error (not a bug): the caller can retry, redirect to `leader`, or report it. */
export class RaftError extends Error {
  override readonly name = "RaftError";
  readonly code: RaftErrorCode;
  /** The leader this node knows of ("" if none); set for RAFT_ERR_NOT_LEADER. */
  readonly leader: NodeId;

  constructor(code: RaftErrorCode, message: string, leader: NodeId = "", options?: { cause?: unknown }) {
    super(`${code}: ${message}`, options);
    this.code = code;
    this.leader = leader;
  }
}

export type RaftStorageErrorReason = "compacted" | "unavailable";

/** Thrown by RaftStorage reads outside [firstIndex-1, lastIndex]; the core handles "compacted" by sending a snapshot. */
export class RaftStorageError extends RaftError {
  readonly reason: RaftStorageErrorReason;

  constructor(reason: RaftStorageErrorReason, message: string) {
    super(reason === "compacted" ? "RAFT_ERR_STORAGE_COMPACTED" : "RAFT_ERR_STORAGE_UNAVAILABLE", message);
    this.reason = reason;
  }
}

export function isStorageCompacted(error: unknown): boolean {
  return error instanceof RaftStorageError && error.reason === "compacted";
}
