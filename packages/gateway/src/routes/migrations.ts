// migrations.createKeys: imports existing keys by their hash ({value, variant: "sha256_base64"},
// the form keyraft stores) or plaintext, all in one atomic command (all keys or none).
// migrations.enqueueKeys: keyraft imports at once as well and answers 202 `{}` (upstream queued
// the keys and imported them later; importing synchronously is a valid way to honour that).

import { keyStart, ROOT_PERMISSION, type ImportedKey } from "@keyraft/core";
import type { FastifyPluginCallbackTypebox } from "@fastify/type-provider-typebox";
import type { FastifyRequest } from "fastify";
import { hashKey } from "../auth/hash.js";
import { planCreation } from "../auth/rbac-plan.js";
import { identityLink } from "../auth/identity-link.js";
import { anyOf, authenticate, requireRootAdmin, type RootAuth, type RootKeyDeps } from "../auth/root-key.js";
import type { GatewayServices } from "../services.js";
import { badRequest, notFound } from "../errors.js";
import { createKeysBody, createKeysResponse, enqueueKeysBody, enqueueKeysResponse } from "../schemas/migrations.js";
import type { migratedKey } from "../schemas/migrations.js";
import type { Static } from "@sinclair/typebox";
import { checkMeta } from "./guards.js";

/** One key of an import, as migrations.createKeys carries it (enqueueKeys adds the apiId). */
export type MigratedKey = Static<typeof migratedKey>;

/** A SHA-256 digest in standard base64 with padding: 44 characters. */
const sha256Base64Pattern = /^[A-Za-z0-9+/]{43}=$/;

function secretHash(key: MigratedKey, index: number): { hash: string; start: string } {
  if (key.plaintext !== undefined && key.hash !== undefined)
    throw badRequest(`${index}: provide either hash or plaintext, not both`);
  if (key.plaintext !== undefined)
    return { hash: hashKey(key.plaintext), start: key.start ?? keyStart(key.plaintext, key.prefix) };
  if (key.hash === undefined) throw badRequest(`${index}: provide either hash or plaintext`);
  if (!sha256Base64Pattern.test(key.hash.value))
    throw badRequest(`${index}.hash.value: must be a base64 encoded SHA-256 digest (44 characters)`);
  return { hash: key.hash.value, start: key.start ?? key.prefix ?? "" };
}

function validateKey(key: MigratedKey, index: number): void {
  if (key.remaining !== undefined && key.remaining <= 0)
    throw badRequest(`${index}: remaining must be greater than 0.`);
  if (key.refill !== undefined && key.remaining === undefined)
    throw badRequest(`${index}: remaining must be set if you are using refill.`);
  if (key.refill?.interval === "daily" && key.refill.refillDay !== undefined) {
    throw badRequest(`${index}: when interval is set to 'daily', 'refillDay' must be null.`);
  }
  if (
    key.ratelimit !== undefined &&
    key.ratelimit.duration === undefined &&
    key.ratelimit.refillInterval === undefined
  ) {
    throw badRequest(`${index}.ratelimit.duration: Required`);
  }
  checkMeta(key.meta);
}

/** Checks and plans the import of `keys`; returns the command's keys and creation rights. */
async function planImport(deps: MigrationRoutesDeps, request: FastifyRequest, keys: readonly MigratedKey[]) {
  const apiIds = [...new Set(keys.map((key) => key.apiId))];
  const auth: RootAuth = await authenticate(deps, request, {
    and: apiIds.map((apiId) => anyOf(ROOT_PERMISSION, "api.*.create_key", `api.${apiId}.create_key`)),
  });
  for (const apiId of apiIds) {
    if (!deps.state.apis.has(apiId)) throw notFound(`api ${apiId} not found`);
    requireRootAdmin(auth, apiId);
  }
  keys.forEach(validateKey);
  const permissions = planCreation(deps.state, auth, deps.ids, "permission", [
    ...new Set(keys.flatMap((key) => key.permissions ?? [])),
  ]);
  const roles = planCreation(deps.state, auth, deps.ids, "role", [...new Set(keys.flatMap((key) => key.roles ?? []))]);
  const permissionRef = new Map(permissions.refs.map((ref) => [ref.name, ref]));
  const roleRef = new Map(roles.refs.map((ref) => [ref.name, ref]));
  const imported: ImportedKey[] = keys.map((key, index) => {
    const { hash, start } = secretHash(key, index);
    const externalId = key.externalId ?? key.ownerId;
    return {
      keyId: deps.ids.next("key"),
      apiId: key.apiId,
      hash,
      start,
      name: key.name ?? null,
      ownerId: externalId ?? null,
      identity: externalId === undefined ? null : identityLink(deps.state, auth, externalId, deps.ids.next("id")),
      meta: key.meta ?? null,
      expiresAtMs: key.expires ?? null,
      remaining: key.remaining ?? null,
      refill:
        key.refill === undefined
          ? null
          : { interval: key.refill.interval, amount: key.refill.amount, refillDay: key.refill.refillDay ?? null },
      ratelimit:
        key.ratelimit === undefined
          ? null
          : { limit: key.ratelimit.limit, durationMs: key.ratelimit.duration ?? key.ratelimit.refillInterval ?? 0 },
      enabled: key.enabled ?? true,
      environment: key.environment ?? null,
      permissions: (key.permissions ?? []).map((name) => permissionRef.get(name)!),
      roles: (key.roles ?? []).map((name) => roleRef.get(name)!),
    };
  });
  return { imported, allowCreatePermissions: permissions.allowCreate, allowCreateRoles: roles.allowCreate };
}

/** The services these routes use (registered by app.ts with GatewayServices). */
export type MigrationRoutesDeps = Pick<GatewayServices, "ids" | "submit"> & RootKeyDeps;

export const migrationRoutes: FastifyPluginCallbackTypebox<MigrationRoutesDeps> = (app, deps, done) => {
  const importKeys = async (request: FastifyRequest, keys: readonly MigratedKey[]): Promise<string[]> => {
    const plan = await planImport(deps, request, keys);
    const outcome = await deps.submit(request, {
      type: "importKeys",
      keys: plan.imported,
      allowCreatePermissions: plan.allowCreatePermissions,
      allowCreateRoles: plan.allowCreateRoles,
      nowMs: deps.nowMs(),
    });
    return outcome.ids ?? [];
  };

  app.post(
    "/v1/migrations.createKeys",
    { schema: { body: createKeysBody, response: createKeysResponse } },
    async (request, reply) => {
      const keyIds = await importKeys(request, request.body);
      return reply.send({ keyIds });
    },
  );

  app.post(
    "/v1/migrations.enqueueKeys",
    { schema: { body: enqueueKeysBody, response: enqueueKeysResponse } },
    async (request, reply) => {
      const body = request.body;
      await importKeys(
        request,
        body.keys.map((key) => ({ ...key, apiId: body.apiId })),
      );
      return reply.code(202).send({});
    },
  );
  done();
};
