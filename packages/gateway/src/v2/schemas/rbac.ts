// The v2 `Permission` and `Role` objects.

import type { KeyState, PermissionRecord, RoleRecord } from "@keyraft/core";
import { Type, type Static } from "@sinclair/typebox";

export const PermissionResponse = Type.Object({
  id: Type.String(),
  name: Type.String(),
  slug: Type.String(),
  description: Type.Optional(Type.String()),
});
export type PermissionResponse = Static<typeof PermissionResponse>;

export const RoleResponse = Type.Object({
  id: Type.String(),
  name: Type.String(),
  description: Type.Optional(Type.String()),
  permissions: Type.Optional(Type.Array(PermissionResponse)),
});
export type RoleResponse = Static<typeof RoleResponse>;

export function permissionView(permission: PermissionRecord): PermissionResponse {
  const view: PermissionResponse = { id: permission.id, name: permission.name, slug: permission.slug };
  if (permission.description !== null && permission.description !== "") view.description = permission.description;
  return view;
}

/** A role with its permissions (omitted when it carries none). */
export function roleView(state: KeyState, role: RoleRecord): RoleResponse {
  const view: RoleResponse = { id: role.id, name: role.name };
  if (role.description !== null && role.description !== "") view.description = role.description;
  const permissions = permissionsOf(state, role.permissionIds);
  if (permissions.length > 0) view.permissions = permissions;
  return view;
}

/** The permissions of these ids as v2 objects, sorted by slug (ids that no longer exist are skipped). */
export function permissionsOf(state: KeyState, ids: readonly string[]): PermissionResponse[] {
  const views: PermissionResponse[] = [];
  for (const id of ids) {
    const permission = state.permissions.get(id);
    if (permission !== undefined) views.push(permissionView(permission));
  }
  return views.sort((a, b) => (a.slug < b.slug ? -1 : a.slug > b.slug ? 1 : 0));
}

/** The roles of these ids as v2 objects, sorted by name. */
export function rolesOf(state: KeyState, ids: readonly string[]): RoleResponse[] {
  const views: RoleResponse[] = [];
  for (const id of ids) {
    const role = state.roles.get(id);
    if (role !== undefined) views.push(roleView(state, role));
  }
  return views.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}
