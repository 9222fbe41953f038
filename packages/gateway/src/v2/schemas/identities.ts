// Schemas of the v2 identities.* routes and of rate-limit definitions (docs/api-v2.md).

import { Type } from "@sinclair/typebox";
import { Closed } from "../validation.js";
import { PageLimit } from "./common.js";

/** Named rate limits one request may define (upstream's bound; the key state holds fewer, see ratelimitsPerRecordMax). */
export const ratelimitsPerRequestMax = 50;

/** A rate-limit definition in a request (keys and identities). */
export const RatelimitRequest = Type.Object({
  name: Type.String({ minLength: 3, maxLength: 128 }),
  limit: Type.Integer({ minimum: 1 }),
  duration: Type.Integer({ minimum: 1000 }),
  autoApply: Type.Boolean({ default: false }),
});

export const RatelimitResponse = Type.Object({
  id: Type.String(),
  name: Type.String(),
  limit: Type.Integer(),
  duration: Type.Integer(),
  autoApply: Type.Boolean(),
});

const ExternalId = Type.String({ minLength: 1, maxLength: 255, pattern: "^[a-zA-Z0-9_.-]+$" });
const Meta = Type.Object({}, { additionalProperties: true, maxProperties: 100 });
const Ratelimits = Type.Array(RatelimitRequest, { maxItems: ratelimitsPerRequestMax });
const IdentityRef = Type.String({ minLength: 1, maxLength: 255 });

/** Not closed: upstream accepts unknown fields here. */
export const CreateIdentityBody = Type.Object({
  externalId: ExternalId,
  meta: Type.Optional(Meta),
  ratelimits: Type.Optional(Ratelimits),
});
export const IdentityRefBody = Closed({ identity: IdentityRef });
export const ListIdentitiesBody = Closed({
  limit: PageLimit(100),
  cursor: Type.Optional(Type.String({ maxLength: 1024 })),
  search: Type.Optional(Type.String({ maxLength: 256 })),
});
export const UpdateIdentityBody = Closed({
  identity: IdentityRef,
  meta: Type.Optional(Meta),
  ratelimits: Type.Optional(Ratelimits),
});

export const Identity = Type.Object({
  id: Type.String(),
  externalId: Type.String(),
  meta: Type.Optional(Type.Object({}, { additionalProperties: true })),
  ratelimits: Type.Optional(Type.Array(RatelimitResponse)),
});
