// Schemas of the v2 identities.* requests (docs/api-v2.md); the Identity object is in identity.ts.

import { Type } from "@sinclair/typebox";
import { Closed } from "../validation.js";
import { PageLimit } from "./common.js";
import { RatelimitRequest, ratelimitsPerRequestMax } from "./ratelimits.js";

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
