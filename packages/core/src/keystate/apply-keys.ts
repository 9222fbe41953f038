// createKey, updateKey, deleteKey, updateRemaining, spendCredits, ensureRootKey. Each handler
// checks every precondition first and mutates only after all passed (atomic commands).

import { assert } from "../assert.js";
import {
  applyCreditAdjust,
  applyCreditDirectSpend,
  applyCreditSet,
  createCreditLedger,
  ledgerRemaining,
} from "../leases/ledger.js";
import type {
  CreateKeyCommand,
  DeleteKeyCommand,
  EnsureRootKeyCommand,
  IdentityLink,
  RefillInput,
  SpendCreditsCommand,
  UpdateKeyCommand,
  UpdateRemainingCommand,
} from "./commands.js";
import { ledgerOf, putCredits, refilledCredits, withLedger, type CreditsChange } from "./credit-ledgers.js";
import { creditsAt } from "./credits-view.js";
import { byName, createdKeyLimits, limitConfigs } from "./key-limits.js";
import { creditsMax, identitiesMax, keysMax, retiredRootKeysMax } from "./limits.js";
import { indexPermissionSlug, permissionIdOfSlug } from "./names.js";
import { commandError, okEmpty, type CommandError, type CommandOutcome } from "./outcome.js";
import { insertResolved, isCommandError, resolveRefs, type ResolvedRefs } from "./refs.js";
import { indexKey, sortedUnique, unindexKey } from "./state.js";
import {
  ROOT_API_ID,
  ROOT_PERMISSION,
  type IdentityRecord,
  type KeyRecord,
  type KeyState,
  type RatelimitConfig,
  type RefillRule,
} from "./types.js";

function keyNotFound(keyId: string): CommandError {
  return commandError("NOT_FOUND", `key ${keyId} not found`);
}

/** The identity a link resolves to, and the record to insert when it does not exist yet. */
export function resolveIdentity(
  state: KeyState,
  link: IdentityLink,
  nowMs: number,
): { identityId: string; create: IdentityRecord | null } | CommandError {
  const existing = state.identityIdByExternalId.get(link.externalId);
  if (existing !== undefined && link.mayLinkExisting === false) {
    return commandError(
      "INSUFFICIENT_PERMISSIONS",
      `linking a key to the existing identity ${existing} needs identity.*.update_identity or identity.${existing}.update_identity`,
    );
  }
  if (existing !== undefined) return { identityId: existing, create: null };
  if (state.identities.has(link.newIdentityId))
    return commandError("CONFLICT", `identity ${link.newIdentityId} already exists`);
  if (state.identities.size >= identitiesMax)
    return commandError("PRECONDITION_FAILED", "the identity limit is reached");
  const create: IdentityRecord = {
    id: link.newIdentityId,
    externalId: link.externalId,
    environment: "default",
    meta: null,
    ratelimits: [],
    createdAtMs: nowMs,
  };
  return { identityId: link.newIdentityId, create };
}

export function insertIdentity(state: KeyState, identity: IdentityRecord | null): void {
  if (identity === null) return;
  state.identities.set(identity.id, identity);
  state.identityIdByExternalId.set(identity.externalId, identity.id);
}

export function defaultLimit(ratelimit: { limit: number; durationMs: number } | null): RatelimitConfig[] {
  return ratelimit === null
    ? []
    : [{ name: "default", limit: ratelimit.limit, durationMs: ratelimit.durationMs, autoApply: true }];
}

export function refillRule(refill: RefillInput, lastRefillAtMs: number): RefillRule {
  return {
    interval: refill.interval,
    amount: refill.amount,
    refillDay: refill.interval === "daily" ? null : (refill.refillDay ?? 1),
    lastRefillAtMs,
  };
}

