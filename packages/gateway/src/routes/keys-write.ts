// keys.createKey, keys.updateKey, keys.deleteKey, keys.setPermissions, keys.setRoles.

import { keyStart, newKeySecret, ROOT_PERMISSION, type JsonObject, type KeyCommand } from "@keyraft/core";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { requestIdHeader } from "../app.js";
import { hashKey } from "../auth/hash.js";
import { planCreation, planReplacement, type RefItem } from "../auth/rbac-plan.js";
import { identityLink } from "../auth/identity-link.js";
import { anyOf, authenticate, requirePermission, requireRootAdmin } from "../auth/root-key.js";
import type { GatewayContext } from "../context.js";
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
import { checkMeta } from "./guards.js";

interface RefillBody {
  interval: "daily" | "monthly";
  amount: number;
  refillDay?: number;
}

interface CreateKeyBody {
  apiId: string;
  prefix?: string;
  name?: string;
  byteLength?: number;
  ownerId?: string;
  externalId?: string;
  meta?: JsonObject;
  roles?: string[];
  permissions?: string[];
  expires?: number;
  remaining?: number;
  refill?: RefillBody;
  ratelimit?: { limit: number; duration?: number; refillInterval?: number };
  enabled?: boolean;
  recoverable?: boolean;
  environment?: string;
}

interface UpdateKeyBody {
  keyId: string;
  name?: string | null;
  ownerId?: string | null;
  externalId?: string | null;
  meta?: JsonObject | null;
  expires?: number | null;
  ratelimit?: { limit: number; duration?: number; refillInterval?: number } | null;
  remaining?: number | null;
  refill?: RefillBody | null;
  enabled?: boolean;
  roles?: RefItem[];
  permissions?: RefItem[];
}

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

function sendWithId(request: FastifyRequest, reply: FastifyReply, body: unknown): FastifyReply {
  return reply.header(requestIdHeader, request.id).send(body);
}

