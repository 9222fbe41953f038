// The v2 `Key` object (getKey, whoami, listKeys items): the stored key in v2's field names, with
// optional fields omitted when unset or empty (docs/api-v2.md has the v1↔v2 mapping).

import { keyDerived, type KeyRecord, type KeyState } from "@keyraft/core";
import { Type, type Static } from "@sinclair/typebox";
import type { ShownCredits } from "../../counters/credits/shown-credits.js";
import { CreditsResponse, creditsView } from "./credits.js";
import { IdentityResponse, identityView, MetaObject, metaView } from "./identity.js";
import { RatelimitResponse, ratelimitViews } from "./ratelimits.js";

export const KeyResponse = Type.Object({
  keyId: Type.String(),
  start: Type.String(),
  enabled: Type.Boolean(),
  createdAt: Type.Integer(),
  name: Type.Optional(Type.String()),
  meta: Type.Optional(MetaObject),
  updatedAt: Type.Optional(Type.Integer()),
  expires: Type.Optional(Type.Integer()),
  permissions: Type.Optional(Type.Array(Type.String())),
  roles: Type.Optional(Type.Array(Type.String())),
  credits: Type.Optional(CreditsResponse),
  identity: Type.Optional(IdentityResponse),
  ratelimits: Type.Optional(Type.Array(RatelimitResponse)),
});
export type KeyResponse = Static<typeof KeyResponse>;

export function keyView(state: KeyState, key: KeyRecord, nowMs: number, shown?: ShownCredits): KeyResponse {
  const derived = keyDerived(state, key);
  const view: KeyResponse = { keyId: key.id, start: key.start, enabled: key.enabled, createdAt: key.createdAtMs };
  if (key.name !== null && key.name !== "") view.name = key.name;
  const meta = metaView(key.meta);
  if (meta !== undefined) view.meta = meta;
  if (key.updatedAtMs !== null) view.updatedAt = key.updatedAtMs;
  if (key.expiresAtMs !== null) view.expires = key.expiresAtMs;
  if (derived.permissions.length > 0) view.permissions = [...derived.permissions];
  if (derived.roles.length > 0) view.roles = [...derived.roles];
  const credits = creditsView(key, nowMs, shown);
  if (credits !== undefined) view.credits = credits;
  const identity = key.identityId === null ? undefined : state.identities.get(key.identityId);
  if (identity !== undefined) view.identity = identityView(identity);
  if (key.ratelimits.length > 0) view.ratelimits = ratelimitViews(key.id, key.ratelimits);
  return view;
}
