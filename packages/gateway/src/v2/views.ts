// How records read through v2: optional fields omitted when empty (never null), as upstream.

import type { KeyState, PermissionRecord, RoleRecord } from "@keyraft/core";

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