export function registerKeyWriteRoutes(app: FastifyInstance, ctx: GatewayContext): void {
  const { deps } = ctx;

  const createKey = async (request: FastifyRequest, reply: FastifyReply) => {
    const body = request.body as CreateKeyBody;
    const auth = await authenticate(
      ctx,
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
    const permissions = planCreation(deps.state, auth, ctx.ids, "permission", body.permissions ?? []);
    const roles = planCreation(deps.state, auth, ctx.ids, "role", body.roles ?? []);
    const secret = newKeySecret(body.prefix, deps.randomBytes(body.byteLength ?? defaultKeyBytes));
    const externalId = body.externalId ?? body.ownerId;
    const outcome = await ctx.submit({
      type: "createKey",
      keyId: ctx.ids.next("key"),
      apiId: body.apiId,
      hash: hashKey(secret),
      start: keyStart(secret, body.prefix),
      name: body.name ?? null,
      ownerId: externalId ?? null,
      identity: externalId === undefined ? null : identityLink(deps.state, auth, externalId, ctx.ids.next("id")),
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
    return sendWithId(request, reply, { keyId: outcome.id, key: secret });
  };
  app.post("/v1/keys.createKey", { schema: { body: createKeyBody, response: createKeyResponse } }, createKey);
  // Legacy REST alias (upstream's deprecated route).
  app.post("/v1/keys", { schema: { body: createKeyBody, response: createKeyResponse, deprecated: true } }, createKey);

  app.post(
    "/v1/keys.updateKey",
    { schema: { body: updateKeyBody, response: emptyResponse } },
    async (request, reply) => {
      const body = request.body as UpdateKeyBody;
      const auth = await authenticate(ctx, request);
      const key = deps.state.keys.get(body.keyId);
      if (key === undefined) throw notFound(`key ${body.keyId} not found`);
      requirePermission(auth, anyOf(ROOT_PERMISSION, "api.*.update_key", `api.${key.apiId}.update_key`));
      requireRootAdmin(auth, key.apiId);
      if (body.remaining === null && body.refill !== undefined && body.refill !== null) {
        throw badRequest("Cannot set refill on a key with unlimited requests");
      }
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
        command.roles = planReplacement(deps.state, auth, ctx.ids, key, "role", "roles", body.roles);
      }
      if (body.permissions !== undefined) {
        command.permissions = planReplacement(
          deps.state,
          auth,
          ctx.ids,
          key,
          "permission",
          "permissions",
          body.permissions,
        );
      }
      if (body.name !== undefined) command.name = body.name;
      const externalId = body.externalId !== undefined ? body.externalId : body.ownerId;
      if (externalId !== undefined) {
        command.identity = externalId === null ? null : identityLink(deps.state, auth, externalId, ctx.ids.next("id"));
      }
      if (body.meta !== undefined) command.meta = body.meta;
      if (body.expires !== undefined) command.expiresAtMs = body.expires;
      if (body.ratelimit !== undefined) command.ratelimit = body.ratelimit === null ? null : limitInput(body.ratelimit);
      if (body.remaining !== undefined) command.remaining = body.remaining;
      if (body.refill !== undefined) command.refill = body.refill === null ? null : refillInput(body.refill);
      if (body.enabled !== undefined) command.enabled = body.enabled;
      await ctx.submit(command);
      return sendWithId(request, reply, {});
    },
  );

  app.post(
    "/v1/keys.deleteKey",
    { schema: { body: deleteKeyBody, response: emptyResponse } },
    async (request, reply) => {
      const body = request.body as { keyId: string; permanent?: boolean };
      const key = deps.state.keys.get(body.keyId);
      if (key === undefined) throw notFound(`key ${body.keyId} not found`);
      const auth = await authenticate(
        ctx,
        request,
        anyOf(ROOT_PERMISSION, "api.*.delete_key", `api.${key.apiId}.delete_key`),
      );
      requireRootAdmin(auth, key.apiId);
      await ctx.submit({ type: "deleteKey", keyId: key.id });
      return sendWithId(request, reply, {});
    },
  );

  app.post(
    "/v1/keys.updateRemaining",
    { schema: { body: updateRemainingBody, response: updateRemainingResponse } },
    async (request, reply) => {
      const body = request.body as { keyId: string; op: "increment" | "decrement" | "set"; value: number | null };
      const key = deps.state.keys.get(body.keyId);
      if (key === undefined) throw notFound(`key ${body.keyId} not found`);
      const auth = await authenticate(
        ctx,
        request,
        anyOf(ROOT_PERMISSION, "api.*.update_key", `api.${key.apiId}.update_key`),
      );
      requireRootAdmin(auth, key.apiId);
      const outcome = await ctx.submit({
        type: "updateRemaining",
        keyId: key.id,
        op: body.op,
        value: body.value,
        nowMs: deps.nowMs(),
      });
      return sendWithId(request, reply, { remaining: outcome.remaining ?? null });
    },
  );

  const replaceRoute = (kind: "permission" | "role") => {
    const field = kind === "permission" ? "permissions" : "roles";
    return async (request: FastifyRequest, reply: FastifyReply) => {
      const body = request.body as { keyId: string } & Record<string, RefItem[]>;
      const auth = await authenticate(ctx, request);
      const key = deps.state.keys.get(body.keyId);
      if (key === undefined) throw notFound(`key ${body.keyId} not found`);
      requireRootAdmin(auth, key.apiId);
      const plan = planReplacement(deps.state, auth, ctx.ids, key, kind, field, body[field] ?? []);
      const outcome = await ctx.submit({
        type: kind === "permission" ? "setPermissions" : "setRoles",
        keyId: key.id,
        refs: plan.refs,
        allowCreate: plan.allowCreate,
        nowMs: deps.nowMs(),
      });
      return sendWithId(request, reply, outcome.items ?? []);
    };
  };
  app.post(
    "/v1/keys.setPermissions",
    { schema: { body: setPermissionsBody, response: namedItemsResponse } },
    replaceRoute("permission"),
  );
  app.post("/v1/keys.setRoles", { schema: { body: setRolesBody, response: namedItemsResponse } }, replaceRoute("role"));
}
