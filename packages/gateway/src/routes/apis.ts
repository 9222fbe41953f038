// apis.createApi and apis.getApi (auth before lookup, as upstream).

import { ROOT_PERMISSION } from "@keyraft/core";
import type { FastifyInstance } from "fastify";
import { requestIdHeader } from "../app.js";
import { anyOf, authenticate } from "../auth/root-key.js";
import type { GatewayContext } from "../context.js";
import { notFound } from "../errors.js";
import { createApiBody, createApiResponse, deleteApiBody, getApiQuery, getApiResponse } from "../schemas/apis.js";
import { emptyResponse } from "../schemas/keys.js";
import { workspaceId } from "./guards.js";

export function registerApiRoutes(app: FastifyInstance, ctx: GatewayContext): void {
  const { deps } = ctx;

  app.post("/v1/apis.createApi", { schema: { body: createApiBody, response: createApiResponse } }, async (request, reply) => {
    const body = request.body as { name: string };
    await authenticate(ctx, request, anyOf(ROOT_PERMISSION, "api.*.create_api"));
    const outcome = await ctx.submit({ type: "createApi", apiId: ctx.ids.next("api"), name: body.name, nowMs: deps.nowMs() });
    return reply.header(requestIdHeader, request.id).send({ apiId: outcome.id, name: body.name });
  });

  app.get("/v1/apis.getApi", { schema: { querystring: getApiQuery, response: getApiResponse } }, async (request, reply) => {
    const query = request.query as { apiId: string };
    await authenticate(ctx, request, anyOf(ROOT_PERMISSION, "api.*.read_api", `api.${query.apiId}.read_api`));
    const api = deps.state.apis.get(query.apiId);
    if (api === undefined) throw notFound(`api ${query.apiId} not found`);
    return reply.header(requestIdHeader, request.id).send({ id: api.id, workspaceId, name: api.name });
  });

  // Deletes the api and all its keys; api_root is protected (412 DELETE_PROTECTED).
  app.post("/v1/apis.deleteApi", { schema: { body: deleteApiBody, response: emptyResponse } }, async (request, reply) => {
    const body = request.body as { apiId: string };
    await authenticate(ctx, request, anyOf(ROOT_PERMISSION, "api.*.delete_api", `api.${body.apiId}.delete_api`));
    await ctx.submit({ type: "deleteApi", apiId: body.apiId });
    return reply.header(requestIdHeader, request.id).send({});
  });
}