export function applyCreateKey(state: KeyState, command: CreateKeyCommand): CommandOutcome {
  if (!state.apis.has(command.apiId)) return commandError("NOT_FOUND", `api ${command.apiId} not found`);
  if (state.keys.has(command.keyId)) return commandError("CONFLICT", `key ${command.keyId} already exists`);
  if (state.keys.hasHash(command.hash)) return commandError("CONFLICT", "a key with this hash already exists");
  if (state.keys.size >= keysMax) return commandError("PRECONDITION_FAILED", "the key limit is reached");
  if (
    command.remaining !== null &&
    command.remaining <= 0 &&
    !(command.zeroRemainingAllowed === true && command.remaining === 0)
  ) {
    return commandError("BAD_REQUEST", "remaining must be greater than 0.");
  }
  if (command.remaining !== null && !(Number.isSafeInteger(command.remaining) && command.remaining <= creditsMax)) {
    return commandError("BAD_REQUEST", `remaining must be an integer of at most ${creditsMax}`);
  }
  if (command.refill !== null && command.remaining === null) {
    return commandError("BAD_REQUEST", "remaining must be set if you are using refill.");
  }
  if (command.refill !== null && command.refill.interval === "daily" && command.refill.refillDay !== null) {
    return commandError("BAD_REQUEST", "when interval is set to 'daily', 'refillDay' must be null.");
  }
  const permissions = resolveRefs(
    state,
    "permission",
    command.permissions,
    command.allowCreatePermissions,
    command.nowMs,
  );
  if (isCommandError(permissions)) return permissions;
  const roles = resolveRefs(state, "role", command.roles, command.allowCreateRoles, command.nowMs);
  if (isCommandError(roles)) return roles;
  const identity = command.identity === null ? null : resolveIdentity(state, command.identity, command.nowMs);
  if (identity !== null && isCommandError(identity)) return identity;
  const ratelimits = createdKeyLimits(command.ratelimit, command.ratelimits);
  if (isCommandError(ratelimits)) return ratelimits;

  insertResolved(state, permissions);
  insertResolved(state, roles);
  if (identity !== null) insertIdentity(state, identity.create);
  const key: KeyRecord = {
    id: command.keyId,
    apiId: command.apiId,
    hash: command.hash,
    start: command.start,
    name: command.name,
    ownerId: command.identity?.externalId ?? command.ownerId,
    identityId: identity?.identityId ?? null,
    meta: command.meta,
    createdAtMs: command.nowMs,
    updatedAtMs: null,
    expiresAtMs: command.expiresAtMs,
    enabled: command.enabled,
    environment: command.environment,
    remaining: command.remaining,
    refill: command.refill === null ? null : refillRule(command.refill, command.nowMs),
    ratelimits,
    roleIds: sortedUnique(roles.ids),
    permissionIds: sortedUnique(permissions.ids),
  };
  indexKey(state, key);
  state.derived.delete(key.id);
  return { ok: true, id: key.id };
}

/** Checks of updateKey that need no lookup beyond the key; null when all pass. */
function checkUpdate(key: KeyRecord, command: UpdateKeyCommand): CommandError | null {
  if (command.refill && command.refill.interval === "daily" && command.refill.refillDay !== null) {
    return commandError("BAD_REQUEST", "Cannot set 'refillDay' if 'interval' is 'daily'");
  }
  if (command.remaining !== undefined && command.remaining !== null && command.remaining < 0) {
    return commandError("BAD_REQUEST", "remaining must not be negative");
  }
  if (
    command.remaining !== undefined &&
    command.remaining !== null &&
    !(Number.isSafeInteger(command.remaining) && command.remaining <= creditsMax)
  ) {
    return commandError("BAD_REQUEST", `remaining must be an integer of at most ${creditsMax}`);
  }
  return null;
}

