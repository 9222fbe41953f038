// keys.createKey, keys.updateKey, keys.deleteKey, keys.setPermissions, keys.setRoles.

import { keyStart, newKeySecret, ROOT_PERMISSION, type KeyCommand } from "@keyraft/core";
import type { FastifyPluginCallbackTypebox } from "@fastify/type-provider-typebox";
import type { FastifyReply, FastifyRequest } from "fastify";
import { hashKey } from "../auth/hash.js";
import { planCreation, planReplacement } from "../auth/rbac-plan.js";
import { identityLink } from "../auth/identity-link.js";
import { anyOf, authenticate, requirePermission, requireRootAdmin, type RootKeyDeps } from "../auth/root-key.js";
import type { GatewayServices } from "../services.js";
import { badRequest, notFound, recoverableUnsupported } from "../errors.js";
import {
  createKeyBody,
  createKeyResponse,
  deleteKeyBody,
  emptyResponse,
  namedItemsResponse,
  setPermissionsBody,
  setRolesBody,
  updateKeyBody,
  updateRemainingBody,
  updateRemainingResponse,
} from "../schemas/keys.js";
import type { RefsBody } from "../schemas/keys.js";
import type { Static } from "@sinclair/typebox";
import type { BodyRequest } from "../http/typed-request.js";
import { checkMeta } from "./guards.js";

/** A key's refill as the create and update bodies carry it. */
type RefillBody = NonNullable<Static<typeof createKeyBody>["refill"]>;

const defaultKeyBytes = 16;

function refillInput(refill: RefillBody) {
  return { interval: refill.interval, amount: refill.amount, refillDay: refill.refillDay ?? null };
}

/** `duration ?? refillInterval` (upstream); one of them is needed. */
function limitInput(ratelimit: { limit: number; duration?: number; refillInterval?: number }) {
  const durationMs = ratelimit.duration ?? ratelimit.refillInterval;
  if (durationMs === undefined) throw badRequest("ratelimit.duration: Required");
  return { limit: ratelimit.limit, durationMs };
}

/** The services these routes use (registered by app.ts with GatewayServices). */
export type KeyWriteRoutesDeps = Pick<GatewayServices, "ids" | "randomBytes" | "submit"> & RootKeyDeps;

