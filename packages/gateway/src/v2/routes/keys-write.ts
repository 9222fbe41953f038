// keys.updateKey, keys.updateCredits, keys.deleteKey. updateKey's fields are three-state: absent
// = unchanged, null = cleared, a value = set; all given fields apply in one command or none.

import type { KeyCommand } from "@keyraft/core";
import { Type, type Static } from "@sinclair/typebox";
import { countMax } from "../../schemas/common.js";
import { anyOf, requirePermissions } from "../auth.js";
import { EmptyData, Envelope, ok, v2Responses } from "../envelope.js";
import {
  checkMetaV2,
  identityLinkV2,
  keyNotFound,
  liveKey,
  permissionRefs,
  requireRolesExist,
  requireRootAdmin,
  roleNotFoundOf,
  roleRefs,
} from "../keys-common.js";
import { principalOf, type V2RoutePlugin } from "../route.js";
import { invalidInput } from "../problem.js";
import { KeyId } from "../schemas/common.js";
import { CreditsResponse, RefillRequest, creditsView, refillInput } from "../schemas/credits.js";
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

const nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()]);

const UpdateCreditsData = Closed({
  remaining: Type.Optional(nullable(Type.Integer({ minimum: 0, maximum: countMax }))),
  refill: Type.Optional(nullable(RefillRequest)),
});

const UpdateKeyBody = Closed({
  keyId: KeyId,
  name: Type.Optional(nullable(KeyName)),
  externalId: Type.Optional(nullable(ExternalId)),
  meta: Type.Optional(nullable(MetaRequest)),
  expires: Type.Optional(nullable(Expires)),
  credits: Type.Optional(nullable(UpdateCreditsData)),
  ratelimits: Type.Optional(Ratelimits),
  enabled: Type.Optional(Type.Boolean()),
  roles: Type.Optional(RoleNames),
  permissions: Type.Optional(PermissionSlugs),
});
type UpdateKeyBody = Static<typeof UpdateKeyBody>;

const UpdateCreditsBody = Closed({
  keyId: Type.String({ minLength: 3, maxLength: 255 }),
  operation: Type.Union([Type.Literal("set"), Type.Literal("increment"), Type.Literal("decrement")]),
  value: Type.Optional(nullable(Type.Integer({ minimum: 0, maximum: countMax }))),
});

const DeleteKeyBody = Closed({ keyId: KeyId, permanent: Type.Optional(Type.Boolean({ default: false })) });

type UpdateKeyCommand = Extract<KeyCommand, { type: "updateKey" }>;

/** The credit fields of updateKey as the command's `remaining`/`refill` (null clears both). */
function creditFields(credits: UpdateKeyBody["credits"]): Pick<UpdateKeyCommand, "remaining" | "refill"> {
  if (credits === undefined) return {};
  if (credits === null) return { remaining: null, refill: null };
  // Unlimited with a refill: stored, it fills the balance at its next instant (docs/api-v2.md).
  if (credits.remaining === null && (credits.refill === undefined || credits.refill === null))
    return { remaining: null, refill: null };
  const fields: Pick<UpdateKeyCommand, "remaining" | "refill"> = {};
  if (credits.remaining !== undefined) fields.remaining = credits.remaining;
  if (credits.refill === null) fields.refill = null;
  else if (credits.refill !== undefined) {
    if (credits.refill.interval === "daily" && credits.refill.refillDay !== undefined) {
      throw invalidInput(
        "`refillDay` must not be provided when the refill interval is `daily`.",
        "body/credits/refill",
      );
    }
    fields.refill = refillInput(credits.refill, "body/credits/refill");
  }
  return fields;
}

export const keyWriteRoutes: V2RoutePlugin = (app, ctx, done) => {
  const deps = ctx;
  const updatePermission = (apiId: string) => anyOf("api.*.update_key", `api.${apiId}.update_key`);

  app.post(
    "/keys.updateKey",
    { schema: { body: UpdateKeyBody, response: v2Responses(Envelope(EmptyData)) } },
    async (request) => {
      const body = request.body;
      const principal = principalOf(request);
      const key = liveKey(deps.state, body.keyId);
      requirePermissions(principal, updatePermission(key.apiId));
      requireRootAdmin(principal, key.apiId);
      const command: UpdateKeyCommand = { type: "updateKey", keyId: key.id, nowMs: deps.nowMs() };
      if (body.name !== undefined) command.name = body.name;
      if (body.externalId !== undefined) {
        command.identity =
          body.externalId === null ? null : identityLinkV2(deps.state, principal, body.externalId, ctx.ids.next("id"));
      }
      if (body.meta !== undefined) {
        checkMetaV2(body.meta);
        command.meta = body.meta;
      }
      if (body.expires !== undefined) command.expiresAtMs = body.expires;
      Object.assign(command, creditFields(body.credits));
      if (body.ratelimits !== undefined) {
        const duplicate = duplicateName(body.ratelimits);
        if (duplicate !== undefined) {
          throw invalidInput(`Ratelimit with name '${duplicate}' is already defined in the request`, "body/ratelimits");
        }
        command.ratelimits = ratelimitInputs(body.ratelimits);
      }
      if (body.enabled !== undefined) command.enabled = body.enabled;
      if (body.roles !== undefined) {
        requireRolesExist(deps.state, body.roles);
        command.roles = { refs: roleRefs(ctx, body.roles), allowCreate: false };
      }
      if (body.permissions !== undefined) {
        command.permissions = { refs: permissionRefs(ctx, body.permissions), allowCreate: true };
      }
      await submitV2(ctx, request, command, { translate: (error) => roleNotFoundOf(error.message) });
      return ok(request, {});
    },
  );

  app.post(
    "/keys.updateCredits",
    { schema: { body: UpdateCreditsBody, response: v2Responses(Envelope(CreditsResponse)) } },
    async (request) => {
      const { keyId, operation, value } = request.body;
      const principal = principalOf(request);
      const key = liveKey(deps.state, keyId);
      requirePermissions(principal, updatePermission(key.apiId));
      requireRootAdmin(principal, key.apiId);
      const nowMs = deps.nowMs();
      if (operation === "set" && (value === undefined || value === null)) {
        // Unlimited; a refill stays and fills the balance again at its next instant.
        await submitV2(ctx, request, { type: "updateKey", keyId, nowMs, remaining: null });
      } else {
        if (value === undefined || value === null) {
          throw invalidInput(
            "When specifying an increment or decrement operation, a value must be provided.",
            "body/value",
          );
        }
        if (operation !== "set" && key.remaining === null) {
          throw invalidInput("You cannot increment or decrement a key with unlimited credits.", "body/operation");
        }
        await submitV2(ctx, request, { type: "updateRemaining", keyId, op: operation, value, nowMs });
      }
      const updated = deps.state.keys.get(keyId);
      if (updated === undefined) throw keyNotFound();
      return ok(request, creditsView(updated, nowMs, deps.creditLeases?.shown) ?? { remaining: null });
    },
  );

  app.post(
    "/keys.deleteKey",
    { schema: { body: DeleteKeyBody, response: v2Responses(Envelope(EmptyData)) } },
    async (request) => {
      const principal = principalOf(request);
      const key = liveKey(deps.state, request.body.keyId);
      requirePermissions(principal, anyOf("api.*.delete_key", `api.${key.apiId}.delete_key`));
      requireRootAdmin(principal, key.apiId);
      // keyraft deletes for good either way (`permanent` only chose upstream's soft delete).
      await submitV2(ctx, request, { type: "deleteKey", keyId: key.id });
      return ok(request, {});
    },
  );
  done();
};
