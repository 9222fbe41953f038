// The error registry of the I/O side of @keyraft/raft (storage, transport, RaftNode driver).
// Core codes live in core/errors.ts; RAFT_ERRORS below is the union of both, and a test checks that
// no code is defined twice and every code is documented (docs/raft-io.md, docs/raft-core.md).
// Never reuse or renumber a code: applications match on them.

import { RAFT_ERROR_CODES, RaftError, type RaftErrorCode } from "./core/errors.js";
import type { NodeId } from "./core/types.js";

/** Codes raised by storage, transport and the RaftNode driver (operating errors, not bugs). */
export const RAFT_IO_ERROR_CODES = {
  RAFT_ERR_TIMEOUT: "the operation did not complete within its deadline; it may still commit later",
  RAFT_ERR_SHUTTING_DOWN: "the node is stopping or stopped; pending operations are rejected",
  RAFT_ERR_NOT_STARTED: "the node has not been started",
  RAFT_ERR_PENDING_FULL: "too many proposals or reads are pending on this node (pendingProposalsMax / pendingReadsMax)",
  RAFT_ERR_LEADERSHIP_LOST: "this node lost leadership before the proposal was applied; it may or may not commit",
  RAFT_ERR_STORAGE_CLOSED: "storage: the storage is closed",
  RAFT_ERR_STORAGE_CORRUPT: "storage: the on-disk state is inconsistent (gap in the log, bad encoding)",
  RAFT_ERR_SNAPSHOT_OUT_OF_DATE: "storage: the snapshot is not newer than the one already held",
  RAFT_ERR_IDENTITY_REFUSED:
    "a peer refused this node's identity: this data directory replaced a member's (it must rejoin as a new member) or belongs to another cluster",
  RAFT_ERR_ROLLED_BACK:
    "a peer refused this node: its data directory holds less than the node already told that peer (restored from an older copy); it must rejoin as a new member",
} as const;

export type RaftIoErrorCode = keyof typeof RAFT_IO_ERROR_CODES;
export type RaftNodeErrorCode = RaftErrorCode | RaftIoErrorCode;

/** Every code of the package with its meaning. */
export const RAFT_ERRORS: Readonly<Record<RaftNodeErrorCode, string>> = { ...RAFT_ERROR_CODES, ...RAFT_IO_ERROR_CODES };

/** The one error class the RaftNode API rejects with. `leader` is the known leader ("" if none). */
export class RaftNodeError extends Error {
  override readonly name: string = "RaftNodeError";
  readonly code: RaftNodeErrorCode;
  readonly leader: NodeId;

  constructor(code: RaftNodeErrorCode, message: string, options?: { leader?: NodeId; cause?: unknown }) {
    super(`${code}: ${message}`, options?.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.leader = options?.leader ?? "";
  }
}

/** Proposals, reads and membership changes go to the leader; `leader` says where ("" when unknown). */
export class NotLeaderError extends RaftNodeError {
  override readonly name = "NotLeaderError";
  constructor(leader: NodeId, options?: { cause?: unknown }) {
    super("RAFT_ERR_NOT_LEADER", leader === "" ? "no leader is known" : `the leader is ${leader}`, {
      leader,
      ...options,
    });
  }
}

export class TimeoutError extends RaftNodeError {
  override readonly name = "TimeoutError";
  constructor(what: string, timeoutMs: number, leader: NodeId) {
    super("RAFT_ERR_TIMEOUT", `${what} did not complete within ${timeoutMs} ms`, { leader });
  }
}

export class ShuttingDownError extends RaftNodeError {
  override readonly name = "ShuttingDownError";
  constructor(what: string) {
    super("RAFT_ERR_SHUTTING_DOWN", `${what}: the node is shutting down`);
  }
}

/** Storage-level operating errors (the read-side "compacted"/"unavailable" ones are core's RaftStorageError). */
export class StorageError extends RaftNodeError {
  override readonly name = "StorageError";
}

/** Turns a core RaftError (e.g. proposal dropped) into the driver's error class, keeping code and cause. */
export function fromCoreError(error: unknown, leader: NodeId): RaftNodeError {
  if (error instanceof RaftNodeError) return error;
  if (error instanceof RaftError) {
    if (error.code === "RAFT_ERR_NOT_LEADER")
      return new NotLeaderError(error.leader === "" ? leader : error.leader, { cause: error });
    return new RaftNodeError(error.code, error.message, { leader, cause: error });
  }
  throw error; // not an operating error: a bug, let it crash
}
