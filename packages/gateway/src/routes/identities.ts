// identities.createIdentity/getIdentity/listIdentities/updateIdentity/deleteIdentity (docs/api.md).
// An identity's rate limits are shared by all its keys: verification keys their counters
// by the identity id. `*` is accepted everywhere (decision 6; upstream forgot it on some).

import { ROOT_PERMISSION, type IdentityRecord, type KeyCommand, type KeyState } from "@keyraft/core";
import type { FastifyPluginCallbackTypebox } from "@fastify/type-provider-typebox";
import { anyOf, authenticate, type RootKeyDeps } from "../auth/root-key.js";
import { createdId, type GatewayServices } from "../services.js";
import { V1Error, badRequest, notFound } from "../errors.js";
import {
  createIdentityBody,
  createIdentityResponse,
  deleteIdentityBody,
  getIdentityQuery,
  identityEmptyResponse,
  identityResponse,
  listIdentitiesQuery,
  listIdentitiesResponse,
  updateIdentityBody,
} from "../schemas/identities.js";
import type { Static } from "@sinclair/typebox";
import { checkMeta } from "./guards.js";

/** An identity's rate limit as the create and update bodies carry it. */
type RatelimitBody = NonNullable<Static<typeof createIdentityBody>["ratelimits"]>[number];

const missingId = "Provide either identityId or externalId";

function ratelimitsView(identity: IdentityRecord) {
  return identity.ratelimits.map((limit) => ({ name: limit.name, limit: limit.limit, duration: limit.durationMs }));
}

function identityView(identity: IdentityRecord) {
  return {
    id: identity.id,
    externalId: identity.externalId,
    meta: identity.meta ?? {},
    ratelimits: ratelimitsView(identity),
  };
}

function findIdentity(
  state: KeyState,
  ref: { identityId?: string; externalId?: string },
  environment?: string,
): IdentityRecord | undefined {
  if (ref.identityId !== undefined) return state.identities.get(ref.identityId);
  const id = state.identityIdByExternalId.get(ref.externalId ?? "");
  const identity = id === undefined ? undefined : state.identities.get(id);
  return identity !== undefined && (environment === undefined || identity.environment === environment)
    ? identity
    : undefined;
}

/**
 * v1 has no `autoApply`: a limit keeps the flag a v2 write gave its name (`current`), new names
 * get false, so a v1 update does not silently stop an auto-applied limit.
 */
function limitInputs(ratelimits: readonly RatelimitBody[] | undefined, current?: IdentityRecord) {
  return (ratelimits ?? []).map((limit) => ({
    name: limit.name,
    limit: limit.limit,
    durationMs: limit.duration,
    autoApply: current?.ratelimits.find((existing) => existing.name === limit.name)?.autoApply ?? false,
  }));
}

/** The services these routes use (registered by app.ts with GatewayServices). */
export type IdentityRoutesDeps = Pick<GatewayServices, "ids" | "submit"> & RootKeyDeps;

export const identityRoutes: FastifyPluginCallbackTypebox<IdentityRoutesDeps> = (app, deps, done) => {
  app.post(
    "/v1/identities.createIdentity",
    { schema: { body: createIdentityBody, response: createIdentityResponse } },
    async (request, reply) => {
      const body = request.body;
      await authenticate(deps, request, anyOf(ROOT_PERMISSION, "identity.*.create_identity"));
      checkMeta(body.meta);
      const outcome = await deps.submit(request, {
        type: "createIdentity",
        identityId: deps.ids.next("id"),
        externalId: body.externalId,
        environment: "default",
        meta: body.meta ?? null,
        ratelimits: limitInputs(body.ratelimits),
        nowMs: deps.nowMs(),
      });
      return reply.send({ identityId: createdId(outcome) });
    },
  );

  app.get(
    "/v1/identities.getIdentity",
    { schema: { querystring: getIdentityQuery, response: identityResponse } },
    async (request, reply) => {
      const query = request.query;
      if (query.identityId === undefined && query.externalId === undefined) throw badRequest(missingId);
      const scoped = query.identityId ?? deps.state.identityIdByExternalId.get(query.externalId ?? "") ?? "";
      await authenticate(
        deps,
        request,
        anyOf(ROOT_PERMISSION, "identity.*.read_identity", `identity.${scoped}.read_identity`),
      );
      const identity = findIdentity(deps.state, query);
      if (identity === undefined) throw notFound(`identity ${query.identityId ?? query.externalId ?? ""} not found`);
      return reply.send(identityView(identity));
    },
  );

  app.get(
    "/v1/identities.listIdentities",
    { schema: { querystring: listIdentitiesQuery, response: listIdentitiesResponse } },
    async (request, reply) => {
      const query = request.query;
      await authenticate(
        deps,
        request,
        anyOf(ROOT_PERMISSION, "identity.*.read_identity", `identity.${query.environment}.read_identity`),
      );
      const all = [...deps.state.identities.values()].filter((identity) => identity.environment === query.environment);
      all.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
      const after = query.cursor;
      const page = (after === undefined ? all : all.filter((identity) => identity.id > after)).slice(0, query.limit);
      return reply.send({
        identities: page.map((identity) => ({
          id: identity.id,
          externalId: identity.externalId,
          ratelimits: ratelimitsView(identity),
        })),
        total: all.length,
        cursor: page.at(-1)?.id,
      });
    },
  );

  app.post(
    "/v1/identities.updateIdentity",
    { schema: { body: updateIdentityBody, response: identityResponse } },
    async (request, reply) => {
      const body = request.body;
      await authenticate(deps, request, anyOf(ROOT_PERMISSION, "identity.*.update_identity"));
      if (body.identityId === undefined && body.externalId === undefined) throw badRequest(missingId);
      const names = new Set<string>();
      for (const limit of body.ratelimits ?? []) {
        if (names.has(limit.name))
          throw new V1Error("CONFLICT", `Ratelimit with name "${limit.name}" is already defined in the request`);
        names.add(limit.name);
      }
      checkMeta(body.meta);
      const identity = findIdentity(deps.state, body, body.identityId === undefined ? body.environment : undefined);
      if (identity === undefined) throw notFound(`identity ${body.identityId ?? body.externalId ?? ""} not found`);
      const command: Extract<KeyCommand, { type: "updateIdentity" }> = {
        type: "updateIdentity",
        identityId: identity.id,
      };
      if (body.meta !== undefined) command.meta = body.meta;
      if (body.ratelimits !== undefined) command.ratelimits = limitInputs(body.ratelimits, identity);
      await deps.submit(request, command);
      const updated = deps.state.identities.get(identity.id);
      if (updated === undefined) throw notFound(`identity ${identity.id} not found`);
      return reply.send(identityView(updated));
    },
  );

  app.post(
    "/v1/identities.deleteIdentity",
    { schema: { body: deleteIdentityBody, response: identityEmptyResponse } },
    async (request, reply) => {
      const body = request.body;
      await authenticate(
        deps,
        request,
        anyOf(ROOT_PERMISSION, "identity.*.delete_identity", `identity.${body.identityId}.delete_identity`),
      );
      await deps.submit(request, { type: "deleteIdentity", identityId: body.identityId });
      return reply.send({});
    },
  );
  done();
};
