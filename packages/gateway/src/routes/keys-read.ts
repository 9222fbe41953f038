// keys.getKey and keys.whoami: the key is looked up before authentication (404 beats 403, as
// upstream).

import { keyCreditsAt, ROOT_PERMISSION, type KeyRecord, type KeyState } from "@keyraft/core";
import type { FastifyPluginCallbackTypebox } from "@fastify/type-provider-typebox";
import { hashKey } from "../auth/hash.js";
import { anyOf, authenticate, holdsAny, requireRootAdmin, type RootKeyDeps } from "../auth/root-key.js";
import { notFound, recoverableUnsupported, unauthorized } from "../errors.js";
import { getKeyQuery, keyObject, keyResponse, whoamiBody, whoamiResponse } from "../schemas/keys.js";
import type { Static } from "@sinclair/typebox";
import type { ShownCredits } from "../counters/credits/shown-credits.js";
import type { GatewayServices } from "../services.js";
import { workspaceId } from "./guards.js";

/** The credits a node shows for a key: its credit leases' view (counters/credits/shown-credits.ts) when it has them. */
export function shownCreditsAt(shown: ShownCredits | undefined, key: KeyRecord, nowMs: number): number | null {
  return shown === undefined ? keyCreditsAt(key, nowMs) : shown.at(key, nowMs);
}

/** The v1 `Key` object (getKey): permissions are the DIRECT permission names, as upstream. */
export function keyView(
  state: KeyState,
  key: KeyRecord,
  nowMs: number,
  shown: ShownCredits | undefined,
): Static<typeof keyObject> {
  const identity = key.identityId === null ? undefined : state.identities.get(key.identityId);
  const limit = key.ratelimits.find((ratelimit) => ratelimit.name === "default");
  const remaining = shownCreditsAt(shown, key, nowMs);
  return {
    id: key.id,
    start: key.start,
    workspaceId,
    apiId: key.apiId,
    name: key.name ?? undefined,
    ownerId: identity?.externalId ?? key.ownerId ?? undefined,
    meta: key.meta ?? undefined,
    createdAt: key.createdAtMs,
    updatedAt: key.updatedAtMs ?? undefined,
    expires: key.expiresAtMs ?? undefined,
    remaining: remaining ?? undefined,
    refill:
      key.refill === null
        ? undefined
        : {
            interval: key.refill.interval,
            amount: key.refill.amount,
            refillDay: key.refill.refillDay,
            lastRefillAt: key.refill.lastRefillAtMs,
          },
    ratelimit:
      limit === undefined
        ? undefined
        : {
            async: false,
            limit: limit.limit,
            duration: limit.durationMs,
            refillRate: limit.limit,
            refillInterval: limit.durationMs,
          },
    roles: key.roleIds.map((id) => state.roles.get(id)?.name ?? id).sort(),
    permissions: key.permissionIds.map((id) => state.permissions.get(id)?.name ?? id).sort(),
    enabled: key.enabled,
    identity:
      identity === undefined
        ? undefined
        : { id: identity.id, externalId: identity.externalId, meta: identity.meta ?? {} },
  };
}

/** The services these routes use (registered by app.ts with GatewayServices). */
export type KeyReadRoutesDeps = Pick<GatewayServices, "creditLeases"> & RootKeyDeps;

export const keyReadRoutes: FastifyPluginCallbackTypebox<KeyReadRoutesDeps> = (app, deps, done) => {
  app.get(
    "/v1/keys.getKey",
    { schema: { querystring: getKeyQuery, response: keyResponse } },
    async (request, reply) => {
      const query = request.query;
      const key = deps.state.keys.get(query.keyId);
      if (key === undefined) throw notFound(`key ${query.keyId} not found`);
      const auth = await authenticate(
        deps,
        request,
        anyOf(ROOT_PERMISSION, "api.*.read_key", `api.${key.apiId}.read_key`),
      );
      requireRootAdmin(auth, key.apiId);
      // The permission rule first (as upstream), then: keyraft stores no recoverable copies (decision 10).
      if (query.decrypt === true) {
        if (!holdsAny(auth, ROOT_PERMISSION, "api.*.decrypt_key", `api.${key.apiId}.decrypt_key`)) {
          throw unauthorized("you're not allowed to decrypt this key");
        }
        throw recoverableUnsupported();
      }
      return reply.send(keyView(deps.state, key, deps.nowMs(), deps.creditLeases?.shown));
    },
  );

  app.post("/v1/keys.whoami", { schema: { body: whoamiBody, response: whoamiResponse } }, async (request, reply) => {
    const body = request.body;
    const key = deps.state.keys.getByHash(hashKey(body.key));
    if (key === undefined) throw notFound("Key not found");
    const auth = await authenticate(
      deps,
      request,
      anyOf(ROOT_PERMISSION, "api.*.read_key", `api.${key.apiId}.read_key`),
    );
    requireRootAdmin(auth, key.apiId);
    const identity = key.identityId === null ? undefined : deps.state.identities.get(key.identityId);
    const remaining = shownCreditsAt(deps.creditLeases?.shown, key, deps.nowMs());
    return reply.send({
      id: key.id,
      name: key.name ?? undefined,
      remaining: remaining ?? undefined,
      identity: identity === undefined ? undefined : { id: identity.id, externalId: identity.externalId },
      meta: key.meta === null || Object.keys(key.meta).length === 0 ? undefined : key.meta,
      createdAt: key.createdAtMs,
      enabled: key.enabled,
      environment: key.environment ?? undefined,
    });
  });
  done();
};
