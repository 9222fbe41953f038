// Root keys' permissions and roles are the administration of the whole node; tenants' RBAC
// routes must not reach them. Upstream keeps root keys in a workspace of their own; keyraft has
// one workspace (routes/guards.ts), so what root keys use is fenced here instead: a permission or
// role attached to a key of the root api (directly, or a permission through a role) is visible
// and changeable only by a caller holding `*`, like the root keys themselves (requireRootAdmin).

import { ROOT_API_ID, ROOT_PERMISSION, type KeyState } from "@keyraft/core";
import { insufficientPermissions } from "../errors.js";
import type { RootAuth } from "./root-key.js";

export interface RootScope {
  permissionIds: ReadonlySet<string>;
  roleIds: ReadonlySet<string>;
}

/** The permissions and roles root keys use. Root keys are few: computed per call. */
export function rootScope(state: KeyState): RootScope {
  const permissionIds = new Set<string>();
  const roleIds = new Set<string>();
  for (const keyId of state.keys.idsOfApi(ROOT_API_ID)) {
    const key = state.keys.get(keyId);
    if (key === undefined) continue;
    for (const id of key.permissionIds) permissionIds.add(id);
    for (const roleId of key.roleIds) {
      roleIds.add(roleId);
      for (const id of state.roles.get(roleId)?.permissionIds ?? []) permissionIds.add(id);
    }
  }
  return { permissionIds, roleIds };
}

export function isRootAdmin(auth: Pick<RootAuth, "slugs">): boolean {
  return auth.slugs.has(ROOT_PERMISSION);
}

/** Throws 403 unless the caller holds `*`: for a change to something root keys use. */
export function requireRootScopeAdmin(auth: RootAuth, what: string): void {
  if (!isRootAdmin(auth)) {
    throw insufficientPermissions(
      `only a root key holding '${ROOT_PERMISSION}' may change ${what}, which root keys use`,
    );
  }
}

/** Whether the caller may see a key of `apiId`: keys of the root api only with `*`. */
export function maySeeApiKeys(auth: RootAuth, apiId: string): boolean {
  return apiId !== ROOT_API_ID || isRootAdmin(auth);
}
