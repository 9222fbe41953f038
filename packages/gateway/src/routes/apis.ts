// apis.createApi and apis.getApi (auth before lookup, as upstream).

import { keyDerived, ROOT_PERMISSION, type KeyRecord, type KeyState } from "@keyraft/core";
import type { FastifyPluginCallbackTypebox } from "@fastify/type-provider-typebox";
import { anyOf, authenticate, requireRootAdmin, type RootKeyDeps } from "../auth/root-key.js";
import { createdId, type GatewayServices } from "../services.js";
import { notFound, recoverableUnsupported } from "../errors.js";
import {
  createApiBody,
  createApiResponse,
  deleteApiBody,
  deleteKeysBody,
  deleteKeysResponse,
  getApiQuery,
  getApiResponse,
  legacyListKeysParams,
  legacyListKeysQuery,
  listKeysQuery,
  listKeysResponse,
} from "../schemas/apis.js";
import type { ShownCredits } from "../counters/credits/shown-credits.js";
import type { Static } from "@sinclair/typebox";
import type { keyObject } from "../schemas/keys.js";
import { keyView } from "./keys-read.js";
import { emptyResponse } from "../schemas/keys.js";
import { pageLimitDefault } from "../schemas/common.js";
import { workspaceId } from "./guards.js";

/** Keys of the api matching the owner filter, ordered by id (the api's index, then a sort). */
function apiKeys(
  state: KeyState,
  apiId: string,
  owner: { identityId?: string | undefined; ownerId?: string | undefined },
): KeyRecord[] {
  const keys: KeyRecord[] = [];
  for (const id of state.keys.idsOfApi(apiId)) {
    const key = state.keys.get(id);
    if (key === undefined) continue;
    if (owner.identityId !== undefined && key.identityId !== owner.identityId) continue;
    if (owner.ownerId !== undefined && key.ownerId !== owner.ownerId) continue;
    keys.push(key);
  }
  return keys.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/** The listKeys `Key`: as getKey, but permissions are every slug, direct and via roles (upstream). */
function listedKey(
  state: KeyState,
  key: KeyRecord,
  nowMs: number,
  shown: ShownCredits | undefined,
): Static<typeof keyObject> {
  return { ...keyView(state, key, nowMs, shown), permissions: [...keyDerived(state, key).permissions] };
}

const readKeysQuery = (apiId: string) => ({
  or: [
    ROOT_PERMISSION,
    {
      and: [{ or: ["api.*.read_key", `api.${apiId}.read_key`] }, { or: ["api.*.read_api", `api.${apiId}.read_api`] }],
    },
  ],
});

/** The services these routes use (registered by app.ts with GatewayServices). */
export type ApiRoutesDeps = Pick<GatewayServices, "ids" | "submit" | "creditLeases"> & RootKeyDeps;

export const apiRoutes: FastifyPluginCallbackTypebox<ApiRoutesDeps> = (app, deps, done) => {
  app.post(
    "/v1/apis.createApi",
    { schema: { body: createApiBody, response: createApiResponse } },
    async (request, reply) => {
      const body = request.body;
      await authenticate(deps, request, anyOf(ROOT_PERMISSION, "api.*.create_api"));
      const outcome = await deps.submit(request, {
        type: "createApi",
        apiId: deps.ids.next("api"),
        name: body.name,
        nowMs: deps.nowMs(),
      });
      return reply.send({ apiId: createdId(outcome), name: body.name });
    },
  );

  app.get(
    "/v1/apis.getApi",
    { schema: { querystring: getApiQuery, response: getApiResponse } },
    async (request, reply) => {
      const query = request.query;
      await authenticate(deps, request, anyOf(ROOT_PERMISSION, "api.*.read_api", `api.${query.apiId}.read_api`));
      const api = deps.state.apis.get(query.apiId);
      if (api === undefined) throw notFound(`api ${query.apiId} not found`);
      return reply.send({ id: api.id, workspaceId, name: api.name });
    },
  );

  // Deletes the api and all its keys; api_root is protected (412 DELETE_PROTECTED).
  app.post(
    "/v1/apis.deleteApi",
    { schema: { body: deleteApiBody, response: emptyResponse } },
    async (request, reply) => {
      const body = request.body;
      await authenticate(deps, request, anyOf(ROOT_PERMISSION, "api.*.delete_api", `api.${body.apiId}.delete_api`));
      await deps.submit(request, { type: "deleteApi", apiId: body.apiId });
      return reply.send({});
    },
  );

  app.get(
    "/v1/apis.listKeys",
    { schema: { querystring: listKeysQuery, response: listKeysResponse } },
    async (request, reply) => {
      const query = request.query;
      const auth = await authenticate(deps, request, readKeysQuery(query.apiId));
      if (!deps.state.apis.has(query.apiId)) throw notFound(`api ${query.apiId} not found`);
      requireRootAdmin(auth, query.apiId);
      if (query.decrypt === true) throw recoverableUnsupported();
      let identityId: string | undefined;
      if (query.externalId !== undefined) {
        identityId = deps.state.identityIdByExternalId.get(query.externalId);
        if (identityId === undefined) return reply.send({ keys: [], total: 0 });
      }
      const all = apiKeys(deps.state, query.apiId, {
        identityId,
        ownerId: identityId === undefined ? query.ownerId : undefined,
      });
      const after = query.cursor;
      const page = (after === undefined ? all : all.filter((key) => key.id > after)).slice(0, query.limit);
      const nowMs = deps.nowMs();
      return reply.send({
        keys: page.map((key) => listedKey(deps.state, key, nowMs, deps.creditLeases?.shown)),
        total: all.length,
        cursor: page.at(-1)?.id,
      });
    },
  );

  // Legacy REST alias of listKeys with offset paging (upstream's deprecated route).
  app.get(
    "/v1/apis/:apiId/keys",
    {
      schema: {
        params: legacyListKeysParams,
        querystring: legacyListKeysQuery,
        response: listKeysResponse,
        deprecated: true,
      },
    },
    async (request, reply) => {
      const { apiId } = request.params;
      const query = request.query;
      const auth = await authenticate(deps, request, readKeysQuery(apiId));
      if (!deps.state.apis.has(apiId)) throw notFound(`api ${apiId} not found`);
      requireRootAdmin(auth, apiId);
      const all = apiKeys(deps.state, apiId, { ownerId: query.ownerId });
      const nowMs = deps.nowMs();
      // The schema's defaults fill both (validation runs with useDefaults).
      const { offset = 0, limit = pageLimitDefault } = query;
      const keys = all
        .slice(offset, offset + limit)
        .map((key) => listedKey(deps.state, key, nowMs, deps.creditLeases?.shown));
      return reply.send({ keys, total: all.length });
    },
  );

  app.post(
    "/v1/apis.deleteKeys",
    { schema: { body: deleteKeysBody, response: deleteKeysResponse } },
    async (request, reply) => {
      const body = request.body;
      const auth = await authenticate(
        deps,
        request,
        anyOf(ROOT_PERMISSION, "api.*.delete_key", `api.${body.apiId}.delete_key`),
      );
      requireRootAdmin(auth, body.apiId);
      const outcome = await deps.submit(request, { type: "deleteKeys", apiId: body.apiId });
      return reply.send({ deletedKeys: outcome.count ?? 0 });
    },
  );
  done();
};
