// Schemas of identities.* (field order = upstream's zod order).

import { ratelimitsPerRecordMax } from "@keyraft/core";
import { Type } from "@sinclair/typebox";
import { durationMsMax, emptyObject, int, meta, pageLimitDefault, responses, text, optional } from "./common.js";

const ratelimits = Type.Array(Type.Object({ name: text(1), limit: int(1), duration: int(1000, durationMsMax) }), {
  maxItems: ratelimitsPerRecordMax,
});

const ratelimitsView = Type.Array(
  Type.Object({ name: Type.String(), limit: Type.Integer(), duration: Type.Integer() }),
);

export const createIdentityBody = Type.Object({
  externalId: text(3),
  meta: Type.Optional(meta),
  ratelimits: Type.Optional(ratelimits),
});

export const createIdentityResponse = responses(Type.Object({ identityId: Type.String() }));

export const getIdentityQuery = Type.Object({
  identityId: Type.Optional(text(1)),
  externalId: Type.Optional(text(1)),
});

const identityView = Type.Object({ id: Type.String(), externalId: Type.String(), meta, ratelimits: ratelimitsView });

export const identityResponse = responses(identityView);

export const listIdentitiesQuery = Type.Object({
  environment: Type.Optional(text(1, undefined, { default: "default" })),
  limit: Type.Optional(int(1, 100, { default: pageLimitDefault })),
  cursor: Type.Optional(text()),
});

export const listIdentitiesResponse = responses(
  Type.Object({
    identities: Type.Array(Type.Object({ id: Type.String(), externalId: Type.String(), ratelimits: ratelimitsView })),
    cursor: optional(Type.String()),
    total: Type.Integer(),
  }),
);

export const updateIdentityBody = Type.Object({
  identityId: Type.Optional(text(1)),
  externalId: Type.Optional(text(1)),
  environment: Type.Optional(text(1, undefined, { default: "default" })),
  meta: Type.Optional(meta),
  ratelimits: Type.Optional(ratelimits),
});

export const deleteIdentityBody = Type.Object({ identityId: text(1) });
export const identityEmptyResponse = responses(emptyObject);
