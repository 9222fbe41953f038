// migrations.createKeys (importKeys) and apis.deleteKeys. An import is all-or-nothing: every
// key, permission, role and identity it needs is checked against the state first, then inserted.

import { assert } from "../assert.js";
import { insertIdentity, refillRule, resolveIdentity } from "./apply-keys.js";
import type { DeleteKeysCommand, ImportedKey, ImportKeysCommand, RefByName } from "./commands.js";
import { createdKeyLimits } from "./key-limits.js";
import { creditsMax, identitiesMax, importKeysMax, keysMax } from "./limits.js";
import { permissionIdOfSlug, roleIdOfName } from "./names.js";
import { commandError, type CommandError, type CommandOutcome } from "./outcome.js";
import { insertResolved, isCommandError, resolveRefs } from "./refs.js";
import { indexKey, sortedUnique, unindexKey } from "./state.js";
import type { IdentityRecord, KeyRecord, KeyState, RatelimitConfig } from "./types.js";

/** Every name once (first occurrence's newId wins), so one resolution covers the whole batch. */
function uniqueByName(lists: readonly RefByName[][]): RefByName[] {
  const byName = new Map<string, RefByName>();
  for (const list of lists)
    for (const ref of list) if (!byName.has(ref.name)) byName.set(ref.name, { ...ref, create: true });
  return [...byName.values()];
}

/**
 * The entries to import: all of them, or with `skipExistingHashes` those whose hash is neither
 * stored nor repeated earlier in the command (the others are returned as `skipped` hashes).
 */
function entriesToImport(state: KeyState, command: ImportKeysCommand): { keys: ImportedKey[]; skipped: string[] } {
  if (command.skipExistingHashes !== true) return { keys: command.keys, skipped: [] };
  const seen = new Set<string>();
  const keys: ImportedKey[] = [];
  const skipped: string[] = [];
  for (const key of command.keys) {
    if (state.keys.hasHash(key.hash) || seen.has(key.hash)) skipped.push(key.hash);
    else keys.push(key);
    seen.add(key.hash);
  }
  return { keys, skipped };
}

function checkEntries(state: KeyState, command: ImportKeysCommand, keys: readonly ImportedKey[]): CommandError | null {
  if (command.keys.length > importKeysMax)
    return commandError("BAD_REQUEST", `at most ${importKeysMax} keys may be imported at once`);
  if (state.keys.size + keys.length > keysMax) return commandError("PRECONDITION_FAILED", "the key limit is reached");
  const hashes = new Set<string>();
  const ids = new Set<string>();
  for (const [index, key] of keys.entries()) {
    if (state.keys.hasHash(key.hash) || hashes.has(key.hash)) {
      return commandError("CONFLICT", `${index}: a key with this hash already exists`);
    }
    if (state.keys.has(key.keyId) || ids.has(key.keyId))
      return commandError("CONFLICT", `key ${key.keyId} already exists`);
    hashes.add(key.hash);
    ids.add(key.keyId);
    if (key.remaining !== null && key.remaining <= 0 && !(command.zeroRemainingAllowed === true && key.remaining === 0))
      return commandError("BAD_REQUEST", `${index}: remaining must be greater than 0.`);
    if (key.remaining !== null && !(Number.isSafeInteger(key.remaining) && key.remaining <= creditsMax)) {
      return commandError("BAD_REQUEST", `${index}: remaining must be an integer of at most ${creditsMax}`);
    }
    if (key.refill !== null && key.remaining === null) {
      return commandError("BAD_REQUEST", `${index}: remaining must be set if you are using refill.`);
    }
    if (key.refill !== null && key.refill.interval === "daily" && key.refill.refillDay !== null) {
      return commandError("BAD_REQUEST", `${index}: when interval is set to 'daily', 'refillDay' must be null.`);
    }
  }
  return null;
}

