// ratelimits.setOverride, getOverride, listOverrides, deleteOverride. `*` is accepted by all of
// them (decision 6; upstream's getOverride forgot it).

import { ROOT_PERMISSION, type KeyState, type OverrideRecord } from "@keyraft/core";
import type { FastifyPluginCallbackTypebox } from "@fastify/type-provider-typebox";
import { anyOf, authenticate, type RootKeyDeps } from "../auth/root-key.js";
import { createdId, type GatewayServices } from "../services.js";
import { badRequest, notFound } from "../errors.js";
import {
  deleteOverrideBody,
  deleteOverrideResponse,
  getOverrideQuery,
  getOverrideResponse,
  listOverridesQuery,
  listOverridesResponse,
  setOverrideBody,
  setOverrideResponse,
} from "../schemas/ratelimits.js";

interface NamespaceRef {
  namespaceId?: string;
  namespaceName?: string;
}

const missingNamespace = "You must provide a namespaceId or a namespaceName";

function hasNamespace(ref: NamespaceRef): boolean {
  return ref.namespaceId !== undefined || ref.namespaceName !== undefined;
}

/** The namespace by id when given (it takes precedence), else by name; 404 with the given message. */
function findNamespace(state: KeyState, ref: NamespaceRef, message?: string): string {
  const id =
    ref.namespaceId !== undefined
      ? state.namespaces.has(ref.namespaceId)
        ? ref.namespaceId
        : undefined
      : state.namespaceIdByName.get(ref.namespaceName ?? "");
  if (id === undefined) throw notFound(message ?? `Namespace ${ref.namespaceId ?? ref.namespaceName ?? ""} not found`);
  return id;
}

function overrideView(override: OverrideRecord) {
  return {
    id: override.id,
    identifier: override.identifier,
    limit: override.limit,
    duration: override.durationMs,
    async: override.async ?? undefined,
  };
}

/** The services these routes use (registered by app.ts with GatewayServices). */
export type OverrideRoutesDeps = Pick<GatewayServices, "ids" | "submit"> & RootKeyDeps;

export const overrideRoutes: FastifyPluginCallbackTypebox<OverrideRoutesDeps> = (app, deps, done) => {
  app.post(
    "/v1/ratelimits.setOverride",
    { schema: { body: setOverrideBody, response: setOverrideResponse } },
    async (request, reply) => {
      const body = request.body;
      if (!hasNamespace(body)) throw badRequest(missingNamespace);
      await authenticate(deps, request, anyOf(ROOT_PERMISSION, "ratelimit.*.set_override"));
      const namespaceId = findNamespace(deps.state, body);
      const outcome = await deps.submit(request, {
        type: "setOverride",
        overrideId: deps.ids.next("rlor"),
        namespaceId,
        identifier: body.identifier,
        limit: body.limit,
        durationMs: body.duration,
        async: body.async ?? false,
        nowMs: deps.nowMs(),
      });
      return reply.send({ overrideId: createdId(outcome) });
    },
  );

  app.get(
    "/v1/ratelimits.getOverride",
    { schema: { querystring: getOverrideQuery, response: getOverrideResponse } },
    async (request, reply) => {
      const query = request.query;
      await authenticate(deps, request, anyOf(ROOT_PERMISSION, "ratelimit.*.read_override"));
      if (!hasNamespace(query)) throw badRequest(missingNamespace);
      const namespaceId = findNamespace(deps.state, query, "Namespace not found");
      const id = deps.state.overrideIdsByNamespace.get(namespaceId)?.get(query.identifier);
      const override = id === undefined ? undefined : deps.state.overrides.get(id);
      if (override === undefined) throw notFound("Override not found");
      return reply.send({ ...overrideView(override), async: override.async });
    },
  );

  app.get(
    "/v1/ratelimits.listOverrides",
    { schema: { querystring: listOverridesQuery, response: listOverridesResponse } },
    async (request, reply) => {
      const query = request.query;
      if (!hasNamespace(query)) throw badRequest(missingNamespace);
      await authenticate(deps, request, anyOf(ROOT_PERMISSION, "ratelimit.*.read_override"));
      const namespaceId = findNamespace(deps.state, query);
      const ids = [...(deps.state.overrideIdsByNamespace.get(namespaceId)?.values() ?? [])].sort();
      const after = query.cursor;
      const page = (after === undefined ? ids : ids.filter((id) => id > after)).slice(0, query.limit);
      const overrides = page.flatMap((id) => {
        const override = deps.state.overrides.get(id);
        return override === undefined ? [] : [overrideView(override)];
      });
      return reply.send({ overrides, total: ids.length, cursor: page.at(-1) });
    },
  );

  app.post(
    "/v1/ratelimits.deleteOverride",
    { schema: { body: deleteOverrideBody, response: deleteOverrideResponse } },
    async (request, reply) => {
      const body = request.body;
      await authenticate(deps, request, anyOf(ROOT_PERMISSION, "ratelimit.*.delete_override"));
      if (!hasNamespace(body)) throw badRequest(missingNamespace);
      const namespaceId = findNamespace(deps.state, body);
      await deps.submit(request, { type: "deleteOverride", namespaceId, identifier: body.identifier });
      return reply.send({});
    },
  );
  done();
};
