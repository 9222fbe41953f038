// apis.createApi and apis.getApi (auth before lookup, as upstream).

import { keyDerived, ROOT_PERMISSION, type KeyRecord, type KeyState } from "@keyraft/core";
import type { FastifyInstance } from "fastify";
import { requestIdHeader } from "../app.js";
import { anyOf, authenticate, requireRootAdmin } from "../auth/root-key.js";
import type { GatewayContext } from "../context.js";
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
import { keyView } from "./keys-read.js";
import { emptyResponse } from "../schemas/keys.js";
import { workspaceId } from "./guards.js";

/** Keys of the api matching the owner filter, ordered by id (the api's index, then a sort). */
function apiKeys(
  state: KeyState,
  apiId: string,
  owner: { identityId?: string | undefined; ownerId?: string | undefined },
): KeyRecord[] {
  const keys: KeyRecord[] = [];
  for (const id of state.keyIdsByApi.get(apiId) ?? []) {
    const key = state.keys.get(id);
    if (key === undefined) continue;
    if (owner.identityId !== undefined && key.identityId !== owner.identityId) continue;
    if (owner.ownerId !== undefined && key.ownerId !== owner.ownerId) continue;
    keys.push(key);
  }
  return keys.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/** The listKeys `Key`: as getKey, but permissions are every slug, direct and via roles (upstream). */
function listedKey(state: KeyState, key: KeyRecord, nowMs: number): Record<string, unknown> {
  return { ...keyView(state, key, nowMs), permissions: [...keyDerived(state, key).permissions] };
}

const readKeysQuery = (apiId: string) => ({
  or: [
    ROOT_PERMISSION,
    {
      and: [{ or: ["api.*.read_key", `api.${apiId}.read_key`] }, { or: ["api.*.read_api", `api.${apiId}.read_api`] }],
    },
  ],
});

export function registerApiRoutes(app: FastifyInstance, ctx: GatewayContext): void {
  const { deps } = ctx;

  app.post(
    "/v1/apis.createApi",
    { schema: { body: createApiBody, response: createApiResponse } },
    async (request, reply) => {
      const body = request.body as { name: string };
      await authenticate(ctx, request, anyOf(ROOT_PERMISSION, "api.*.create_api"));
      const outcome = await ctx.submit({
        type: "createApi",
        apiId: ctx.ids.next("api"),
        name: body.name,
        nowMs: deps.nowMs(),
      });
      return reply.header(requestIdHeader, request.id).send({ apiId: outcome.id, name: body.name });
    },
  );

  app.get(
    "/v1/apis.getApi",
    { schema: { querystring: getApiQuery, response: getApiResponse } },
    async (request, reply) => {
      const query = request.query as { apiId: string };
      await authenticate(ctx, request, anyOf(ROOT_PERMISSION, "api.*.read_api", `api.${query.apiId}.read_api`));
      const api = deps.state.apis.get(query.apiId);
      if (api === undefined) throw notFound(`api ${query.apiId} not found`);
      return reply.header(requestIdHeader, request.id).send({ id: api.id, workspaceId, name: api.name });
    },
  );

  // Deletes the api and all its keys; api_root is protected (412 DELETE_PROTECTED).
  app.post(
    "/v1/apis.deleteApi",
    { schema: { body: deleteApiBody, response: emptyResponse } },
    async (request, reply) => {
      const body = request.body as { apiId: string };
      await authenticate(ctx, request, anyOf(ROOT_PERMISSION, "api.*.delete_api", `api.${body.apiId}.delete_api`));
      await ctx.submit({ type: "deleteApi", apiId: body.apiId });
      return reply.header(requestIdHeader, request.id).send({});
    },
  );

  app.get(
    "/v1/apis.listKeys",
    { schema: { querystring: listKeysQuery, response: listKeysResponse } },
    async (request, reply) => {
      const query = request.query as {
        apiId: string;
        limit: number;
        cursor?: string;
        ownerId?: string;
        externalId?: string;
        decrypt?: boolean | null;
      };
      const auth = await authenticate(ctx, request, readKeysQuery(query.apiId));
      if (!deps.state.apis.has(query.apiId)) throw notFound(`api ${query.apiId} not found`);
      requireRootAdmin(auth, query.apiId);
      if (query.decrypt === true) throw recoverableUnsupported();
      let identityId: string | undefined;
      if (query.externalId !== undefined) {
        identityId = deps.state.identityIdByExternalId.get(query.externalId);
        if (identityId === undefined) return reply.header(requestIdHeader, request.id).send({ keys: [], total: 0 });
      }
      const all = apiKeys(deps.state, query.apiId, {
        identityId,
        ownerId: identityId === undefined ? query.ownerId : undefined,
      });
      const after = query.cursor;
      const page = (after === undefined ? all : all.filter((key) => key.id > after)).slice(0, query.limit);
      const nowMs = deps.nowMs();
      return reply.header(requestIdHeader, request.id).send({
        keys: page.map((key) => listedKey(deps.state, key, nowMs)),
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
      const { apiId } = request.params as { apiId: string };
      const query = request.query as { limit: number; offset: number; ownerId?: string };
      const auth = await authenticate(ctx, request, readKeysQuery(apiId));
      if (!deps.state.apis.has(apiId)) throw notFound(`api ${apiId} not found`);
      requireRootAdmin(auth, apiId);
      const all = apiKeys(deps.state, apiId, { ownerId: query.ownerId });
      const nowMs = deps.nowMs();
      const keys = all.slice(query.offset, query.offset + query.limit).map((key) => listedKey(deps.state, key, nowMs));
      return reply.header(requestIdHeader, request.id).send({ keys, total: all.length });
    },
  );

  app.post(
    "/v1/apis.deleteKeys",
    { schema: { body: deleteKeysBody, response: deleteKeysResponse } },
    async (request, reply) => {
      const body = request.body as { apiId: string; permanent?: boolean };
      const auth = await authenticate(
        ctx,
        request,
        anyOf(ROOT_PERMISSION, "api.*.delete_key", `api.${body.apiId}.delete_key`),
      );
      requireRootAdmin(auth, body.apiId);
      const outcome = await ctx.submit({ type: "deleteKeys", apiId: body.apiId });
      return reply.header(requestIdHeader, request.id).send({ deletedKeys: outcome.count ?? 0 });
    },
  );
}
