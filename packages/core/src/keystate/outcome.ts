// The typed result of applying a command: ok with its data, or a coded v1 error. A command that
// fails changes nothing (every command is atomic, keyraft decision 5).
import type { CreditLeaseOutcome } from "../leases/types.js";

/** v1 error codes a command can produce (status per the v1 code table, see the gateway). */
export type CommandErrorCode =
  | "BAD_REQUEST"
  | "NOT_FOUND"
  | "CONFLICT"
  | "DELETE_PROTECTED"
  | "PRECONDITION_FAILED"
  | "INSUFFICIENT_PERMISSIONS"
  | "USAGE_EXCEEDED";

export interface NamedRef {
  id: string;
  name: string;
}

export interface CommandOk {
  ok: true;
  /** Id of the created or addressed record (createApi, createKey, setOverride, ...). */
  id?: string;
  /** setPermissions/setRoles/addPermissions/addRoles: every requested record. */
  items?: NamedRef[];
  /** spendCredits/updateRemaining: credits after the command (null = unlimited). */
  remaining?: number | null;
  /** deleteKeys: how many keys were deleted. */
  count?: number;
  /** importKeys: the ids of the imported keys, in request order. */
  ids?: string[];
  /** importKeys with skipExistingHashes: the hashes not imported (already stored or repeated), in request order. */
  skipped?: string[];
  /** ensureRootKey: whether a key was created. */
  created?: boolean;
  /** grantCreditLease/settleCreditLease/expireCreditLease: what the ledger did. */
  lease?: CreditLeaseOutcome;
  /** creditBatch: the outcome of each lease command, in order. */
  leases?: CreditLeaseOutcome[];
}

export interface CommandError {
  ok: false;
  code: CommandErrorCode;
  message: string;
}

export type CommandOutcome = CommandOk | CommandError;

export function commandError(code: CommandErrorCode, message: string): CommandError {
  return { ok: false, code, message };
}

export const okEmpty: CommandOk = Object.freeze({ ok: true }) as CommandOk;
