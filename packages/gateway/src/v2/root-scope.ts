// The root-scope fence of the v2 routes (auth/root-scope.ts decides what root keys use): only a
// root key holding `*` sees or changes api_root, its keys, and the permissions and roles root
// keys use. Other callers get the v2 403 for changes; reads of fenced permissions and roles
// answer as if they did not exist (as v1's).

import { ROOT_API_ID, ROOT_PERMISSION } from "@keyraft/core";
import { isRootAdmin } from "../auth/root-scope.js";
import type { Principal } from "./auth.js";
import { insufficientPermissions } from "./problem.js";

export { isRootAdmin, rootScope } from "../auth/root-scope.js";

/** 403 `insufficient_permissions` unless the caller holds `*`; `what` names the fenced thing. */
export function requireRootScopeAdminV2(principal: Principal, what: string): void {
  if (!isRootAdmin(principal)) {
    throw insufficientPermissions(`Missing permission: '${ROOT_PERMISSION}' (needed for ${what}, which root keys use)`);
  }
}

/** The fence for an api: api_root (the root keys' api) only for `*` holders. */
export function requireRootApiAdmin(principal: Principal, apiId: string): void {
  if (apiId === ROOT_API_ID) requireRootScopeAdminV2(principal, `the api ${ROOT_API_ID}`);
}
