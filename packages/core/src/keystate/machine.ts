// The one entry point that changes the key state: applyCommand(state, command). Deterministic:
// the same state and command give the same outcome and the same next state on every replica.

import { applyCompleteMigration, applyRerollKey } from "./apply-reroll.js";
import { assert } from "../assert.js";
import { recordAudit } from "../audit/log.js";
import { auditEventActions, type AuditEventAction } from "../audit/describe.js";
import { commandError, okEmpty } from "./outcome.js";
import {
  applyCreateKey,
  applyDeleteKey,
  applyEnsureRootKey,
  applySpendCredits,
  applyUpdateKey,
  applyUpdateRemaining,
} from "./apply-keys.js";
import { applyCreditBatch, applyCreditLease, applyRefillCredits } from "./apply-credits.js";
import { applyDeleteKeys, applyImportKeys } from "./apply-import.js";
import {
  applyCreateApi,
  applyCreateIdentity,
  applyCreateNamespace,
  applyDeleteApi,
  applyDeleteIdentity,
  applyDeleteOverride,
  applySetOverride,
  applyUpdateIdentity,
} from "./apply-misc.js";
import {
  applyConnect,
  applyCreatePermission,
  applyCreateRole,
  applyDeletePermission,
  applyDeleteRole,
  applyDisconnect,
  applySetRolePermissions,
} from "./apply-rbac.js";
import type { KeyCommand } from "./commands.js";
import type { CommandOutcome } from "./outcome.js";
import {
  captureKeyState,
  restoreKeyStateInto,
  restoreKeyStateSteps,
  type SnapshotOwnership,
  snapshotKeyState,
  type KeyStateSnapshot,
  type KeyStateCapture,
} from "./snapshot.js";
import { createKeyState } from "./state.js";
import { ROOT_API_ID, type KeyState } from "./types.js";

export function applyCommand(state: KeyState, command: KeyCommand): CommandOutcome {
  const outcome = dispatch(state, command);
  // A refused command changed nothing, so it leaves no audit entry either.
  if (outcome.ok && command.audit !== undefined) recordAudit(state.audit, command, outcome);
  assert(state.apis.get(ROOT_API_ID)?.deleteProtected === true, "applyCommand: the root api always exists");
  return outcome;
}

function dispatch(state: KeyState, command: KeyCommand): CommandOutcome {
  switch (command.type) {
    case "createApi":
      return applyCreateApi(state, command);
    case "deleteApi":
      return applyDeleteApi(state, command);
    case "createKey":
      return applyCreateKey(state, command);
    case "updateKey":
      return applyUpdateKey(state, command);
    case "deleteKey":
      return applyDeleteKey(state, command);
    case "deleteKeys":
      return applyDeleteKeys(state, command);
    case "importKeys":
      return applyImportKeys(state, command);
    case "setPermissions":
    case "setRoles":
    case "addPermissions":
    case "addRoles":
      return applyConnect(state, command);
    case "removePermissions":
    case "removeRoles":
      return applyDisconnect(state, command);
    case "updateRemaining":
      return applyUpdateRemaining(state, command);
    case "createPermission":
      return applyCreatePermission(state, command);
    case "deletePermission":
      return applyDeletePermission(state, command);
    case "createRole":
      return applyCreateRole(state, command);
    case "deleteRole":
      return applyDeleteRole(state, command);
    case "setRolePermissions":
      return applySetRolePermissions(state, command);
    case "createIdentity":
      return applyCreateIdentity(state, command);
    case "updateIdentity":
      return applyUpdateIdentity(state, command);
    case "deleteIdentity":
      return applyDeleteIdentity(state, command);
    case "createNamespace":
      return applyCreateNamespace(state, command);
    case "setOverride":
      return applySetOverride(state, command);
    case "deleteOverride":
      return applyDeleteOverride(state, command);
    case "spendCredits":
      return applySpendCredits(state, command);
    case "ensureRootKey":
      return applyEnsureRootKey(state, command);
    case "rerollKey":
      return applyRerollKey(state, command);
    case "completeMigration":
      return applyCompleteMigration(state, command);
    case "grantCreditLease":
    case "settleCreditLease":
    case "expireCreditLease":
      return applyCreditLease(state, command);
    case "creditBatch":
      return applyCreditBatch(state, command);
    case "refillCredits":
      return applyRefillCredits(state, command);
    case "auditEvent":
      // Only its audit entry (applyCommand); an unknown action is a programmer error, refused alike everywhere.
      return auditEventActions.includes(command.action as AuditEventAction)
        ? okEmpty
        : commandError("BAD_REQUEST", `auditEvent: unknown action ${command.action}`);
    default: {
      const unreachable: never = command;
      throw new Error(`applyCommand: unknown command ${JSON.stringify(unreachable)}`);
    }
  }
}

/**
 * The key state as a ReplicatedStateMachine (packages/gateway/src/store/types.ts): the command
 * log (LevelDB now, Raft later) drives it. `state` stays the same object across `restore`, so
 * readers may hold on to it.
 */
export interface KeyStateMachine {
  readonly state: KeyState;
  apply(command: KeyCommand): CommandOutcome;
  /** A deep copy of the state (shares nothing with it). */
  snapshot(): KeyStateSnapshot;
  /** The state's records as they are now, uncopied (see captureKeyState): for encoding in slices. */
  capture(): KeyStateCapture;
  restore(snapshot: unknown): void;
  /**
   * The same restore in steps of about `recordsPerStep` records (see restoreKeyStateSteps); with
   * "adopt" the state takes the snapshot's records over instead of copying them.
   */
  restoreSteps(snapshot: unknown, recordsPerStep: number, ownership?: SnapshotOwnership): Generator<void, void>;
}

export function keyStateMachine(state: KeyState = createKeyState()): KeyStateMachine {
  return {
    state,
    apply: (command) => applyCommand(state, command),
    snapshot: () => snapshotKeyState(state),
    capture: () => captureKeyState(state),
    restore: (snapshot) => restoreKeyStateInto(state, snapshot),
    restoreSteps: (snapshot, recordsPerStep, ownership) =>
      restoreKeyStateSteps(state, snapshot, recordsPerStep, ownership),
  };
}
