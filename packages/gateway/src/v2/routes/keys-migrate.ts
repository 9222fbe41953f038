// keys.migrateKeys: imports existing keys by their hash under a migration the deployment
// declares (KEYRAFT_KEY_MIGRATIONS). All items are one command; a hash already stored or repeated
// in the request is reported in `failed` and the others are imported. Missing identities,
// permissions and roles are created.

import { importKeysMax, type ImportedKey } from "@keyraft/core";
import { Type } from "@sinclair/typebox";
import { anyOf, requirePermissions } from "../auth.js";
import { Envelope, ok, v2Responses } from "../envelope.js";
import { checkMetaV2, identityLinkV2, requireRootAdmin } from "../keys-common.js";
import { principalOf, type V2RoutePlugin } from "../route.js";
import { V2Error, invalidInput } from "../problem.js";
import { CreditsRequest, creditsInput } from "../schemas/credits.js";
import {
  Expires,
  ExternalId,
  KeyName,
  MetaRequest,
  PermissionSlugs,
  Ratelimits,
  RoleNames,
} from "../schemas/keys-request.js";
import { duplicateName, ratelimitInputs } from "../schemas/ratelimits.js";
import { submitV2 } from "../submit.js";
import { Closed } from "../validation.js";

const MigrateKeyItem = Closed({
  hash: Type.String({ minLength: 3, maxLength: 512 }),
  name: Type.Optional(KeyName),
  externalId: Type.Optional(ExternalId),
  meta: Type.Optional(MetaRequest),
  roles: Type.Optional(RoleNames),
  permissions: Type.Optional(PermissionSlugs),
  expires: Type.Optional(Expires),
  enabled: Type.Optional(Type.Boolean({ default: true })),
  credits: Type.Optional(CreditsRequest),
  ratelimits: Type.Optional(Ratelimits),
});

const MigrateKeysBody = Closed({
  migrationId: Type.String({ minLength: 3, maxLength: 255 }),
  apiId: Type.String({ minLength: 3, maxLength: 255 }),
  keys: Type.Array(MigrateKeyItem, { minItems: 1, maxItems: importKeysMax }),
});

const MigrateKeysData = Type.Object({
  migrated: Type.Array(Type.Object({ hash: Type.String(), keyId: Type.String() })),
  failed: Type.Array(Type.String()),
});

export const keyMigrateRoutes: V2RoutePlugin = (app, ctx, done) => {
  const deps = ctx;

  app.post(
    "/keys.migrateKeys",
    { schema: { body: MigrateKeysBody, response: v2Responses(Envelope(MigrateKeysData)) } },
    async (request) => {
      const { migrationId, apiId, keys } = request.body;
      const principal = principalOf(request);
      requirePermissions(principal, anyOf("api.*.create_key", `api.${apiId}.create_key`));
      if (!deps.state.apis.has(apiId)) {
        throw new V2Error("api_not_found", "The requested API does not exist or has been deleted.");
      }
      requireRootAdmin(principal, apiId);
      const algorithm = deps.keyMigrations?.get(migrationId);
      if (algorithm === undefined) {
        throw new V2Error("migration_not_found", "The requested Migration does not exist or has been deleted.");
      }
      const entries: ImportedKey[] = keys.map((item, index) => {
        const location = `body/keys/${index}`;
        const credits = creditsInput(item.credits, `${location}/credits`);
        const duplicate = duplicateName(item.ratelimits ?? []);
        if (duplicate !== undefined) {
          throw invalidInput(`Ratelimit with name '${duplicate}' is already defined in the request`, location);
        }
        checkMetaV2(item.meta, `${location}/meta`);
        const entry: ImportedKey = {
          keyId: ctx.ids.next("key"),
          apiId,
          hash: item.hash,
          start: "",
          name: item.name ?? null,
          ownerId: item.externalId ?? null,
          identity:
            item.externalId === undefined
              ? null
              : identityLinkV2(deps.state, principal, item.externalId, ctx.ids.next("id")),
          meta: item.meta ?? null,
          expiresAtMs: item.expires ?? null,
          remaining: credits.remaining,
          refill: credits.refill,
          ratelimit: null,
          ratelimits: ratelimitInputs(item.ratelimits ?? []),
          enabled: item.enabled ?? true,
          environment: null,
          permissions: [...new Set(item.permissions ?? [])].map((slug) => ({
            name: slug,
            newId: ctx.ids.next("perm"),
            create: true,
          })),
          roles: [...new Set(item.roles ?? [])].map((name) => ({ name, newId: ctx.ids.next("role"), create: true })),
        };
        // Keys in keyraft's own hash form verify directly; the others wait for their first verification.
        if (algorithm !== "sha256") entry.migrationId = migrationId;
        return entry;
      });
      const outcome = await submitV2(
        ctx,
        request,
        {
          type: "importKeys",
          keys: entries,
          skipExistingHashes: true,
          zeroRemainingAllowed: true,
          allowCreatePermissions: true,
          allowCreateRoles: true,
          nowMs: deps.nowMs(),
        },
        { notFound: "api_not_found" },
      );
      const imported = new Set(outcome.ids ?? []);
      return ok(request, {
        migrated: entries
          .filter((entry) => imported.has(entry.keyId))
          .map((entry) => ({ hash: entry.hash, keyId: entry.keyId })),
        failed: outcome.skipped ?? [],
      });
    },
  );
  done();
};
