// APIs, identities, rate-limit namespaces and overrides.

import type {
  CreateApiCommand,
  CreateIdentityCommand,
  CreateNamespaceCommand,
  DeleteApiCommand,
  DeleteIdentityCommand,
  DeleteOverrideCommand,
  RatelimitInput,
  SetOverrideCommand,
  UpdateIdentityCommand,
} from "./commands.js";
import { apisMax, identitiesMax, namespacesMax, overridesMax, ratelimitsPerRecordMax } from "./limits.js";
import { keyHasIdentity } from "./key-table.js";
import { commandError, okEmpty, type CommandError, type CommandOutcome } from "./outcome.js";
import { indexWildcardOverride, unindexWildcardOverride } from "./overrides-index.js";
import { unindexKey } from "./state.js";
import type { KeyState, OverrideRecord, RatelimitConfig } from "./types.js";

export function applyCreateApi(state: KeyState, command: CreateApiCommand): CommandOutcome {
  if (state.apis.has(command.apiId)) return commandError("CONFLICT", `api ${command.apiId} already exists`);
  if (state.apis.size >= apisMax) return commandError("PRECONDITION_FAILED", "the api limit is reached");
  state.apis.set(command.apiId, {
    id: command.apiId,
    name: command.name,
    createdAtMs: command.nowMs,
    deleteProtected: false,
  });
  return { ok: true, id: command.apiId };
}

/** Deletes the api and every key of it (their verifications become NOT_FOUND). */
export function applyDeleteApi(state: KeyState, command: DeleteApiCommand): CommandOutcome {
  const api = state.apis.get(command.apiId);
  if (api === undefined) return commandError("NOT_FOUND", `api ${command.apiId} not found`);
  if (api.deleteProtected) return commandError("DELETE_PROTECTED", `api ${api.id} is protected from deletions`);
  for (const id of state.keys.idsOfApi(api.id)) {
    const key = state.keys.get(id);
    if (key !== undefined) unindexKey(state, key);
  }
  state.apis.delete(api.id);
  return okEmpty;
}

function identityLimits(inputs: readonly RatelimitInput[]): RatelimitConfig[] | CommandError {
  if (inputs.length > ratelimitsPerRecordMax) {
    return commandError("BAD_REQUEST", `at most ${ratelimitsPerRecordMax} ratelimits may be defined`);
  }
  const byName = new Map<string, RatelimitConfig>();
  for (const input of inputs) {
    if (byName.has(input.name)) {
      return commandError("CONFLICT", `Ratelimit with name "${input.name}" is already defined in the request`);
    }
    byName.set(input.name, {
      name: input.name,
      limit: input.limit,
      durationMs: input.durationMs,
      autoApply: input.autoApply ?? false,
    });
  }
  return [...byName.values()].sort((a, b) => (a.name < b.name ? -1 : 1));
}

export function applyCreateIdentity(state: KeyState, command: CreateIdentityCommand): CommandOutcome {
  if (state.identityIdByExternalId.has(command.externalId)) {
    return commandError(
      "CONFLICT",
      `Identity with externalId "${command.externalId}" already exists in this workspace`,
    );
  }
  if (state.identities.has(command.identityId))
    return commandError("CONFLICT", `identity ${command.identityId} already exists`);
  if (state.identities.size >= identitiesMax)
    return commandError("PRECONDITION_FAILED", "the identity limit is reached");
  const ratelimits = identityLimits(command.ratelimits);
  if (!Array.isArray(ratelimits)) return ratelimits;
  state.identities.set(command.identityId, {
    id: command.identityId,
    externalId: command.externalId,
    environment: command.environment,
    meta: command.meta,
    ratelimits,
    createdAtMs: command.nowMs,
  });
  state.identityIdByExternalId.set(command.externalId, command.identityId);
  return { ok: true, id: command.identityId };
}

export function applyUpdateIdentity(state: KeyState, command: UpdateIdentityCommand): CommandOutcome {
  const identity = state.identities.get(command.identityId);
  if (identity === undefined) return commandError("NOT_FOUND", `identity ${command.identityId} not found`);
  const next = { ...identity };
  if (command.meta !== undefined) next.meta = command.meta;
  if (command.ratelimits !== undefined) {
    const ratelimits = identityLimits(command.ratelimits);
    if (!Array.isArray(ratelimits)) return ratelimits;
    next.ratelimits = ratelimits;
  }
  state.identities.set(next.id, next);
  state.derived.clear();
  return { ok: true, id: next.id };
}

