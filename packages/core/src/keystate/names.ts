// Permission slugs and role names are unique and matched without regard to letter case, in both
// APIs, and stored as given (docs/api-v2.md, "Permissions and roles"). The state indexes them by their folded form; every
// lookup by slug or name goes through these helpers so no caller folds differently.

import type { KeyState } from "./types.js";

/** The form a slug or role name is indexed and compared by. */
export function foldName(name: string): string {
  return name.toLowerCase();
}

/** Id of the permission whose slug equals `slug` ignoring case. */
export function permissionIdOfSlug(state: KeyState, slug: string): string | undefined {
  return state.permissionIdBySlugFolded.get(foldName(slug));
}

/** Id of the role whose name equals `name` ignoring case. */
export function roleIdOfName(state: KeyState, name: string): string | undefined {
  return state.roleIdByNameFolded.get(foldName(name));
}

/**
 * Indexes a permission by its folded slug unless another one holds it already (only possible in
 * a state written before names were folded; the lowest id keeps it, see restore).
 */
export function indexPermissionSlug(state: KeyState, slug: string, id: string): void {
  const folded = foldName(slug);
  if (!state.permissionIdBySlugFolded.has(folded)) state.permissionIdBySlugFolded.set(folded, id);
}

export function indexRoleName(state: KeyState, name: string, id: string): void {
  const folded = foldName(name);
  if (!state.roleIdByNameFolded.has(folded)) state.roleIdByNameFolded.set(folded, id);
}

/** Removes the index entry of a deleted permission when it is the one the entry points to. */
export function unindexPermissionSlug(state: KeyState, slug: string, id: string): void {
  const folded = foldName(slug);
  if (state.permissionIdBySlugFolded.get(folded) !== id) return;
  state.permissionIdBySlugFolded.delete(folded);
  // A same-folded permission from before folding takes the entry over (lowest id first).
  const heir = [...state.permissions.values()]
    .filter((permission) => permission.id !== id && foldName(permission.slug) === folded)
    .sort((a, b) => (a.id < b.id ? -1 : 1))[0];
  if (heir !== undefined) state.permissionIdBySlugFolded.set(folded, heir.id);
}

export function unindexRoleName(state: KeyState, name: string, id: string): void {
  const folded = foldName(name);
  if (state.roleIdByNameFolded.get(folded) !== id) return;
  state.roleIdByNameFolded.delete(folded);
  const heir = [...state.roles.values()]
    .filter((role) => role.id !== id && foldName(role.name) === folded)
    .sort((a, b) => (a.id < b.id ? -1 : 1))[0];
  if (heir !== undefined) state.roleIdByNameFolded.set(folded, heir.id);
}
