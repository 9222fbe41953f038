// keys.rerollKey and the completion of a migrated key: both replace one key's secret form in the
// replicated state, so every replica answers the old and new secrets alike.

import { assert } from "../assert.js";
import type { CompleteMigrationCommand, RerollKeyCommand } from "./commands.js";
import { refilledCredits, putCredits } from "./credit-ledgers.js";
import { keysMax } from "./limits.js";
import { commandError, type CommandOutcome } from "./outcome.js";
import { cloneJson } from "./snapshot.js";
import { indexKey } from "./state.js";
import type { KeyRecord, KeyState } from "./types.js";

const minuteMs = 60_000;

/**
 * When a rerolled key's grace period ends: `nowMs + expirationMs` rounded up to the next whole
 * minute, or `nowMs` itself for an expiration of 0 (the old key answers EXPIRED from then on).
 */
export function rerollGraceEndMs(nowMs: number, expirationMs: number): number {
  assert(
    Number.isSafeInteger(nowMs) && Number.isSafeInteger(expirationMs) && expirationMs >= 0,
    "rerollGraceEndMs: ms",
  );
  if (expirationMs === 0) return nowMs;
  return Math.ceil((nowMs + expirationMs) / minuteMs) * minuteMs;
}

/**
 * The new key copies the old one's configuration (not its usage: its rate-limit counters start
 * empty, its balance is a copy spent independently); the old key keeps verifying with everything
 * it had until `oldExpiresAtMs`, then answers EXPIRED (an earlier expiry is replaced).
 */
export function applyRerollKey(state: KeyState, command: RerollKeyCommand): CommandOutcome {
  const current = state.keys.get(command.keyId);
  if (current === undefined) return commandError("NOT_FOUND", `key ${command.keyId} not found`);
  if (state.keys.has(command.newKeyId)) return commandError("CONFLICT", `key ${command.newKeyId} already exists`);
  if (state.keys.hasHash(command.hash)) return commandError("CONFLICT", "a key with this hash already exists");
  if (state.keys.size >= keysMax) return commandError("PRECONDITION_FAILED", "the key limit is reached");
  // The balance copied is the old key's as of now (a refill due by now applied first).
  const refilled = refilledCredits(state, current, command.nowMs);
  const old = refilled.key;
  const created: KeyRecord = {
    id: command.newKeyId,
    apiId: old.apiId,
    hash: command.hash,
    start: command.start,
    name: old.name,
    ownerId: old.ownerId,
    identityId: old.identityId,
    meta: cloneJson(old.meta),
    createdAtMs: command.nowMs,
    updatedAtMs: null,
    expiresAtMs: old.expiresAtMs,
    enabled: old.enabled,
    environment: old.environment,
    remaining: old.remaining,
    refill: old.refill === null ? null : { ...old.refill },
    ratelimits: old.ratelimits.map((limit) => ({ ...limit })),
    roleIds: [...old.roleIds],
    permissionIds: [...old.permissionIds],
  };
  putCredits(state, {
    key: { ...old, expiresAtMs: command.oldExpiresAtMs, updatedAtMs: command.nowMs },
    ledger: refilled.ledger,
  });
  indexKey(state, created);
  state.derived.delete(old.id);
  state.derived.delete(created.id);
  return { ok: true, id: created.id };
}

/**
 * Rewrites a pending key's migration hash to the standard one. Refused (NOT_FOUND, nothing
 * changes) when the key is gone or no longer pending for this migration: then a concurrent
 * verification completed it first.
 */
export function applyCompleteMigration(state: KeyState, command: CompleteMigrationCommand): CommandOutcome {
  const key = state.keys.get(command.keyId);
  if (key === undefined || key.pendingMigrationId !== command.migrationId) {
    return commandError("NOT_FOUND", `key ${command.keyId} is not pending for migration ${command.migrationId}`);
  }
  if (state.keys.hasHash(command.hash)) return commandError("CONFLICT", "a key with this hash already exists");
  const { pendingMigrationId: _completed, ...rest } = key;
  const completed: KeyRecord = { ...rest, hash: command.hash, start: command.start };
  state.keys.set(completed.id, completed);
  state.derived.delete(completed.id);
  assert(state.keys.idOfHash(completed.hash) === completed.id, "completeMigration: the new hash finds the key");
  return { ok: true, id: completed.id };
}
