// keys.verifyKey (v2): a root key with `api.*.verify_key` or `api.<apiId>.verify_key` verifies a
// key of that api. The route only translates: the verification itself (decide, cover the rate-
// limit counts, spend credits, record analytics) is the one path v1's verifyKey and forwarded
// verifications use (verify/verification.ts). A key the root key may not verify answers NOT_FOUND, as
// an unknown key does, so existence never leaks.

import {
  parsePermissionQueryString,
  permissionQueryDepthMax,
  type KeyRecord,
  type PermissionQuery,
} from "@keyraft/core";
import { hashKey } from "../../auth/hash.js";
import type { VerifyFields } from "../../counters/ratelimit/wire.js";
import { holdsAny, type Principal } from "../auth.js";
import { Envelope, ok, v2Responses } from "../envelope.js";
import { migrateOnDemand } from "../migration.js";
import { principalOf, type V2RoutePlugin } from "../route.js";
import { V2Error, invalidInput } from "../problem.js";
import { notFoundData, verifyData, VerifyKeyBody, VerifyKeyData } from "../schemas/verify.js";
import { keyDerived } from "@keyraft/core";

function depthOf(query: PermissionQuery): number {
  if (typeof query === "string") return 1;
  const children = "and" in query ? query.and : query.or;
  return 1 + Math.max(...children.map(depthOf));
}

/** The parsed `permissions` query, or the 400 of a malformed one. */
function parsedQuery(text: string): PermissionQuery {
  const parsed = parsePermissionQueryString(text);
  if (!parsed.ok) {
    throw new V2Error("permissions_query_syntax_error", parsed.message, {
      errors: [{ location: "body/permissions", message: parsed.message }],
    });
  }
  if (depthOf(parsed.query) > permissionQueryDepthMax) {
    const detail = `The permission query nests deeper than ${permissionQueryDepthMax} levels.`;
    throw new V2Error("permissions_query_syntax_error", detail, {
      errors: [{ location: "body/permissions", message: detail }],
    });
  }
  return parsed.query;
}

export const keyVerifyRoutes: V2RoutePlugin = (app, ctx, done) => {
  const { state } = ctx;
  const mayVerify = (principal: Principal) => (key: KeyRecord) =>
    state.apis.has(key.apiId) && holdsAny(principal, "api.*.verify_key", `api.${key.apiId}.verify_key`);

  /** A named limit the key and its identity do not define is 412, as upstream. */
  const requireNamedLimits = (key: KeyRecord, body: VerifyKeyBody) => {
    const derived = keyDerived(state, key);
    for (const entry of body.ratelimits ?? []) {
      if (entry.limit !== undefined && entry.duration !== undefined) {
        if (entry.limit < 1 || entry.duration < 1000) {
          throw invalidInput(
            `ratelimit '${entry.name}': an inline limit needs limit >= 1 and duration >= 1000`,
            "body/ratelimits",
          );
        }
        continue;
      }
      if (derived.configuredLimits.has(entry.name)) continue;
      const identity = key.identityId === null ? undefined : state.identities.get(key.identityId);
      const missing = `ratelimit '${entry.name}' was requested but does not exist for key '${key.id}'`;
      const detail =
        identity === undefined
          ? `${missing} and there is no identity connected.`
          : `${missing} nor identity: '${identity.id}' external ID: '${identity.externalId}'`;
      throw new V2Error("precondition_failed", detail);
    }
  };

  app.post(
    "/keys.verifyKey",
    { schema: { body: VerifyKeyBody, response: v2Responses(Envelope(VerifyKeyData)) } },
    async (request) => {
      const body = request.body;
      const allowed = mayVerify(principalOf(request));
      const hash = hashKey(body.key);
      let key = state.keys.getByHash(hash);
      if (key === undefined && body.migrationId !== undefined) {
        key = await migrateOnDemand(ctx, request, body.key, body.migrationId, allowed);
      }
      if (key === undefined || !allowed(key)) return ok(request, notFoundData());
      const query = body.permissions === undefined ? undefined : parsedQuery(body.permissions);
      requireNamedLimits(key, body);
      const fields: VerifyFields = {};
      if (body.tags !== undefined) fields.tags = body.tags;
      if (query !== undefined) fields.authorization = { permissions: query };
      if (body.credits !== undefined) fields.remaining = { cost: body.credits.cost };
      if (body.ratelimits !== undefined) fields.ratelimits = body.ratelimits;
      const outcome = await ctx.verification.verify(hash, request.id, fields);
      const data = verifyData(state, outcome.result, outcome.limits);
      // v2 answers a key's balance with every code but NOT_FOUND; the shared answer carries it
      // apart (`balance`, from the judging node) when credits were not reached.
      if (data.code !== "NOT_FOUND" && data.credits === undefined && outcome.balance !== undefined)
        data.credits = outcome.balance;
      return ok(request, data);
    },
  );
  done();
};
