import { assert } from "../assert.js";
import type { LimitCheck } from "../ratelimit/sliding-window.js";
import { derivedCacheMax } from "./limits.js";
import { ratelimitId } from "./ratelimit-id.js";
import type { ConfiguredLimit, KeyDerived, KeyRecord, KeyState } from "./types.js";

/**
 * The cached authorization and limit view of a key, computed on first use after any change that
 * could affect it (the machine drops cache entries on apply). Verification reads it without
 * allocating. The cache holds at most derivedCacheMax keys, the oldest entry going first: a view
 * costs more than the key itself (about 1.4 kB), so a node whose million keys were all verified
 * would otherwise hold them all twice over; a key past the bound is computed again when used.
 */
export function keyDerived(state: KeyState, key: KeyRecord): KeyDerived {
  const cached = state.derived.get(key.id);
  if (cached !== undefined) return cached;
  const derived = computeDerived(state, key);
  if (state.derived.size >= derivedCacheMax) {
    const oldest = state.derived.keys().next();
    if (oldest.done !== true) state.derived.delete(oldest.value);
  }
  state.derived.set(key.id, derived);
  return derived;
}

// What most keys derive alike (no permissions, no roles, no limits), held once. Never changed:
// the views are read only (ReadonlySet, readonly arrays).
const noSlugs: ReadonlySet<string> = new Set();
const noStrings: readonly string[] = Object.freeze([]);
const noLimits: ReadonlyMap<string, ConfiguredLimit> = new Map();
const noConfiguredLimits: readonly ConfiguredLimit[] = Object.freeze([]);
const noChecks: readonly LimitCheck[] = Object.freeze([]);

function computeDerived(state: KeyState, key: KeyRecord): KeyDerived {
  const slugs = new Set<string>();
  for (const permissionId of key.permissionIds) {
    const permission = state.permissions.get(permissionId);
    assert(permission !== undefined, "keyDerived: dangling permission reference");
    slugs.add(permission.slug);
  }
  const roles: string[] = [];
  for (const roleId of key.roleIds) {
    const role = state.roles.get(roleId);
    assert(role !== undefined, "keyDerived: dangling role reference");
    roles.push(role.name);
    for (const permissionId of role.permissionIds) {
      const permission = state.permissions.get(permissionId);
      assert(permission !== undefined, "keyDerived: dangling role permission reference");
      slugs.add(permission.slug);
    }
  }
  const configuredLimits = new Map<string, ConfiguredLimit>();
  const identity = key.identityId === null ? undefined : state.identities.get(key.identityId);
  assert(key.identityId === null || identity !== undefined, "keyDerived: dangling identity reference");
  if (identity !== undefined) {
    for (const limit of identity.ratelimits) {
      configuredLimits.set(limit.name, {
        ...limit,
        scope: "identity",
        id: ratelimitId(identity.id, limit.name),
        counterKey: verifyLimitKey(identity.id, limit.name),
      });
    }
  }
  // The key's definition wins over the identity's for the same name, as upstream does.
  for (const limit of key.ratelimits) {
    configuredLimits.set(limit.name, {
      ...limit,
      scope: "key",
      id: ratelimitId(key.id, limit.name),
      counterKey: keyLimitKey(key, limit.name),
    });
  }
  const autoLimits = [...configuredLimits.values()]
    .filter((limit) => limit.autoApply)
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const limitOwnerId = key.identityId ?? key.id;
  return {
    slugs: slugs.size === 0 ? noSlugs : slugs,
    permissions: slugs.size === 0 ? noStrings : [...slugs].sort(),
    roles: roles.length === 0 ? noStrings : roles.sort(),
    configuredLimits: configuredLimits.size === 0 ? noLimits : configuredLimits,
    autoLimits: autoLimits.length === 0 ? noConfiguredLimits : autoLimits,
    limitOwnerId,
    autoChecks:
      autoLimits.length === 0
        ? noChecks
        : autoLimits.map((limit) => ({
            key: limit.counterKey,
            limit: limit.limit,
            durationMs: limit.durationMs,
            cost: 1,
          })),
  };
}

/**
 * Limiter key of a verification limit: owner (identity or key id) and limit name, so all keys of
 * an identity share the counter, as upstream does. The `v:` prefix keeps it apart from
 * ratelimits.limit counters.
 */
export function verifyLimitKey(ownerId: string, name: string): string {
  return `v:${ownerId}:${name}`;
}

/**
 * Limiter key of a key-level (or ad-hoc) limit: counted per key, also when the key has an
 * identity (keyraft counts key-level limits per key and identity-level limits per identity, in
 * v1 and v2 alike). A key with an identity keeps the identity id as the key's first part, so its
 * counters are placed with the identity's (one node judges a verification's limits together);
 * the key id follows the name after a NUL, which keeps it apart from the identity's own counter
 * of that name.
 */
export function keyLimitKey(key: { id: string; identityId: string | null }, name: string): string {
  return key.identityId === null
    ? verifyLimitKey(key.id, name)
    : `${verifyLimitKey(key.identityId, name)}\u0000${key.id}`;
}
