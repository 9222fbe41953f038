// keys.addPermissions, keys.removePermissions, keys.addRoles, keys.removeRoles. Each is one
// atomic command. keyraft honours every entry of a removal (upstream only the
// first) and asks `rbac.*.create_role` to create roles in addRoles (upstream asked
// create_permission).

import { permissionIdOfSlug, roleIdOfName, ROOT_PERMISSION, type KeyState, type Ref } from "@keyraft/core";
import type { FastifyPluginCallbackTypebox } from "@fastify/type-provider-typebox";
import type { FastifyReply, FastifyRequest } from "fastify";
import {
  anyOf,
  authenticate,
  holdsAny,
  requirePermission,
  requireRootAdmin,
  type RootKeyDeps,
} from "../auth/root-key.js";
import type { GatewayServices } from "../services.js";
import { badRequest, notFound } from "../errors.js";
import {
  addPermissionsBody,
  addRolesBody,
  rbacEmptyResponse,
  rbacNamedItemsResponse,
  removePermissionsBody,
  removeRolesBody,
} from "../schemas/rbac.js";
import type { RefsBody } from "../schemas/keys.js";

type Kind = "permission" | "role";

function lookupName(state: KeyState, kind: Kind, name: string): string | undefined {
  return kind === "permission" ? permissionIdOfSlug(state, name) : roleIdOfName(state, name);
}

function exists(state: KeyState, kind: Kind, id: string): boolean {
  return kind === "permission" ? state.permissions.has(id) : state.roles.has(id);
}

/** The services these routes use (registered by app.ts with GatewayServices). */
export type KeyRbacRoutesDeps = Pick<GatewayServices, "ids" | "submit"> & RootKeyDeps;

export const keyRbacRoutes: FastifyPluginCallbackTypebox<KeyRbacRoutesDeps> = (app, deps, done) => {
  const addRoute = (kind: Kind) => {
    const field = kind === "permission" ? "permissions" : "roles";
    return async (request: FastifyRequest<{ Body: RefsBody }>, reply: FastifyReply) => {
      const body = request.body;
      const auth = await authenticate(deps, request, anyOf(ROOT_PERMISSION, `rbac.*.add_${kind}_to_key`));
      const key = deps.state.keys.get(body.keyId);
      if (key === undefined) throw notFound(`key ${body.keyId} not found`);
      requireRootAdmin(auth, key.apiId);
      const items = body[field] ?? [];
      const refs: Ref[] = [];
      let creates = false;
      for (const [index, item] of items.entries()) {
        if (item.id !== undefined) {
          if (!exists(deps.state, kind, item.id)) throw notFound(`${kind} ${item.id} not found`);
          refs.push({ id: item.id });
        } else if (item.name !== undefined) {
          const missing = lookupName(deps.state, kind, item.name) === undefined;
          if (missing && item.create !== true) throw notFound(`${kind} ${item.name} not found`);
          creates ||= missing;
          refs.push({
            name: item.name,
            newId: deps.ids.next(kind === "permission" ? "perm" : "role"),
            create: item.create === true,
          });
        } else throw badRequest(`${field}.${index}: provide an id or a name`);
      }
      if (creates) requirePermission(auth, anyOf(ROOT_PERMISSION, `rbac.*.create_${kind}`), "UNAUTHORIZED");
      const outcome = await deps.submit(request, {
        type: kind === "permission" ? "addPermissions" : "addRoles",
        keyId: key.id,
        refs,
        allowCreate: holdsAny(auth, ROOT_PERMISSION, `rbac.*.create_${kind}`),
        nowMs: deps.nowMs(),
      });
      return reply.send(outcome.items ?? []);
    };
  };

  const removeRoute = (kind: Kind) => {
    const field = kind === "permission" ? "permissions" : "roles";
    return async (request: FastifyRequest<{ Body: RefsBody }>, reply: FastifyReply) => {
      const body = request.body;
      const auth = await authenticate(deps, request, anyOf(ROOT_PERMISSION, `rbac.*.remove_${kind}_from_key`));
      const key = deps.state.keys.get(body.keyId);
      if (key === undefined) throw notFound(`key ${body.keyId} not found`);
      requireRootAdmin(auth, key.apiId);
      const refs = (body[field] ?? []).map((item, index) => {
        if (item.id !== undefined) return { id: item.id };
        const name = kind === "permission" ? (item.slug ?? item.name) : item.name;
        if (name === undefined)
          throw badRequest(`${field}.${index}: provide an id or a ${kind === "permission" ? "slug" : "name"}`);
        return { name };
      });
      await deps.submit(request, {
        type: kind === "permission" ? "removePermissions" : "removeRoles",
        keyId: key.id,
        refs,
      });
      return reply.send({});
    };
  };

  app.post(
    "/v1/keys.addPermissions",
    { schema: { body: addPermissionsBody, response: rbacNamedItemsResponse } },
    addRoute("permission"),
  );
  app.post(
    "/v1/keys.removePermissions",
    { schema: { body: removePermissionsBody, response: rbacEmptyResponse } },
    removeRoute("permission"),
  );
  app.post("/v1/keys.addRoles", { schema: { body: addRolesBody, response: rbacNamedItemsResponse } }, addRoute("role"));
  app.post(
    "/v1/keys.removeRoles",
    { schema: { body: removeRolesBody, response: rbacEmptyResponse } },
    removeRoute("role"),
  );
  done();
};
