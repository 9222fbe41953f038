// The checks of setPermissions/setRoles (and updateKey's roles/permissions) in upstream's order
// (docs/api.md), evaluated against the current state before the command is appended.
// The command re-validates existence at apply time; the whole replacement is one atomic command.

import {
  permissionIdOfSlug,
  roleIdOfName,
  ROOT_PERMISSION,
  type KeyRecord,
  type KeyState,
  type Ref,
} from "@keyraft/core";
import { badRequest, notFound } from "../errors.js";
import type { IdSource } from "../state/ids.js";
import { anyOf, holdsAny, requirePermission, type RootAuth } from "./root-key.js";

export interface RefItem {
  id?: string;
  name?: string;
  slug?: string;
  create?: boolean;
}

export type ConnectionKind = "permission" | "role";

export interface ConnectionPlan {
  refs: Ref[];
  allowCreate: boolean;
}

function lookupName(state: KeyState, kind: ConnectionKind, name: string): string | undefined {
  return kind === "permission" ? permissionIdOfSlug(state, name) : roleIdOfName(state, name);
}

function exists(state: KeyState, kind: ConnectionKind, id: string): boolean {
  return kind === "permission" ? state.permissions.has(id) : state.roles.has(id);
}

/** Whole-set replacement of a key's roles or permissions (`field` names the request array). */
export function planReplacement(
  state: KeyState,
  auth: RootAuth,
  ids: IdSource,
  key: KeyRecord,
  kind: ConnectionKind,
  field: string,
  items: readonly RefItem[],
): ConnectionPlan {
  const named: { name: string; create: boolean }[] = [];
  const requestedIds = new Set<string>();
  items.forEach((item, index) => {
    const name = kind === "permission" ? (item.slug ?? item.name) : item.name;
    if (item.id !== undefined) requestedIds.add(item.id);
    else if (name !== undefined) {
      named.push({ name, create: item.create === true });
      const existing = lookupName(state, kind, name);
      if (existing !== undefined) requestedIds.add(existing);
    } else throw badRequest(`${field}.${index}: provide an id or a name`);
  });
  const current = kind === "permission" ? key.permissionIds : key.roleIds;
  if (current.some((id) => !requestedIds.has(id))) {
    requirePermission(auth, anyOf(ROOT_PERMISSION, `rbac.*.remove_${kind}_from_key`), "UNAUTHORIZED");
  }
  for (const item of items) {
    if (item.id !== undefined && !exists(state, kind, item.id)) throw notFound(`${kind} ${item.id} not found`);
  }
  const missing = named.filter((item) => lookupName(state, kind, item.name) === undefined);
  for (const item of missing) {
    if (!item.create) throw notFound(`${kind} ${item.name} not found and not allowed to create`);
  }
  const createPermission = anyOf(ROOT_PERMISSION, `rbac.*.create_${kind}`);
  if (missing.length > 0) requirePermission(auth, createPermission);
  const currentSet = new Set(current);
  if (missing.length > 0 || [...requestedIds].some((id) => !currentSet.has(id))) {
    requirePermission(auth, anyOf(ROOT_PERMISSION, `rbac.*.add_${kind}_to_key`));
  }
  const prefix = kind === "permission" ? "perm" : "role";
  const refs: Ref[] = items.map((item) =>
    item.id !== undefined
      ? { id: item.id }
      : {
          name: (kind === "permission" ? (item.slug ?? item.name) : item.name) ?? "",
          newId: ids.next(prefix),
          create: item.create === true,
        },
  );
  return { refs, allowCreate: holdsAny(auth, ROOT_PERMISSION, `rbac.*.create_${kind}`) };
}

/** createKey's permission slugs / role names: missing ones are created iff the caller may. */
export function planCreation(
  state: KeyState,
  auth: RootAuth,
  ids: IdSource,
  kind: ConnectionKind,
  names: readonly string[],
): { refs: { name: string; newId: string; create: true }[]; allowCreate: boolean } {
  const createPermission = anyOf(ROOT_PERMISSION, `rbac.*.create_${kind}`);
  if (names.some((name) => lookupName(state, kind, name) === undefined)) requirePermission(auth, createPermission);
  const prefix = kind === "permission" ? "perm" : "role";
  return {
    refs: names.map((name) => ({ name, newId: ids.next(prefix), create: true })),
    allowCreate: holdsAny(auth, ROOT_PERMISSION, `rbac.*.create_${kind}`),
  };
}
