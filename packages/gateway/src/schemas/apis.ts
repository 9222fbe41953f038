import { Type } from "@sinclair/typebox";
import { int, nullable, pageLimitDefault, responses, text, optional } from "./common.js";
import { keyObject } from "./keys.js";

export const createApiBody = Type.Object({ name: text(3) });

export const createApiResponse = responses(Type.Object({ apiId: Type.String(), name: optional(Type.String()) }));

export const getApiQuery = Type.Object({ apiId: text(1) });

export const getApiResponse = responses(
  Type.Object({ id: Type.String(), workspaceId: Type.String(), name: optional(Type.String()) }),
);

export const livenessResponse = responses(
  Type.Object({
    status: Type.String(),
    services: Type.Object({
      metrics: Type.String(),
      logger: Type.String(),
      ratelimit: Type.String(),
      usagelimit: Type.String(),
    }),
  }),
);

export const deleteApiBody = Type.Object({ apiId: text(1) });

export const listKeysQuery = Type.Object({
  apiId: text(1),
  limit: Type.Optional(int(1, 100, { default: pageLimitDefault })),
  cursor: Type.Optional(text()),
  ownerId: Type.Optional(text(1)),
  externalId: Type.Optional(text(1)),
  decrypt: Type.Optional(nullable(Type.Boolean())),
  revalidateKeysCache: Type.Optional(nullable(Type.Boolean())),
});

export const legacyListKeysParams = Type.Object({ apiId: text(1) });

export const legacyListKeysQuery = Type.Object({
  limit: Type.Optional(int(1, 100, { default: pageLimitDefault })),
  offset: Type.Optional(int(0, 10_000_000, { default: 0 })),
  ownerId: Type.Optional(text(1)),
});

export const listKeysResponse = responses(
  Type.Object({ keys: Type.Array(keyObject), cursor: optional(Type.String()), total: Type.Integer() }),
);

export const deleteKeysBody = Type.Object({ apiId: text(1), permanent: Type.Optional(Type.Boolean()) });

export const deleteKeysResponse = responses(Type.Object({ deletedKeys: Type.Integer() }));
