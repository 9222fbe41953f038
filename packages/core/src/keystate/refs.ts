// Resolution of role/permission references (by id or by name) shared by createKey, updateKey,
// setRoles/setPermissions and addRoles/addPermissions. Pure: returns what to create and connect,
// the caller mutates only after every check passed.

import type { Ref } from "./commands.js";
import { connectionsPerRecordMax, permissionsMax, rolesMax } from "./limits.js";
import { foldName, indexPermissionSlug, indexRoleName, permissionIdOfSlug, roleIdOfName } from "./names.js";
import { commandError, type CommandError, type NamedRef } from "./outcome.js";
import type { KeyState, PermissionRecord, RoleRecord } from "./types.js";

export type RefKind = "permission" | "role";

export interface ResolvedRefs {
  /** Ids to connect, in request order, without duplicates. */
  ids: string[];
  /** Records to insert first (names that did not exist). */
  createPermissions: PermissionRecord[];
  createRoles: RoleRecord[];
  /** Response items: existing records first, then created ones (as upstream). */
  items: NamedRef[];
}

export function resolveRefs(
  state: KeyState,
  kind: RefKind,
  refs: readonly Ref[],
  allowCreate: boolean,
  nowMs: number,
): ResolvedRefs | CommandError {
  if (refs.length > connectionsPerRecordMax) {
    return commandError("BAD_REQUEST", `at most ${connectionsPerRecordMax} ${kind}s may be connected to a key`);
  }
  const lookupName = (name: string): string | undefined =>
    kind === "permission" ? permissionIdOfSlug(state, name) : roleIdOfName(state, name);
  const recordName = (id: string): string | undefined =>
    kind === "permission" ? state.permissions.get(id)?.name : state.roles.get(id)?.name;

  for (const ref of refs) {
    if ("id" in ref && recordName(ref.id) === undefined) {
      return commandError("NOT_FOUND", `${kind} ${ref.id} not found`);
    }
  }
  for (const ref of refs) {
    if ("name" in ref && !ref.create && lookupName(ref.name) === undefined) {
      return commandError("NOT_FOUND", `${kind} ${ref.name} not found and not allowed to create`);
    }
  }
  const existing: NamedRef[] = [];
  const created: NamedRef[] = [];
  const ids = new Set<string>();
  /** Folded name -> [name as first requested, new id]: names differing only in case are one record. */
  const createdByName = new Map<string, [string, string]>();
  for (const ref of refs) {
    if ("id" in ref) {
      if (!ids.has(ref.id)) existing.push({ id: ref.id, name: recordName(ref.id) ?? "" });
      ids.add(ref.id);
      continue;
    }
    const id = lookupName(ref.name) ?? createdByName.get(foldName(ref.name))?.[1];
    if (id !== undefined) {
      if (!ids.has(id)) existing.push({ id, name: ref.name });
      ids.add(id);
      continue;
    }
    if (!allowCreate) {
      return commandError("INSUFFICIENT_PERMISSIONS", `not allowed to create ${kind} ${ref.name}`);
    }
    if (recordName(ref.newId) !== undefined || ids.has(ref.newId)) {
      return commandError("CONFLICT", `${kind} id ${ref.newId} already exists`);
    }
    createdByName.set(foldName(ref.name), [ref.name, ref.newId]);
    created.push({ id: ref.newId, name: ref.name });
    ids.add(ref.newId);
  }
  const total = kind === "permission" ? state.permissions.size : state.roles.size;
  if (total + createdByName.size > (kind === "permission" ? permissionsMax : rolesMax)) {
    return commandError("PRECONDITION_FAILED", `the ${kind} limit is reached`);
  }
  const createPermissions: PermissionRecord[] = [];
  const createRoles: RoleRecord[] = [];
  for (const [name, id] of createdByName.values()) {
    if (kind === "permission") {
      createPermissions.push({ id, name, slug: name, description: null, createdAtMs: nowMs });
    } else {
      createRoles.push({ id, name, description: null, permissionIds: [], createdAtMs: nowMs });
    }
  }
  return { ids: [...ids], createPermissions, createRoles, items: [...existing, ...created] };
}

/** Inserts the records a resolution decided to create. Call only after every check passed. */
export function insertResolved(state: KeyState, resolved: ResolvedRefs): void {
  for (const permission of resolved.createPermissions) {
    state.permissions.set(permission.id, permission);
    indexPermissionSlug(state, permission.slug, permission.id);
  }
  for (const role of resolved.createRoles) {
    state.roles.set(role.id, role);
    indexRoleName(state, role.name, role.id);
  }
}

export function isCommandError(value: object): value is CommandError {
  return "ok" in value && value.ok === false;
}
