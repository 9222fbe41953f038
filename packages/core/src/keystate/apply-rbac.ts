// Role and permission commands: whole-set replacement, additions, removals, creation and
// deletion. Deleting a permission or role disconnects it everywhere in the same command, so no
// reference ever dangles.

import { assert } from "../assert.js";
import type {
  AddPermissionsCommand,
  AddRolesCommand,
  CreatePermissionCommand,
  CreateRoleCommand,
  DeletePermissionCommand,
  DeleteRoleCommand,
  RemovePermissionsCommand,
  RemoveRolesCommand,
  SetPermissionsCommand,
  SetRolePermissionsCommand,
  SetRolesCommand,
} from "./commands.js";
import { connectionsPerRecordMax, permissionsMax, rolesMax } from "./limits.js";
import { keyHasConnections } from "./key-table.js";
import {
  indexPermissionSlug,
  indexRoleName,
  permissionIdOfSlug,
  roleIdOfName,
  unindexPermissionSlug,
  unindexRoleName,
} from "./names.js";
import { commandError, okEmpty, type CommandOutcome } from "./outcome.js";
import { insertResolved, isCommandError, resolveRefs, type RefKind } from "./refs.js";
import { sortedUnique } from "./state.js";
import { ROOT_PERMISSION, type KeyRecord, type KeyState } from "./types.js";

function connected(key: KeyRecord, kind: RefKind): string[] {
  return kind === "permission" ? key.permissionIds : key.roleIds;
}

function withConnections(key: KeyRecord, kind: RefKind, ids: string[]): KeyRecord {
  return kind === "permission" ? { ...key, permissionIds: sortedUnique(ids) } : { ...key, roleIds: sortedUnique(ids) };
}

/** setPermissions/setRoles (replace) and addPermissions/addRoles (union). */
export function applyConnect(
  state: KeyState,
  command: SetPermissionsCommand | SetRolesCommand | AddPermissionsCommand | AddRolesCommand,
): CommandOutcome {
  const kind: RefKind = command.type === "setPermissions" || command.type === "addPermissions" ? "permission" : "role";
  const replace = command.type === "setPermissions" || command.type === "setRoles";
  const key = state.keys.get(command.keyId);
  if (key === undefined) return commandError("NOT_FOUND", `key ${command.keyId} not found`);
  const resolved = resolveRefs(state, kind, command.refs, command.allowCreate, command.nowMs);
  if (isCommandError(resolved)) return resolved;
  const ids = replace ? resolved.ids : [...connected(key, kind), ...resolved.ids];
  if (new Set(ids).size > connectionsPerRecordMax) {
    return commandError("BAD_REQUEST", `at most ${connectionsPerRecordMax} ${kind}s may be connected to a key`);
  }
  insertResolved(state, resolved);
  assert(
    resolved.ids.every((id) => (kind === "permission" ? state.permissions : state.roles).has(id)),
    "connect: every id exists",
  );
  state.keys.set(key.id, withConnections(key, kind, ids));
  state.derived.delete(key.id);
  return { ok: true, items: resolved.items };
}

/** removePermissions/removeRoles: disconnects the referenced records; unknown ones are ignored. */
export function applyDisconnect(
  state: KeyState,
  command: RemovePermissionsCommand | RemoveRolesCommand,
): CommandOutcome {
  const kind: RefKind = command.type === "removePermissions" ? "permission" : "role";
  const key = state.keys.get(command.keyId);
  if (key === undefined) return commandError("NOT_FOUND", `key ${command.keyId} not found`);
  const remove = new Set<string>();
  for (const ref of command.refs) {
    const id =
      "id" in ref
        ? ref.id
        : kind === "permission"
          ? permissionIdOfSlug(state, ref.name)
          : roleIdOfName(state, ref.name);
    if (id !== undefined) remove.add(id);
  }
  state.keys.set(
    key.id,
    withConnections(
      key,
      kind,
      connected(key, kind).filter((id) => !remove.has(id)),
    ),
  );
  state.derived.delete(key.id);
  return okEmpty;
}

export function applyCreatePermission(state: KeyState, command: CreatePermissionCommand): CommandOutcome {
  if (permissionIdOfSlug(state, command.slug) !== undefined) {
    return commandError("CONFLICT", `Permission with name "${command.name}" already exists in this workspace`);
  }
  if (state.permissions.has(command.permissionId))
    return commandError("CONFLICT", `permission ${command.permissionId} already exists`);
  if (state.permissions.size >= permissionsMax)
    return commandError("PRECONDITION_FAILED", "the permission limit is reached");
  state.permissions.set(command.permissionId, {
    id: command.permissionId,
    name: command.name,
    slug: command.slug,
    description: command.description,
    createdAtMs: command.nowMs,
  });
  indexPermissionSlug(state, command.slug, command.permissionId);
  return { ok: true, id: command.permissionId };
}