/** Deletes the identity and disconnects its keys (they keep their own limits and ownerId). */
export function applyDeleteIdentity(state: KeyState, command: DeleteIdentityCommand): CommandOutcome {
  const identity = state.identities.get(command.identityId);
  if (identity === undefined) return commandError("NOT_FOUND", `identity ${command.identityId} not found`);
  for (const key of state.keys.valuesWith(keyHasIdentity)) {
    if (key.identityId === identity.id) state.keys.set(key.id, { ...key, identityId: null });
  }
  state.identities.delete(identity.id);
  state.identityIdByExternalId.delete(identity.externalId);
  state.derived.clear();
  return okEmpty;
}

export function applyCreateNamespace(state: KeyState, command: CreateNamespaceCommand): CommandOutcome {
  const existing = state.namespaceIdByName.get(command.name);
  // Two nodes may race to auto-create the same namespace: the second create is a no-op that
  // returns the first one's id, so both callers proceed with the same namespace.
  if (existing !== undefined) return { ok: true, id: existing };
  if (state.namespaces.has(command.namespaceId))
    return commandError("CONFLICT", `namespace ${command.namespaceId} already exists`);
  if (state.namespaces.size >= namespacesMax)
    return commandError("PRECONDITION_FAILED", "the namespace limit is reached");
  state.namespaces.set(command.namespaceId, {
    id: command.namespaceId,
    name: command.name,
    createdAtMs: command.nowMs,
  });
  state.namespaceIdByName.set(command.name, command.namespaceId);
  return { ok: true, id: command.namespaceId };
}

/** Creates or overwrites the override of (namespace, identifier); an existing one keeps its id. */
export function applySetOverride(state: KeyState, command: SetOverrideCommand): CommandOutcome {
  if (!state.namespaces.has(command.namespaceId))
    return commandError("NOT_FOUND", `Namespace ${command.namespaceId} not found`);
  const byIdentifier = state.overrideIdsByNamespace.get(command.namespaceId);
  const existingId = byIdentifier?.get(command.identifier);
  const existing = existingId === undefined ? undefined : state.overrides.get(existingId);
  if (existing === undefined) {
    if (state.overrides.has(command.overrideId))
      return commandError("CONFLICT", `override ${command.overrideId} already exists`);
    if (state.overrides.size >= overridesMax)
      return commandError("PRECONDITION_FAILED", "the override limit is reached");
  }
  const id = existing?.id ?? command.overrideId;
  const record: OverrideRecord = {
    id,
    namespaceId: command.namespaceId,
    identifier: command.identifier,
    limit: command.limit,
    durationMs: command.durationMs,
    async: command.async,
    createdAtMs: existing?.createdAtMs ?? command.nowMs,
  };
  state.overrides.set(id, record);
  indexWildcardOverride(state, record);
  const index = byIdentifier ?? new Map<string, string>();
  index.set(command.identifier, id);
  state.overrideIdsByNamespace.set(command.namespaceId, index);
  return { ok: true, id };
}

export function applyDeleteOverride(state: KeyState, command: DeleteOverrideCommand): CommandOutcome {
  if (!state.namespaces.has(command.namespaceId))
    return commandError("NOT_FOUND", `Namespace ${command.namespaceId} not found`);
  const byIdentifier = state.overrideIdsByNamespace.get(command.namespaceId);
  const id = byIdentifier?.get(command.identifier);
  if (byIdentifier === undefined || id === undefined) {
    return commandError("NOT_FOUND", `Override with ${command.identifier} identifier not found`);
  }
  byIdentifier.delete(command.identifier);
  if (byIdentifier.size === 0) state.overrideIdsByNamespace.delete(command.namespaceId);
  const override = state.overrides.get(id);
  if (override !== undefined) unindexWildcardOverride(state, override);
  state.overrides.delete(id);
  return okEmpty;
}