export function applyUpdateKey(state: KeyState, command: UpdateKeyCommand): CommandOutcome {
  const current = state.keys.get(command.keyId);
  if (current === undefined) return keyNotFound(command.keyId);
  const refilled = refilledCredits(state, current, command.nowMs);
  const key = refilled.key;
  const invalid = checkUpdate(key, command);
  if (invalid !== null) return invalid;
  let identity: { identityId: string; create: IdentityRecord | null } | null | undefined;
  if (command.identity !== undefined) {
    const resolved = command.identity === null ? null : resolveIdentity(state, command.identity, command.nowMs);
    if (resolved !== null && isCommandError(resolved)) return resolved;
    identity = resolved;
  }
  let namedLimits: RatelimitConfig[] | undefined;
  if (command.ratelimits !== undefined) {
    if (command.ratelimit !== undefined) {
      return commandError("BAD_REQUEST", "give either ratelimit or ratelimits, not both");
    }
    const configs = limitConfigs(command.ratelimits);
    if (isCommandError(configs)) return configs;
    namedLimits = configs;
  }
  let roles: ResolvedRefs | undefined;
  if (command.roles !== undefined) {
    const resolved = resolveRefs(state, "role", command.roles.refs, command.roles.allowCreate, command.nowMs);
    if (isCommandError(resolved)) return resolved;
    roles = resolved;
  }
  let permissions: ResolvedRefs | undefined;
  if (command.permissions !== undefined) {
    const resolved = resolveRefs(
      state,
      "permission",
      command.permissions.refs,
      command.permissions.allowCreate,
      command.nowMs,
    );
    if (isCommandError(resolved)) return resolved;
    permissions = resolved;
  }

  const next: KeyRecord = { ...key, updatedAtMs: command.nowMs };
  if (command.name !== undefined) next.name = command.name;
  if (command.ownerId !== undefined) next.ownerId = command.ownerId;
  if (identity !== undefined) {
    insertIdentity(state, identity?.create ?? null);
    next.identityId = identity?.identityId ?? null;
    next.ownerId = command.identity?.externalId ?? null;
  }
  if (command.meta !== undefined) next.meta = command.meta;
  if (command.expiresAtMs !== undefined) next.expiresAtMs = command.expiresAtMs;
  if (command.ratelimit !== undefined) {
    const others = key.ratelimits.filter((limit) => limit.name !== "default");
    next.ratelimits = [...others, ...defaultLimit(command.ratelimit)].sort(byName);
  }
  if (namedLimits !== undefined) next.ratelimits = namedLimits;
  let ledger = refilled.ledger;
  if (command.remaining !== undefined && command.remaining !== null) {
    // A reset: a new epoch (leases of older epochs return nothing), or a first ledger.
    ledger = state.creditLedgers.has(key.id)
      ? applyCreditSet(ledgerOf(state, key), command.remaining)
      : createCreditLedger(key.id, command.remaining);
    next.remaining = ledgerRemaining(ledger);
  } else if (command.remaining === null) {
    next.remaining = null; // the ledger stays (epochs never go back if credits return)
  }
  if (command.refill !== undefined) {
    next.refill =
      command.refill === null ? null : refillRule(command.refill, key.refill?.lastRefillAtMs ?? command.nowMs);
  }
  if (command.enabled !== undefined) next.enabled = command.enabled;
  if (roles !== undefined) {
    insertResolved(state, roles);
    next.roleIds = sortedUnique(roles.ids);
  }
  if (permissions !== undefined) {
    insertResolved(state, permissions);
    next.permissionIds = sortedUnique(permissions.ids);
  }
  putCredits(state, { key: next, ledger });
  state.derived.delete(next.id);
  return okEmpty;
}

/** Remembers a deleted root key's hash, forgetting the oldest past retiredRootKeysMax. */
function retireRootKeyHash(state: KeyState, hash: string): void {
  state.retiredRootKeyHashes.add(hash);
  if (state.retiredRootKeyHashes.size > retiredRootKeysMax) {
    const oldest = state.retiredRootKeyHashes.values().next().value!;
    state.retiredRootKeyHashes.delete(oldest);
  }
  assert(state.retiredRootKeyHashes.size <= retiredRootKeysMax, "retiredRootKeyHashes within its bound");
}

export function applyDeleteKey(state: KeyState, command: DeleteKeyCommand): CommandOutcome {
  const key = state.keys.get(command.keyId);
  if (key === undefined) return keyNotFound(command.keyId);
  unindexKey(state, key);
  state.derived.delete(key.id);
  if (key.apiId === ROOT_API_ID) retireRootKeyHash(state, key.hash);
  return okEmpty;
}

export function applyUpdateRemaining(state: KeyState, command: UpdateRemainingCommand): CommandOutcome {
  const current = state.keys.get(command.keyId);
  if (current === undefined) return keyNotFound(command.keyId);
  const refilled = refilledCredits(state, current, command.nowMs);
  const key = refilled.key;
  let change: CreditsChange;
  if (command.op === "set") {
    if (command.value !== null && command.value < 0)
      return commandError("BAD_REQUEST", "remaining must not be negative");
    if (command.value !== null && !(Number.isSafeInteger(command.value) && command.value <= creditsMax)) {
      return commandError("BAD_REQUEST", `remaining must be an integer of at most ${creditsMax}`);
    }
    if (command.value === null) change = { key: { ...key, remaining: null }, ledger: null };
    else {
      const ledger = state.creditLedgers.has(key.id)
        ? applyCreditSet(ledgerOf(state, key), command.value)
        : createCreditLedger(key.id, command.value);
      change = { key: withLedger(key, ledger), ledger };
    }
  } else {
    if (key.remaining === null || refilled.ledger === null) {
      return commandError(
        "BAD_REQUEST",
        `cannot ${command.op} a key with unlimited remaining requests, please 'set' a value instead.`,
      );
    }
    if (command.value === null) return commandError("BAD_REQUEST", `cannot ${command.op} a key by null.`);
    if (command.op === "increment" && key.remaining + command.value > creditsMax) {
      return commandError("BAD_REQUEST", `remaining must be at most ${creditsMax}`);
    }
    // keyraft keeps credits non-negative: a decrement takes at most the unleased credits (upstream
    // went negative; credits inside nodes' leases are not taken back).
    const ledger = applyCreditAdjust(refilled.ledger, command.op === "increment" ? command.value : -command.value);
    change = { key: withLedger(key, ledger), ledger };
  }
  // A key made unlimited keeps its refill: it fills the balance again at its next instant.
  const remaining = change.key.remaining;
  if (remaining !== null && remaining > creditsMax)
    return commandError("BAD_REQUEST", `remaining must be at most ${creditsMax}`);
  putCredits(state, { key: { ...change.key, updatedAtMs: command.nowMs }, ledger: change.ledger });
  return { ok: true, remaining };
}

