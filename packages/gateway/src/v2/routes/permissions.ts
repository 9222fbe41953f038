// permissions.createPermission/getPermission/listPermissions/deletePermission and
// permissions.createRole/getRole/listRoles/deleteRole/setRolePermissions (docs/api-v2.md).
// Permissions are addressed by id or slug, roles by id or name; slugs and names match ignoring
// case (one rule with v1). Lists page by id; search is a case-insensitive substring.

import {
  permissionIdOfSlug,
  roleIdOfName,
  type CommandError,
  type KeyState,
  type PermissionRecord,
  type RoleRecord,
} from "@keyraft/core";
import { Type } from "@sinclair/typebox";
import type { GatewayServices } from "../../services.js";
import { allOf, holds, requirePermissions, type Principal } from "../auth.js";
import { EmptyData, Envelope, ok, okPage, PaginatedEnvelope, v2Responses } from "../envelope.js";
import { byId, pageById } from "../pagination.js";
import { principalOf, type V2RoutePlugin } from "../route.js";
import { V2Error } from "../problem.js";
import {
  CreatePermissionBody,
  CreateRoleBody,
  ListBody,
  PermissionRefBody,
  RoleRefBody,
  SetRolePermissionsBody,
} from "../schemas/permissions.js";
import { PermissionResponse as Permission, RoleResponse as Role, permissionView, roleView } from "../schemas/rbac.js";
import { isRootAdmin, requireRootScopeAdminV2, rootScope } from "../root-scope.js";
import { submitV2 } from "../submit.js";
import { searchMatcher } from "../search.js";

const permissionNotFound = () => new V2Error("permission_not_found", "The requested permission does not exist.");
const roleNotFound = () => new V2Error("role_not_found", "The requested role does not exist.");

function findPermission(state: KeyState, ref: string): PermissionRecord | undefined {
  return state.permissions.get(ref) ?? state.permissions.get(permissionIdOfSlug(state, ref) ?? "");
}

function findRole(state: KeyState, ref: string): RoleRecord | undefined {
  return state.roles.get(ref) ?? state.roles.get(roleIdOfName(state, ref) ?? "");
}

/** Slugs to link to a role: missing ones need rbac.*.create_permission (403) and are then created. */
function slugRefs(ctx: GatewayServices, principal: Principal, slugs: readonly string[]) {
  const missing = slugs.some((slug) => permissionIdOfSlug(ctx.state, slug) === undefined);
  if (missing) requirePermissions(principal, "rbac.*.create_permission");
  return {
    refs: slugs.map((name) => ({ name, newId: ctx.ids.next("perm"), create: true })),
    allowCreate: holds(principal, "rbac.*.create_permission"),
  };
}

const protectedRoot = (error: CommandError) =>
  error.code === "DELETE_PROTECTED"
    ? new V2Error("protected_resource", "The root permission '*' is protected from deletion.")
    : undefined;