export function applyImportKeys(state: KeyState, command: ImportKeysCommand): CommandOutcome {
  for (const key of command.keys) {
    if (!state.apis.has(key.apiId)) return commandError("NOT_FOUND", `api ${key.apiId} not found`);
  }
  const { keys, skipped } = entriesToImport(state, command);
  const invalid = checkEntries(state, command, keys);
  if (invalid !== null) return invalid;
  const limits: RatelimitConfig[][] = [];
  for (const key of keys) {
    const configs = createdKeyLimits(key.ratelimit, key.ratelimits);
    if (isCommandError(configs)) return configs;
    limits.push(configs);
  }
  const permissions = resolveRefs(
    state,
    "permission",
    uniqueByName(keys.map((key) => key.permissions)),
    command.allowCreatePermissions,
    command.nowMs,
  );
  if (isCommandError(permissions)) return permissions;
  const roles = resolveRefs(
    state,
    "role",
    uniqueByName(keys.map((key) => key.roles)),
    command.allowCreateRoles,
    command.nowMs,
  );
  if (isCommandError(roles)) return roles;
  const identityIds = new Map<string, string>();
  const newIdentities: IdentityRecord[] = [];
  for (const key of keys) {
    if (key.identity === null || identityIds.has(key.identity.externalId)) continue;
    if (newIdentities.some((identity) => identity.id === key.identity?.newIdentityId)) {
      return commandError("CONFLICT", `identity ${key.identity.newIdentityId} already exists`);
    }
    const resolved = resolveIdentity(state, key.identity, command.nowMs);
    if (isCommandError(resolved)) return resolved;
    identityIds.set(key.identity.externalId, resolved.identityId);
    if (resolved.create !== null) newIdentities.push(resolved.create);
  }
  if (state.identities.size + newIdentities.length > identitiesMax)
    return commandError("PRECONDITION_FAILED", "the identity limit is reached");

  insertResolved(state, permissions);
  insertResolved(state, roles);
  for (const identity of newIdentities) insertIdentity(state, identity);
  const idOf = (kind: "permission" | "role", name: string): string => {
    const id = kind === "permission" ? permissionIdOfSlug(state, name) : roleIdOfName(state, name);
    assert(id !== undefined, `importKeys: ${kind} ${name} was resolved`);
    return id;
  };
  for (const [index, entry] of keys.entries()) {
    const key: KeyRecord = {
      id: entry.keyId,
      apiId: entry.apiId,
      hash: entry.hash,
      start: entry.start,
      name: entry.name,
      ownerId: entry.identity?.externalId ?? entry.ownerId,
      identityId: entry.identity === null ? null : (identityIds.get(entry.identity.externalId) ?? null),
      meta: entry.meta,
      createdAtMs: command.nowMs,
      updatedAtMs: null,
      expiresAtMs: entry.expiresAtMs,
      enabled: entry.enabled,
      environment: entry.environment,
      remaining: entry.remaining,
      refill: entry.refill === null ? null : refillRule(entry.refill, command.nowMs),
      ratelimits: limits[index]!,
      roleIds: sortedUnique(entry.roles.map((ref) => idOf("role", ref.name))),
      permissionIds: sortedUnique(entry.permissions.map((ref) => idOf("permission", ref.name))),
    };
    if (entry.migrationId !== undefined) key.pendingMigrationId = entry.migrationId;
    indexKey(state, key);
    state.derived.delete(key.id);
  }
  return skipped.length === 0
    ? { ok: true, ids: keys.map((key) => key.keyId) }
    : { ok: true, ids: keys.map((key) => key.keyId), skipped };
}

/** Deletes every key of the api; the root api's keys are protected. */
export function applyDeleteKeys(state: KeyState, command: DeleteKeysCommand): CommandOutcome {
  const api = state.apis.get(command.apiId);
  if (api === undefined) return commandError("NOT_FOUND", `api ${command.apiId} not found`);
  if (api.deleteProtected) return commandError("DELETE_PROTECTED", `api ${api.id} is protected from deletions`);
  const ids = state.keys.idsOfApi(api.id);
  for (const id of ids) {
    const key = state.keys.get(id);
    assert(key !== undefined, "deleteKeys: the api index names existing keys");
    unindexKey(state, key);
  }
  return { ok: true, count: ids.length };
}
