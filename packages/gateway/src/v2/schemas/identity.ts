// The v2 `Identity` object (also inside keys and verifications).

import type { IdentityRecord, JsonObject } from "@keyraft/core";
import { Type, type Static } from "@sinclair/typebox";
import { RatelimitResponse, ratelimitViews } from "./ratelimits.js";

export const MetaObject = Type.Record(Type.String(), Type.Unknown());

export const IdentityResponse = Type.Object({
  id: Type.String(),
  externalId: Type.String(),
  meta: Type.Optional(MetaObject),
  ratelimits: Type.Optional(Type.Array(RatelimitResponse)),
});
export type IdentityResponse = Static<typeof IdentityResponse>;

/** `meta` as v2 shows it: omitted when absent or empty. */
export function metaView(meta: JsonObject | null): JsonObject | undefined {
  return meta === null || Object.keys(meta).length === 0 ? undefined : meta;
}

export function identityView(identity: IdentityRecord): IdentityResponse {
  const view: IdentityResponse = { id: identity.id, externalId: identity.externalId };
  const meta = metaView(identity.meta);
  if (meta !== undefined) view.meta = meta;
  if (identity.ratelimits.length > 0) view.ratelimits = ratelimitViews(identity.id, identity.ratelimits);
  return view;
}
