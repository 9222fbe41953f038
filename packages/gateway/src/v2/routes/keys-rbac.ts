// keys.{add,remove,set}{Permissions,Roles}: the key's DIRECT links only (permissions inherited
// through roles are untouched). Permissions are named by slug, roles by name; a missing
// permission is created when the root key may create permissions, a missing role is a 404.
// Each call is one command; adding a linked one or removing an unlinked one changes nothing.

import { permissionIdOfSlug } from "@keyraft/core";
import { Type } from "@sinclair/typebox";
import type { FastifyRequest } from "fastify";
import { allOf, anyOf, holds, requirePermissions } from "../auth.js";
import { Envelope, ok, v2Responses } from "../envelope.js";
import { liveKey, requireRolesExist, requireRootAdmin, roleNotFoundOf } from "../keys-common.js";
import { principalOf, type V2RoutePlugin } from "../route.js";
import { V2Error } from "../problem.js";
import { KeyId } from "../schemas/common.js";
import { PermissionSlug, RoleName } from "../schemas/keys-request.js";
import { PermissionResponse, RoleResponse, permissionsOf, rolesOf } from "../schemas/rbac.js";
import { submitV2 } from "../submit.js";
import { Closed } from "../validation.js";

const permissionsBody = (minItems: number) =>
  Closed({ keyId: KeyId, permissions: Type.Array(PermissionSlug, { minItems, maxItems: 1000 }) });
const rolesBody = (minItems: number) =>
  Closed({ keyId: KeyId, roles: Type.Array(RoleName, { minItems, maxItems: 100 }) });

const PermissionsData = Envelope(Type.Array(PermissionResponse));
const RolesData = Envelope(Type.Array(RoleResponse));

export const keyRbacRoutes: V2RoutePlugin = (app, ctx, done) => {
  const deps = ctx;

  /** The key after the update permission (and `extra`) was checked. */
  const keyFor = (request: FastifyRequest, keyId: string, ...extra: string[]) => {
    const principal = principalOf(request);
    const key = liveKey(deps.state, keyId);
    const update = anyOf("api.*.update_key", `api.${key.apiId}.update_key`);
    requirePermissions(principal, extra.length === 0 ? update : allOf(update, ...extra));
    requireRootAdmin(principal, key.apiId);
    return { key, principal };
  };
  /** Missing slugs need `rbac.*.create_permission` (403); the refs create them. */
  const permissionRefs = (request: FastifyRequest, slugs: readonly string[]) => {
    const missing = slugs.some((slug) => permissionIdOfSlug(deps.state, slug) === undefined);
    if (missing) requirePermissions(principalOf(request), "rbac.*.create_permission");
    return [...new Set(slugs)].map((slug) => ({ name: slug, newId: ctx.ids.next("perm"), create: true }));
  };
  const roleRefs = (names: readonly string[]) => {
    requireRolesExist(deps.state, names);
    return [...new Set(names)].map((name) => ({ name, newId: ctx.ids.next("role"), create: false }));
  };
  const directPermissions = (keyId: string) =>
    permissionsOf(deps.state, deps.state.keys.get(keyId)?.permissionIds ?? []);
  const directRoles = (keyId: string) => rolesOf(deps.state, deps.state.keys.get(keyId)?.roleIds ?? []);
  const translate = (error: { message: string }) => roleNotFoundOf(error.message);

  app.post(
    "/keys.addPermissions",
    { schema: { body: permissionsBody(1), response: v2Responses(PermissionsData) } },
    async (request) => {
      const { keyId, permissions } = request.body;
      const { key } = keyFor(request, keyId, "rbac.*.add_permission_to_key");
      const refs = permissionRefs(request, permissions);
      const allowCreate = holds(principalOf(request), "rbac.*.create_permission");
      await submitV2(ctx, request, { type: "addPermissions", keyId: key.id, refs, allowCreate, nowMs: deps.nowMs() });
      return ok(request, directPermissions(key.id));
    },
  );

  app.post(
    "/keys.removePermissions",
    { schema: { body: permissionsBody(1), response: v2Responses(PermissionsData) } },
    async (request) => {
      const { keyId, permissions } = request.body;
      const { key } = keyFor(request, keyId, "rbac.*.remove_permission_from_key");
      for (const slug of permissions) {
        if (permissionIdOfSlug(deps.state, slug) === undefined) {
          throw new V2Error("permission_not_found", `Permission '${slug}' was not found.`);
        }
      }
      await submitV2(ctx, request, {
        type: "removePermissions",
        keyId: key.id,
        refs: permissions.map((name) => ({ name })),
      });
      return ok(request, directPermissions(key.id));
    },
  );

  app.post(
    "/keys.setPermissions",
    { schema: { body: permissionsBody(0), response: v2Responses(PermissionsData) } },
    async (request) => {
      const { keyId, permissions } = request.body;
      const { key } = keyFor(request, keyId, "rbac.*.add_permission_to_key", "rbac.*.remove_permission_from_key");
      const refs = permissionRefs(request, permissions);
      const allowCreate = holds(principalOf(request), "rbac.*.create_permission");
      await submitV2(ctx, request, { type: "setPermissions", keyId: key.id, refs, allowCreate, nowMs: deps.nowMs() });
      return ok(request, directPermissions(key.id));
    },
  );

  app.post("/keys.addRoles", { schema: { body: rolesBody(1), response: v2Responses(RolesData) } }, async (request) => {
    const { keyId, roles } = request.body;
    const { key } = keyFor(request, keyId, "rbac.*.add_role_to_key");
    const refs = roleRefs(roles);
    await submitV2(
      ctx,
      request,
      { type: "addRoles", keyId: key.id, refs, allowCreate: false, nowMs: deps.nowMs() },
      { translate },
    );
    return ok(request, directRoles(key.id));
  });

  app.post(
    "/keys.removeRoles",
    { schema: { body: rolesBody(1), response: v2Responses(RolesData) } },
    async (request) => {
      const { keyId, roles } = request.body;
      const { key } = keyFor(request, keyId);
      requireRolesExist(deps.state, roles);
      await submitV2(ctx, request, { type: "removeRoles", keyId: key.id, refs: roles.map((name) => ({ name })) });
      return ok(request, directRoles(key.id));
    },
  );

  app.post("/keys.setRoles", { schema: { body: rolesBody(0), response: v2Responses(RolesData) } }, async (request) => {
    const { keyId, roles } = request.body;
    const { key } = keyFor(request, keyId);
    const refs = roleRefs(roles);
    await submitV2(
      ctx,
      request,
      { type: "setRoles", keyId: key.id, refs, allowCreate: false, nowMs: deps.nowMs() },
      { translate },
    );
    return ok(request, directRoles(key.id));
  });
  done();
};