export function applyDeletePermission(state: KeyState, command: DeletePermissionCommand): CommandOutcome {
  const permission = state.permissions.get(command.permissionId);
  if (permission === undefined) return commandError("NOT_FOUND", `Permission ${command.permissionId} not found`);
  // Root keys hold `*`; deleting it would lock every administrator out.
  if (permission.slug === ROOT_PERMISSION)
    return commandError("DELETE_PROTECTED", "the root permission is protected from deletions");
  for (const key of state.keys.valuesWith(keyHasConnections)) {
    if (key.permissionIds.includes(permission.id)) {
      state.keys.set(key.id, { ...key, permissionIds: key.permissionIds.filter((id) => id !== permission.id) });
    }
  }
  for (const role of state.roles.values()) {
    if (role.permissionIds.includes(permission.id)) {
      state.roles.set(role.id, { ...role, permissionIds: role.permissionIds.filter((id) => id !== permission.id) });
    }
  }
  state.permissions.delete(permission.id);
  unindexPermissionSlug(state, permission.slug, permission.id);
  state.derived.clear();
  return okEmpty;
}

export function applyCreateRole(state: KeyState, command: CreateRoleCommand): CommandOutcome {
  if (roleIdOfName(state, command.name) !== undefined) {
    return commandError("CONFLICT", `Role with name "${command.name}" already exists in this workspace`);
  }
  if (state.roles.has(command.roleId)) return commandError("CONFLICT", `role ${command.roleId} already exists`);
  if (state.roles.size >= rolesMax) return commandError("PRECONDITION_FAILED", "the role limit is reached");
  for (const permissionId of command.permissionIds) {
    if (!state.permissions.has(permissionId)) return commandError("NOT_FOUND", `permission ${permissionId} not found`);
  }
  const resolved =
    command.permissions === undefined
      ? null
      : resolveRefs(state, "permission", command.permissions.refs, command.permissions.allowCreate, command.nowMs);
  if (resolved !== null && isCommandError(resolved)) return resolved;
  const permissionIds = sortedUnique([...command.permissionIds, ...(resolved?.ids ?? [])]);
  if (permissionIds.length > connectionsPerRecordMax) {
    return commandError("BAD_REQUEST", `at most ${connectionsPerRecordMax} permissions may be connected to a role`);
  }
  if (resolved !== null) insertResolved(state, resolved);
  state.roles.set(command.roleId, {
    id: command.roleId,
    name: command.name,
    description: command.description,
    permissionIds,
    createdAtMs: command.nowMs,
  });
  indexRoleName(state, command.name, command.roleId);
  return { ok: true, id: command.roleId, items: resolved?.items ?? [] };
}

/**
 * Replaces the permissions a role carries (v2 permissions.setRolePermissions): slugs matched
 * ignoring case, missing ones created iff allowed; every key holding the role sees the new set.
 * `items` answers the resulting set.
 */
export function applySetRolePermissions(state: KeyState, command: SetRolePermissionsCommand): CommandOutcome {
  const role = state.roles.get(command.roleId);
  if (role === undefined) return commandError("NOT_FOUND", `Role ${command.roleId} not found`);
  const resolved = resolveRefs(state, "permission", command.refs, command.allowCreate, command.nowMs);
  if (isCommandError(resolved)) return resolved;
  insertResolved(state, resolved);
  assert(
    resolved.ids.every((id) => state.permissions.has(id)),
    "setRolePermissions: every id exists",
  );
  state.roles.set(role.id, { ...role, permissionIds: sortedUnique(resolved.ids) });
  state.derived.clear();
  return { ok: true, id: role.id, items: resolved.items };
}

export function applyDeleteRole(state: KeyState, command: DeleteRoleCommand): CommandOutcome {
  const role = state.roles.get(command.roleId);
  if (role === undefined) return commandError("NOT_FOUND", `Role ${command.roleId} not found`);
  for (const key of state.keys.valuesWith(keyHasConnections)) {
    if (key.roleIds.includes(role.id)) {
      state.keys.set(key.id, { ...key, roleIds: key.roleIds.filter((id) => id !== role.id) });
    }
  }
  state.roles.delete(role.id);
  unindexRoleName(state, role.name, role.id);
  state.derived.clear();
  return okEmpty;
}