export const permissionRoutes: V2RoutePlugin = (app, ctx, done) => {
  const deps = ctx;

  app.post(
    "/permissions.createPermission",
    {
      schema: {
        body: CreatePermissionBody,
        response: v2Responses(Envelope(Type.Object({ permissionId: Type.String() }))),
      },
    },
    async (request) => {
      const body = request.body;
      requirePermissions(principalOf(request), "rbac.*.create_permission");
      const conflict = () =>
        new V2Error(
          "permission_already_exists",
          `A permission with slug '${body.slug}' already exists in this workspace`,
        );
      if (permissionIdOfSlug(deps.state, body.slug) !== undefined) throw conflict();
      const outcome = await submitV2(
        ctx,
        request,
        {
          type: "createPermission",
          permissionId: ctx.ids.next("perm"),
          name: body.name,
          slug: body.slug,
          description: body.description === undefined || body.description === "" ? null : body.description,
          nowMs: deps.nowMs(),
        },
        { translate: (error) => (error.code === "CONFLICT" ? conflict() : undefined) },
      );
      return ok(request, { permissionId: outcome.id ?? "" });
    },
  );

  app.post(
    "/permissions.getPermission",
    { schema: { body: PermissionRefBody, response: v2Responses(Envelope(Permission)) } },
    (request) => {
      const principal = principalOf(request);
      requirePermissions(principal, "rbac.*.read_permission");
      const permission = findPermission(deps.state, request.body.permission);
      if (permission === undefined) throw permissionNotFound();
      if (!isRootAdmin(principal) && rootScope(deps.state).permissionIds.has(permission.id)) throw permissionNotFound();
      return ok(request, permissionView(permission));
    },
  );

  app.post(
    "/permissions.listPermissions",
    { schema: { body: ListBody, response: v2Responses(PaginatedEnvelope(Permission)) } },
    (request) => {
      const body = request.body;
      const principal = principalOf(request);
      requirePermissions(principal, "rbac.*.read_permission");
      const matches = searchMatcher(body.search);
      const hidden = isRootAdmin(principal) ? new Set<string>() : rootScope(deps.state).permissionIds;
      const all = [...deps.state.permissions.values()]
        .filter((p) => !hidden.has(p.id) && matches(p.id, p.name, p.slug, p.description))
        .sort(byId);
      const page = pageById(all, (permission) => permission.id, body.cursor, body.limit);
      return okPage(request, page.items.map(permissionView), page.pagination);
    },
  );

  app.post(
    "/permissions.deletePermission",
    { schema: { body: PermissionRefBody, response: v2Responses(Envelope(EmptyData)) } },
    async (request) => {
      const principal = principalOf(request);
      requirePermissions(principal, "rbac.*.delete_permission");
      const permission = findPermission(deps.state, request.body.permission);
      if (permission === undefined) throw permissionNotFound();
      if (rootScope(deps.state).permissionIds.has(permission.id)) {
        requireRootScopeAdminV2(principal, `the permission '${permission.slug}'`);
      }
      await submitV2(
        ctx,
        request,
        { type: "deletePermission", permissionId: permission.id },
        { notFound: "permission_not_found", translate: protectedRoot },
      );
      return ok(request, {});
    },
  );

  app.post(
    "/permissions.createRole",
    { schema: { body: CreateRoleBody, response: v2Responses(Envelope(Type.Object({ roleId: Type.String() }))) } },
    async (request) => {
      const body = request.body;
      const principal = principalOf(request);
      requirePermissions(principal, "rbac.*.create_role");
      const slugs = body.permissions ?? [];
      if (slugs.length > 0) requirePermissions(principal, "rbac.*.add_permission_to_role");
      const permissions = slugRefs(ctx, principal, slugs);
      const conflict = () =>
        new V2Error("role_already_exists", `A role with name '${body.name}' already exists in this workspace`);
      if (roleIdOfName(deps.state, body.name) !== undefined) throw conflict();
      const outcome = await submitV2(
        ctx,
        request,
        {
          type: "createRole",
          roleId: ctx.ids.next("role"),
          name: body.name,
          description: body.description === undefined || body.description === "" ? null : body.description,
          permissionIds: [],
          permissions,
          nowMs: deps.nowMs(),
        },
        {
          notFound: "permission_not_found",
          translate: (error) =>
            error.code === "CONFLICT" && error.message.startsWith("Role ") ? conflict() : undefined,
        },
      );
      return ok(request, { roleId: outcome.id ?? "" });
    },
  );

  app.post(
    "/permissions.getRole",
    { schema: { body: RoleRefBody, response: v2Responses(Envelope(Role)) } },
    (request) => {
      const principal = principalOf(request);
      requirePermissions(principal, "rbac.*.read_role");
      const role = findRole(deps.state, request.body.role);
      if (role === undefined) throw roleNotFound();
      if (!isRootAdmin(principal) && rootScope(deps.state).roleIds.has(role.id)) throw roleNotFound();
      return ok(request, roleView(deps.state, role));
    },
  );

  app.post(
    "/permissions.listRoles",
    { schema: { body: ListBody, response: v2Responses(PaginatedEnvelope(Role)) } },
    (request) => {
      const body = request.body;
      const principal = principalOf(request);
      requirePermissions(principal, "rbac.*.read_role");
      const matches = searchMatcher(body.search);
      const hidden = isRootAdmin(principal) ? new Set<string>() : rootScope(deps.state).roleIds;
      const all = [...deps.state.roles.values()]
        .filter((r) => !hidden.has(r.id) && matches(r.id, r.name, r.description))
        .sort(byId);
      const page = pageById(all, (role) => role.id, body.cursor, body.limit);
      return okPage(
        request,
        page.items.map((role) => roleView(deps.state, role)),
        page.pagination,
      );
    },
  );

  app.post(
    "/permissions.deleteRole",
    { schema: { body: RoleRefBody, response: v2Responses(Envelope(EmptyData)) } },
    async (request) => {
      const principal = principalOf(request);
      requirePermissions(principal, "rbac.*.delete_role");
      const role = findRole(deps.state, request.body.role);
      if (role === undefined) throw roleNotFound();
      if (rootScope(deps.state).roleIds.has(role.id)) requireRootScopeAdminV2(principal, `the role '${role.name}'`);
      await submitV2(ctx, request, { type: "deleteRole", roleId: role.id }, { notFound: "role_not_found" });
      return ok(request, {});
    },
  );

  app.post(
    "/permissions.setRolePermissions",
    { schema: { body: SetRolePermissionsBody, response: v2Responses(Envelope(Type.Array(Permission))) } },
    async (request) => {
      const body = request.body;
      const principal = principalOf(request);
      requirePermissions(principal, allOf("rbac.*.add_permission_to_role", "rbac.*.remove_permission_from_role"));
      if (!deps.state.roles.has(body.roleId)) throw roleNotFound();
      if (rootScope(deps.state).roleIds.has(body.roleId)) requireRootScopeAdminV2(principal, `the role ${body.roleId}`);
      const { refs, allowCreate } = slugRefs(ctx, principal, body.permissions);
      await submitV2(
        ctx,
        request,
        { type: "setRolePermissions", roleId: body.roleId, refs, allowCreate, nowMs: deps.nowMs() },
        { notFound: "role_not_found" },
      );
      const role = deps.state.roles.get(body.roleId);
      if (role === undefined) throw roleNotFound();
      return ok(request, roleView(deps.state, role).permissions ?? []);
    },
  );
  done();
};
