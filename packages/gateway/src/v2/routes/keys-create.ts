// keys.createKey and keys.rerollKey: the two routes that make a secret. The secret is returned
// once and only its SHA-256 is stored.

import { keyStart, newKeySecret, rerollGraceEndMs } from "@keyraft/core";
import { Type } from "@sinclair/typebox";
import { hashKey } from "../../auth/hash.js";
import { anyOf, holdsAny, requirePermissions } from "../auth.js";
import { Envelope, ok, v2Responses } from "../envelope.js";
import {
  checkMetaV2,
  identityLinkV2,
  liveKey,
  permissionRefs,
  requireRolesExist,
  requireRootAdmin,
  roleNotFoundOf,
  roleRefs,
} from "../keys-common.js";
import { principalOf, type V2RoutePlugin } from "../route.js";
import { V2Error, invalidInput } from "../problem.js";
import { ApiIdCreate, expiresMsMax, KeyId } from "../schemas/common.js";
import { CreditsRequest, creditsInput } from "../schemas/credits.js";
import {
  ByteLength,
  Expires,
  ExternalId,
  KeyName,
  MetaRequest,
  PermissionSlugs,
  Prefix,
  Ratelimits,
  RoleNames,
} from "../schemas/keys-request.js";
import { duplicateName, ratelimitInputs } from "../schemas/ratelimits.js";
import { submitV2 } from "../submit.js";
import { Closed } from "../validation.js";

const CreateKeyBody = Closed({
  apiId: ApiIdCreate,
  prefix: Type.Optional(Prefix),
  name: Type.Optional(KeyName),
  byteLength: Type.Optional(ByteLength),
  externalId: Type.Optional(ExternalId),
  meta: Type.Optional(MetaRequest),
  roles: Type.Optional(RoleNames),
  permissions: Type.Optional(PermissionSlugs),
  expires: Type.Optional(Expires),
  credits: Type.Optional(CreditsRequest),
  ratelimits: Type.Optional(Ratelimits),
  enabled: Type.Optional(Type.Boolean({ default: true })),
  recoverable: Type.Optional(Type.Boolean({ default: false })),
});

// Upstream leaves this body open (unknown fields are ignored).
const RerollKeyBody = Type.Object({
  keyId: KeyId,
  expiration: Type.Integer({ minimum: 0, maximum: expiresMsMax }),
});

const CreatedKey = Envelope(Type.Object({ keyId: Type.String(), key: Type.String() }));

/** keyraft stores no recoverable (encrypted) copies of keys. */
const vaultMissing = () => new V2Error("precondition_failed", "Vault hasn't been set up.");

export const keyCreateRoutes: V2RoutePlugin = (app, ctx, done) => {
  const deps = ctx;

  app.post(
    "/keys.createKey",
    { schema: { body: CreateKeyBody, response: v2Responses(CreatedKey) } },
    async (request) => {
      const body = request.body;
      const principal = principalOf(request);
      // A missing api and a missing permission answer alike (upstream hides the api's existence).
      const apiMissing = new V2Error("api_not_found", "The specified API was not found.");
      if (!deps.state.apis.has(body.apiId)) throw apiMissing;
      if (!holdsAny(principal, "api.*.create_key", `api.${body.apiId}.create_key`)) throw apiMissing;
      requireRootAdmin(principal, body.apiId);
      if (body.recoverable === true) throw vaultMissing();
      const credits = creditsInput(body.credits, "body/credits");
      const duplicate = duplicateName(body.ratelimits ?? []);
      if (duplicate !== undefined) {
        throw invalidInput(`Ratelimit with name '${duplicate}' is already defined in the request`, "body/ratelimits");
      }
      checkMetaV2(body.meta);
      requireRolesExist(deps.state, body.roles ?? []);
      const secret = newKeySecret(body.prefix, deps.randomBytes(body.byteLength ?? 16));
      const externalId = body.externalId;
      const outcome = await submitV2(
        ctx,
        request,
        {
          type: "createKey",
          keyId: ctx.ids.next("key"),
          apiId: body.apiId,
          hash: hashKey(secret),
          start: keyStart(secret, body.prefix),
          name: body.name ?? null,
          ownerId: externalId ?? null,
          identity:
            externalId === undefined ? null : identityLinkV2(deps.state, principal, externalId, ctx.ids.next("id")),
          meta: body.meta ?? null,
          expiresAtMs: body.expires ?? null,
          remaining: credits.remaining,
          refill: credits.refill,
          ratelimit: null,
          ratelimits: ratelimitInputs(body.ratelimits ?? []),
          zeroRemainingAllowed: true,
          enabled: body.enabled ?? true,
          environment: null,
          permissions: permissionRefs(ctx, body.permissions ?? []),
          roles: roleRefs(ctx, body.roles ?? []),
          allowCreatePermissions: true,
          allowCreateRoles: false,
          nowMs: deps.nowMs(),
        },
        { notFound: "api_not_found", translate: (error) => roleNotFoundOf(error.message) },
      );
      return ok(request, { keyId: outcome.id ?? "", key: secret });
    },
  );

  app.post(
    "/keys.rerollKey",
    { schema: { body: RerollKeyBody, response: v2Responses(CreatedKey) } },
    async (request) => {
      const { keyId, expiration } = request.body;
      const principal = principalOf(request);
      const old = liveKey(deps.state, keyId);
      requirePermissions(principal, anyOf("api.*.create_key", `api.${old.apiId}.create_key`));
      requireRootAdmin(principal, old.apiId);
      // The new secret keeps the old one's prefix (the part of `start` before its first `_`).
      const underscore = old.start.indexOf("_");
      const prefix = underscore > 0 ? old.start.slice(0, underscore) : undefined;
      const secret = newKeySecret(prefix, deps.randomBytes(16));
      const nowMs = deps.nowMs();
      const outcome = await submitV2(ctx, request, {
        type: "rerollKey",
        keyId,
        newKeyId: ctx.ids.next("key"),
        hash: hashKey(secret),
        start: keyStart(secret, prefix),
        oldExpiresAtMs: rerollGraceEndMs(nowMs, expiration),
        nowMs,
      });
      return ok(request, { keyId: outcome.id ?? "", key: secret });
    },
  );
  done();
};
