// keys.verifyKey's request and answer, and the translation of the one verification path's
// (v1-shaped) answer into v2's `data`.

import type { AppliedLimit, KeyState, VerifyResult } from "@keyraft/core";
import { Type, type Static } from "@sinclair/typebox";
import { countMax, durationMsMax } from "../../schemas/common.js";
import { Closed } from "../validation.js";
import { IdentityResponse, MetaObject, metaView, identityView } from "./identity.js";

export const VerifyKeyBody = Closed({
  key: Type.String({ minLength: 1, maxLength: 512 }),
  tags: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 512 }), { maxItems: 20 })),
  permissions: Type.Optional(Type.String({ minLength: 1, maxLength: 1000 })),
  credits: Type.Optional(Closed({ cost: Type.Integer({ minimum: 0, maximum: countMax }) })),
  ratelimits: Type.Optional(
    Type.Array(
      Closed({
        name: Type.String({ minLength: 3, maxLength: 255 }),
        cost: Type.Optional(Type.Integer({ minimum: 0, maximum: countMax })),
        limit: Type.Optional(Type.Integer({ minimum: 0, maximum: countMax })),
        duration: Type.Optional(Type.Integer({ minimum: 0, maximum: durationMsMax })),
      }),
      { maxItems: 32 },
    ),
  ),
  migrationId: Type.Optional(Type.String({ maxLength: 256 })),
});
export type VerifyKeyBody = Static<typeof VerifyKeyBody>;

const VerifyRatelimit = Type.Object({
  exceeded: Type.Boolean(),
  id: Type.String(),
  name: Type.String(),
  limit: Type.Integer(),
  duration: Type.Integer(),
  reset: Type.Integer(),
  remaining: Type.Integer(),
  autoApply: Type.Boolean(),
});

export const VerifyKeyData = Type.Object({
  valid: Type.Boolean(),
  code: Type.String(),
  keyId: Type.Optional(Type.String()),
  name: Type.Optional(Type.String()),
  meta: Type.Optional(MetaObject),
  expires: Type.Optional(Type.Integer()),
  credits: Type.Optional(Type.Integer()),
  enabled: Type.Optional(Type.Boolean()),
  permissions: Type.Optional(Type.Array(Type.String())),
  roles: Type.Optional(Type.Array(Type.String())),
  identity: Type.Optional(IdentityResponse),
  ratelimits: Type.Optional(Type.Array(VerifyRatelimit)),
});
export type VerifyKeyData = Static<typeof VerifyKeyData>;

/** The answer for a key that is unknown, deleted or not verifiable by this root key. */
export const notFoundData = (): VerifyKeyData => ({ valid: false, code: "NOT_FOUND" });

/** v2's `data` of a verification the shared path answered (`limits`: every limit it checked). */
export function verifyData(
  state: KeyState,
  result: VerifyResult,
  limits: readonly AppliedLimit[] | undefined,
): VerifyKeyData {
  if (result.keyId === undefined || result.code === "NOT_FOUND") return notFoundData();
  const data: VerifyKeyData = { valid: result.valid, code: result.code, keyId: result.keyId };
  if (result.name !== undefined && result.name !== "") data.name = result.name;
  const meta = metaView(result.meta === undefined ? null : result.meta);
  if (meta !== undefined) data.meta = meta;
  if (result.expires !== undefined) data.expires = result.expires;
  if (result.remaining !== undefined) data.credits = result.remaining;
  if (result.enabled !== undefined) data.enabled = result.enabled;
  if (result.permissions !== undefined && result.permissions.length > 0) data.permissions = [...result.permissions];
  if (result.roles !== undefined && result.roles.length > 0) data.roles = [...result.roles];
  if (result.identity !== undefined) {
    const identity = state.identities.get(result.identity.id);
    data.identity =
      identity === undefined
        ? { id: result.identity.id, externalId: result.identity.externalId }
        : identityView(identity);
  }
  if (limits !== undefined && limits.length > 0) {
    data.ratelimits = limits.map((limit) => ({
      exceeded: !limit.outcome.success,
      id: limit.id,
      name: limit.name,
      limit: limit.limit,
      duration: limit.durationMs,
      reset: limit.outcome.resetAtMs,
      remaining: limit.outcome.remaining,
      autoApply: limit.autoApply,
    }));
  }
  return data;
}