/**
 * Deducts the cost of an admitted verification (decision 2). Re-checks the balance at apply time:
 * under replication a concurrent spend may have been ordered first, and then this one is refused
 * (USAGE_EXCEEDED, nothing deducted) rather than overspending.
 */
export function applySpendCredits(state: KeyState, command: SpendCreditsCommand): CommandOutcome {
  const current = state.keys.get(command.keyId);
  if (current === undefined) return keyNotFound(command.keyId);
  // A refill due on an unlimited key makes its credits finite first (refilledCredits).
  const refilled = refilledCredits(state, current, command.nowMs);
  if (refilled.key.remaining === null) return { ok: true, remaining: null };
  assert(refilled.ledger !== null, "spendCredits: finite credits have a ledger");
  // A direct spend draws on the unleased credits only: what nodes hold in leases is theirs to spend.
  const spend = applyCreditDirectSpend(refilled.ledger, command.cost);
  if (!spend.admitted) {
    return commandError("USAGE_EXCEEDED", "the key has no credits left for this cost");
  }
  const key = withLedger(refilled.key, spend.record);
  assert(key.remaining !== null && key.remaining >= 0, "spendCredits: the balance stays >= 0");
  putCredits(state, { key, ledger: spend.record });
  return { ok: true, remaining: key.remaining };
}

/** Makes the key with `hash` a root key holding `*`: creates it, or repairs an existing one. */
export function applyEnsureRootKey(state: KeyState, command: EnsureRootKeyCommand): CommandOutcome {
  const existingId = state.keys.idOfHash(command.hash);
  const permissionId = permissionIdOfSlug(state, ROOT_PERMISSION) ?? command.permissionId;
  const createPermission = !state.permissions.has(permissionId);
  if (createPermission && permissionIdOfSlug(state, ROOT_PERMISSION) !== undefined) {
    return commandError("CONFLICT", "the root permission is inconsistent");
  }
  let key: KeyRecord;
  if (existingId !== undefined) {
    const existing = state.keys.get(existingId);
    if (existing === undefined) return keyNotFound(existingId);
    if (existing.apiId !== ROOT_API_ID) return commandError("CONFLICT", "this secret belongs to a key of another api");
    key = {
      ...existing,
      enabled: true,
      expiresAtMs: null,
      permissionIds: sortedUnique([...existing.permissionIds, permissionId]),
    };
  } else {
    if (state.keys.has(command.keyId)) return commandError("CONFLICT", `key ${command.keyId} already exists`);
    if (state.keys.size >= keysMax) return commandError("PRECONDITION_FAILED", "the key limit is reached");
    key = {
      id: command.keyId,
      apiId: ROOT_API_ID,
      hash: command.hash,
      start: command.start,
      name: "root",
      ownerId: null,
      identityId: null,
      meta: null,
      createdAtMs: command.nowMs,
      updatedAtMs: null,
      expiresAtMs: null,
      enabled: true,
      environment: null,
      remaining: null,
      refill: null,
      ratelimits: [],
      roleIds: [],
      permissionIds: [permissionId],
    };
  }
  if (createPermission) {
    state.permissions.set(permissionId, {
      id: permissionId,
      name: ROOT_PERMISSION,
      slug: ROOT_PERMISSION,
      description: null,
      createdAtMs: command.nowMs,
    });
    indexPermissionSlug(state, ROOT_PERMISSION, permissionId);
  }
  indexKey(state, key);
  state.derived.delete(key.id);
  return { ok: true, id: key.id, created: existingId === undefined };
}

/**
 * Credits shown for a key at `nowMs` (getKey, whoami, verification). `spentHere`: what the reading
 * node spent from its own unsettled leases of the key (leases/shown.ts), 0 without leases.
 */
export function keyCreditsAt(key: KeyRecord, nowMs: number, spentHere = 0): number | null {
  return creditsAt(key, nowMs, spentHere).remaining;
}
