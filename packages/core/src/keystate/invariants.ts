// Structural invariants of the key state, checked by the property tests after every command
// (and usable as a debug assertion). Returns the first violation, or null.

import { creditLedgersViolation } from "./credit-ledgers.js";
import { foldName, permissionIdOfSlug, roleIdOfName } from "./names.js";
import { ROOT_API_ID, ROOT_PERMISSION, type KeyState } from "./types.js";

export function keyStateViolation(state: KeyState): string | null {
  if (state.apis.get(ROOT_API_ID)?.deleteProtected !== true) return "the root api is missing";
  for (const key of state.keys.values()) {
    if (state.keys.idOfHash(key.hash) !== key.id) return `hash index does not point to key ${key.id}`;
    if (!state.apis.has(key.apiId)) return `key ${key.id} belongs to a missing api`;
    if (key.identityId !== null && !state.identities.has(key.identityId))
      return `key ${key.id} has a dangling identity`;
    if (key.permissionIds.some((id) => !state.permissions.has(id))) return `key ${key.id} has a dangling permission`;
    if (key.roleIds.some((id) => !state.roles.has(id))) return `key ${key.id} has a dangling role`;
    if (key.remaining !== null && (!Number.isSafeInteger(key.remaining) || key.remaining < 0)) {
      return `key ${key.id} has invalid remaining ${key.remaining}`;
    }
  }
  for (const role of state.roles.values()) {
    if (role.permissionIds.some((id) => !state.permissions.has(id))) return `role ${role.id} has a dangling permission`;
    const indexed = state.roles.get(roleIdOfName(state, role.name) ?? "");
    if (indexed === undefined || foldName(indexed.name) !== foldName(role.name))
      return `role name index wrong for ${role.id}`;
  }
  if (state.roleIdByNameFolded.size > state.roles.size) return "role name index size differs";
  for (const permission of state.permissions.values()) {
    const indexed = state.permissions.get(permissionIdOfSlug(state, permission.slug) ?? "");
    if (indexed === undefined || foldName(indexed.slug) !== foldName(permission.slug))
      return `slug index wrong for ${permission.id}`;
  }
  if (state.permissionIdBySlugFolded.size > state.permissions.size) return "slug index size differs";
  for (const identity of state.identities.values()) {
    if (state.identityIdByExternalId.get(identity.externalId) !== identity.id)
      return `externalId index wrong for ${identity.id}`;
  }
  if (state.identityIdByExternalId.size !== state.identities.size) return "externalId index size differs";
  let byApi = 0;
  for (const [apiId, count] of state.keys.apiCounts()) {
    const ids = state.keys.idsOfApi(apiId);
    if (ids.length === 0 || ids.length !== count) return `key count of ${apiId} differs from its keys`;
    for (const id of ids) if (state.keys.get(id)?.apiId !== apiId) return `api key index wrong for ${id}`;
    byApi += ids.length;
  }
  if (byApi !== state.keys.size) return "api key index size differs";
  let seen = 0;
  for (const id of state.keys.keys()) {
    if (state.keys.get(id)?.id !== id) return `key ${id} is not found by its id`;
    seen++;
  }
  if (seen !== state.keys.size) return "key count differs from the keys listed";
  let indexed = 0;
  for (const [namespaceId, byIdentifier] of state.overrideIdsByNamespace) {
    if (!state.namespaces.has(namespaceId)) return `overrides of missing namespace ${namespaceId}`;
    for (const [identifier, id] of byIdentifier) {
      const override = state.overrides.get(id);
      if (override?.identifier !== identifier || override.namespaceId !== namespaceId)
        return `override index wrong for ${id}`;
      indexed++;
    }
  }
  if (indexed !== state.overrides.size) return "override index size differs";
  const wildcards = new Map<string, number>();
  for (const override of state.overrides.values()) {
    if (override.identifier.includes("*"))
      wildcards.set(override.namespaceId, (wildcards.get(override.namespaceId) ?? 0) + 1);
  }
  for (const [namespaceId, index] of state.overrideWildcards) {
    if (index.size() !== wildcards.get(namespaceId)) return `wildcard index size differs for ${namespaceId}`;
  }
  if (state.overrideWildcards.size !== wildcards.size) return "wildcard index namespaces differ";
  const rootPermission = permissionIdOfSlug(state, ROOT_PERMISSION);
  if (rootPermission !== undefined && !state.permissions.has(rootPermission)) return "root permission dangling";
  return creditLedgersViolation(state);
}
