// How records read through v2: optional fields omitted when empty (never null), as upstream.

import {
  ratelimitId,
  type IdentityRecord,
  type KeyState,
  type PermissionRecord,
  type RatelimitConfig,
  type RoleRecord,
} from "@keyraft/core";

export function permissionView(permission: PermissionRecord) {
  return {
    id: permission.id,
    name: permission.name,
    slug: permission.slug,
    ...(permission.description === null || permission.description === ""
      ? {}
      : { description: permission.description }),
  };
}

/** A role with the permissions it carries (by slug). */
export function roleView(state: KeyState, role: RoleRecord) {
  const permissions = role.permissionIds
    .flatMap((id) => {
      const permission = state.permissions.get(id);
      return permission === undefined ? [] : [permissionView(permission)];
    })
    .sort((a, b) => (a.slug < b.slug ? -1 : a.slug > b.slug ? 1 : 0));
  return {
    id: role.id,
    name: role.name,
    ...(role.description === null || role.description === "" ? {} : { description: role.description }),
    ...(permissions.length === 0 ? {} : { permissions }),
  };
}

/** Upstream's search: trimmed, case-insensitive substring of any of the fields; empty = everything. */
export function searchMatcher(search: string | undefined): (...fields: (string | null)[]) => boolean {
  const needle = (search ?? "").trim().toLowerCase();
  if (needle === "") return () => true;
  return (...fields) => fields.some((field) => field !== null && field.toLowerCase().includes(needle));
}

/** An identity's or key's rate-limit definition as v2 shows it (`id` derived from owner and name). */
export function ratelimitView(ownerId: string, limit: RatelimitConfig) {
  return {
    id: ratelimitId(ownerId, limit.name),
    name: limit.name,
    limit: limit.limit,
    duration: limit.durationMs,
    autoApply: limit.autoApply,
  };
}

/** `{id, externalId, meta?, ratelimits?}`: meta and limits omitted when empty. */
export function identityView(identity: IdentityRecord) {
  const meta = identity.meta;
  return {
    id: identity.id,
    externalId: identity.externalId,
    ...(meta === null || Object.keys(meta).length === 0 ? {} : { meta }),
    ...(identity.ratelimits.length === 0
      ? {}
      : { ratelimits: identity.ratelimits.map((limit) => ratelimitView(identity.id, limit)) }),
  };
}
