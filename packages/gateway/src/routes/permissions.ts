// permissions.createPermission/getPermission/listPermissions/deletePermission and
// permissions.createRole/getRole/listRoles/deleteRole (docs/api.md). Lists are ordered by id.

import {
  permissionIdOfSlug,
  ROOT_PERMISSION,
  type KeyState,
  type PermissionRecord,
  type RoleRecord,
} from "@keyraft/core";
import type { FastifyPluginCallbackTypebox } from "@fastify/type-provider-typebox";
import { anyOf, authenticate, type RootKeyDeps } from "../auth/root-key.js";
import { isRootAdmin, requireRootScopeAdmin, rootScope } from "../auth/root-scope.js";
import { createdId, type GatewayServices } from "../services.js";
import { badRequest, notFound } from "../errors.js";
import {
  createPermissionBody,
  createPermissionResponse,
  createRoleBody,
  createRoleResponse,
  deletePermissionBody,
  deleteRoleBody,
  getPermissionQuery,
  getPermissionResponse,
  getRoleQuery,
  getRoleResponse,
  listPermissionsResponse,
  listRolesResponse,
  rbacEmptyResponse,
} from "../schemas/rbac.js";

function permissionView(permission: PermissionRecord) {
  return {
    id: permission.id,
    name: permission.name,
    slug: permission.slug,
    description: permission.description ?? undefined,
  };
}

function roleView(state: KeyState, role: RoleRecord) {
  return {
    id: role.id,
    name: role.name,
    description: role.description ?? undefined,
    permissions: role.permissionIds.map((id) => state.permissions.get(id)?.slug ?? id).sort(),
  };
}

/** upstream: description is 3..256 characters, or "". */
function description(value: string | undefined): string | null {
  if (value === undefined || value === "") return null;
  if (value.length < 3) throw badRequest("description: String must contain at least 3 character(s)");
  return value;
}

const byId = <T extends { id: string }>(a: T, b: T): number => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/** The services these routes use (registered by app.ts with GatewayServices). */
export type PermissionRoutesDeps = Pick<GatewayServices, "ids" | "submit"> & RootKeyDeps;

export const permissionRoutes: FastifyPluginCallbackTypebox<PermissionRoutesDeps> = (app, deps, done) => {
  app.post(
    "/v1/permissions.createPermission",
    { schema: { body: createPermissionBody, response: createPermissionResponse } },
    async (request, reply) => {
      const body = request.body;
      await authenticate(deps, request, anyOf(ROOT_PERMISSION, "rbac.*.create_permission"));
      const outcome = await deps.submit(request, {
        type: "createPermission",
        permissionId: deps.ids.next("perm"),
        name: body.name,
        slug: body.slug ?? body.name,
        description: description(body.description),
        nowMs: deps.nowMs(),
      });
      return reply.send({ permissionId: createdId(outcome) });
    },
  );

  app.get(
    "/v1/permissions.getPermission",
    { schema: { querystring: getPermissionQuery, response: getPermissionResponse } },
    async (request, reply) => {
      const query = request.query;
      const auth = await authenticate(deps, request, anyOf(ROOT_PERMISSION, "rbac.*.read_permission"));
      const permission = deps.state.permissions.get(query.permissionId);
      // What root keys use is not a tenant's to see (auth/root-scope.ts).
      const hidden = !isRootAdmin(auth) && rootScope(deps.state).permissionIds.has(query.permissionId);
      if (permission === undefined || hidden) throw notFound(`permission ${query.permissionId} not found`);
      return reply.send(permissionView(permission));
    },
  );

  app.get(
    "/v1/permissions.listPermissions",
    { schema: { response: listPermissionsResponse } },
    async (request, reply) => {
      const auth = await authenticate(deps, request, anyOf(ROOT_PERMISSION, "rbac.*.read_permission"));
      const hidden = isRootAdmin(auth) ? new Set<string>() : rootScope(deps.state).permissionIds;
      const visible = [...deps.state.permissions.values()].filter((permission) => !hidden.has(permission.id));
      return reply.send(visible.sort(byId).map(permissionView));
    },
  );

  app.post(
    "/v1/permissions.deletePermission",
    { schema: { body: deletePermissionBody, response: rbacEmptyResponse } },
    async (request, reply) => {
      const body = request.body;
      const auth = await authenticate(deps, request, anyOf(ROOT_PERMISSION, "rbac.*.delete_permission"));
      if (rootScope(deps.state).permissionIds.has(body.permissionId))
        requireRootScopeAdmin(auth, `permission ${body.permissionId}`);
      await deps.submit(request, { type: "deletePermission", permissionId: body.permissionId });
      return reply.send({});
    },
  );

  app.post(
    "/v1/permissions.createRole",
    { schema: { body: createRoleBody, response: createRoleResponse } },
    async (request, reply) => {
      const body = request.body;
      await authenticate(deps, request, anyOf(ROOT_PERMISSION, "rbac.*.create_role"));
      const permissionIds = (body.permissions ?? []).map((ref) => {
        const id = deps.state.permissions.has(ref) ? ref : permissionIdOfSlug(deps.state, ref);
        if (id === undefined) throw notFound(`permission ${ref} not found`);
        return id;
      });
      const outcome = await deps.submit(request, {
        type: "createRole",
        roleId: deps.ids.next("role"),
        name: body.name,
        description: description(body.description),
        permissionIds,
        nowMs: deps.nowMs(),
      });
      return reply.send({ roleId: createdId(outcome) });
    },
  );

  app.get(
    "/v1/permissions.getRole",
    { schema: { querystring: getRoleQuery, response: getRoleResponse } },
    async (request, reply) => {
      const query = request.query;
      const auth = await authenticate(deps, request, anyOf(ROOT_PERMISSION, "rbac.*.read_role"));
      const role = deps.state.roles.get(query.roleId);
      const hidden = !isRootAdmin(auth) && rootScope(deps.state).roleIds.has(query.roleId);
      if (role === undefined || hidden) throw notFound(`role ${query.roleId} not found`);
      return reply.send(roleView(deps.state, role));
    },
  );

  app.get("/v1/permissions.listRoles", { schema: { response: listRolesResponse } }, async (request, reply) => {
    const auth = await authenticate(deps, request, anyOf(ROOT_PERMISSION, "rbac.*.read_role"));
    const hidden = isRootAdmin(auth) ? new Set<string>() : rootScope(deps.state).roleIds;
    const visible = [...deps.state.roles.values()].filter((role) => !hidden.has(role.id));
    return reply.send(visible.sort(byId).map((role) => roleView(deps.state, role)));
  });

  app.post(
    "/v1/permissions.deleteRole",
    { schema: { body: deleteRoleBody, response: rbacEmptyResponse } },
    async (request, reply) => {
      const body = request.body;
      const auth = await authenticate(deps, request, anyOf(ROOT_PERMISSION, "rbac.*.delete_role"));
      if (rootScope(deps.state).roleIds.has(body.roleId)) requireRootScopeAdmin(auth, `role ${body.roleId}`);
      await deps.submit(request, { type: "deleteRole", roleId: body.roleId });
      return reply.send({});
    },
  );
  done();
};