export const keyWriteRoutes: FastifyPluginCallbackTypebox<KeyWriteRoutesDeps> = (app, deps, done) => {
  const createKey = async (request: BodyRequest<typeof createKeyBody>, reply: FastifyReply) => {
    const body = request.body;
    const auth = await authenticate(
      deps,
      request,
      anyOf(ROOT_PERMISSION, "api.*.create_key", `api.${body.apiId}.create_key`),
    );
    if (!deps.state.apis.has(body.apiId)) throw notFound(`api ${body.apiId} not found`);
    if (body.recoverable === true) throw recoverableUnsupported();
    if (body.remaining !== undefined && body.remaining <= 0) throw badRequest("remaining must be greater than 0.");
    if (body.refill !== undefined && body.remaining === undefined)
      throw badRequest("remaining must be set if you are using refill.");
    if (body.refill?.interval === "daily" && body.refill.refillDay !== undefined) {
      throw badRequest("when interval is set to 'daily', 'refillDay' must be null.");
    }
    checkMeta(body.meta);
    requireRootAdmin(auth, body.apiId);
    const permissions = planCreation(deps.state, auth, deps.ids, "permission", body.permissions ?? []);
    const roles = planCreation(deps.state, auth, deps.ids, "role", body.roles ?? []);
    const secret = newKeySecret(body.prefix, deps.randomBytes(body.byteLength ?? defaultKeyBytes));
    const externalId = body.externalId ?? body.ownerId;
    const outcome = await deps.submit(request, {
      type: "createKey",
      keyId: deps.ids.next("key"),
      apiId: body.apiId,
      hash: hashKey(secret),
      start: keyStart(secret, body.prefix),
      name: body.name ?? null,
      ownerId: externalId ?? null,
      identity: externalId === undefined ? null : identityLink(deps.state, auth, externalId, deps.ids.next("id")),
      meta: body.meta ?? null,
      expiresAtMs: body.expires ?? null,
      remaining: body.remaining ?? null,
      refill: body.refill === undefined ? null : refillInput(body.refill),
      ratelimit: body.ratelimit === undefined ? null : limitInput(body.ratelimit),
      enabled: body.enabled ?? true,
      environment: body.environment ?? null,
      permissions: permissions.refs,
      roles: roles.refs,
      allowCreatePermissions: permissions.allowCreate,
      allowCreateRoles: roles.allowCreate,
      nowMs: deps.nowMs(),
    });
    return reply.send({ keyId: outcome.id, key: secret });
  };
  app.post("/v1/keys.createKey", { schema: { body: createKeyBody, response: createKeyResponse } }, createKey);
  // Legacy REST alias (upstream's deprecated route).
  app.post("/v1/keys", { schema: { body: createKeyBody, response: createKeyResponse, deprecated: true } }, createKey);

  app.post(
    "/v1/keys.updateKey",
    { schema: { body: updateKeyBody, response: emptyResponse } },
    async (request, reply) => {
      const body = request.body;
      const auth = await authenticate(deps, request);
      const key = deps.state.keys.get(body.keyId);
      if (key === undefined) throw notFound(`key ${body.keyId} not found`);
      requirePermission(auth, anyOf(ROOT_PERMISSION, "api.*.update_key", `api.${key.apiId}.update_key`));
      requireRootAdmin(auth, key.apiId);
      if (body.refill?.interval === "daily" && body.refill.refillDay !== undefined) {
        throw badRequest("Cannot set 'refillDay' if 'interval' is 'daily'");
      }
      checkMeta(body.meta);
      const command: Extract<KeyCommand, { type: "updateKey" }> = {
        type: "updateKey",
        keyId: key.id,
        nowMs: deps.nowMs(),
      };
      if (body.roles !== undefined) {
        command.roles = planReplacement(deps.state, auth, deps.ids, key, "role", "roles", body.roles);
      }
      if (body.permissions !== undefined) {
        command.permissions = planReplacement(
          deps.state,
          auth,
          deps.ids,
          key,
          "permission",
          "permissions",
          body.permissions,
        );
      }
      if (body.name !== undefined) command.name = body.name;
      const externalId = body.externalId !== undefined ? body.externalId : body.ownerId;
      if (externalId !== undefined) {
        command.identity = externalId === null ? null : identityLink(deps.state, auth, externalId, deps.ids.next("id"));
      }
      if (body.meta !== undefined) command.meta = body.meta;
      if (body.expires !== undefined) command.expiresAtMs = body.expires;
      if (body.ratelimit !== undefined) command.ratelimit = body.ratelimit === null ? null : limitInput(body.ratelimit);
      if (body.remaining !== undefined) command.remaining = body.remaining;
      if (body.refill !== undefined) command.refill = body.refill === null ? null : refillInput(body.refill);
      if (body.enabled !== undefined) command.enabled = body.enabled;
      await deps.submit(request, command);
      return reply.send({});
    },
  );

  app.post(
    "/v1/keys.deleteKey",
    { schema: { body: deleteKeyBody, response: emptyResponse } },
    async (request, reply) => {
      const body = request.body;
      const key = deps.state.keys.get(body.keyId);
      if (key === undefined) throw notFound(`key ${body.keyId} not found`);
      const auth = await authenticate(
        deps,
        request,
        anyOf(ROOT_PERMISSION, "api.*.delete_key", `api.${key.apiId}.delete_key`),
      );
      requireRootAdmin(auth, key.apiId);
      await deps.submit(request, { type: "deleteKey", keyId: key.id });
      return reply.send({});
    },
  );

  app.post(
    "/v1/keys.updateRemaining",
    { schema: { body: updateRemainingBody, response: updateRemainingResponse } },
    async (request, reply) => {
      const body = request.body;
      const key = deps.state.keys.get(body.keyId);
      if (key === undefined) throw notFound(`key ${body.keyId} not found`);
      const auth = await authenticate(
        deps,
        request,
        anyOf(ROOT_PERMISSION, "api.*.update_key", `api.${key.apiId}.update_key`),
      );
      requireRootAdmin(auth, key.apiId);
      const outcome = await deps.submit(request, {
        type: "updateRemaining",
        keyId: key.id,
        op: body.op,
        value: body.value,
        nowMs: deps.nowMs(),
      });
      return reply.send({ remaining: outcome.remaining ?? null });
    },
  );

  const replaceRoute = (kind: "permission" | "role") => {
    const field = kind === "permission" ? "permissions" : "roles";
    return async (request: FastifyRequest<{ Body: RefsBody }>, reply: FastifyReply) => {
      const body = request.body;
      const auth = await authenticate(deps, request);
      const key = deps.state.keys.get(body.keyId);
      if (key === undefined) throw notFound(`key ${body.keyId} not found`);
      requireRootAdmin(auth, key.apiId);
      const plan = planReplacement(deps.state, auth, deps.ids, key, kind, field, body[field] ?? []);
      const outcome = await deps.submit(request, {
        type: kind === "permission" ? "setPermissions" : "setRoles",
        keyId: key.id,
        refs: plan.refs,
        allowCreate: plan.allowCreate,
        nowMs: deps.nowMs(),
      });
      return reply.send(outcome.items ?? []);
    };
  };
  app.post(
    "/v1/keys.setPermissions",
    { schema: { body: setPermissionsBody, response: namedItemsResponse } },
    replaceRoute("permission"),
  );
  app.post("/v1/keys.setRoles", { schema: { body: setRolesBody, response: namedItemsResponse } }, replaceRoute("role"));
  done();
};
