// Schemas of the keys.* routes (field order = upstream's zod order: validation reports the first
// issue in this order).

import { connectionsPerRecordMax } from "@keyraft/core";
import { Type, type Static } from "@sinclair/typebox";
import {
  countMax,
  durationMsMax,
  emptyObject,
  int,
  meta,
  namedItems,
  nullable,
  responses,
  stringEnum,
  text,
  timestampMsMax,
  optional,
} from "./common.js";

const cost = int(0);
const refill = Type.Object({
  interval: stringEnum(["daily", "monthly"]),
  amount: int(1),
  refillDay: Type.Optional(int(1, 31)),
});

export const verifyKeyBody = Type.Object({
  apiId: Type.Optional(text()),
  key: text(1),
  tags: Type.Optional(Type.Array(text(1, 128), { maxItems: 10 })),
  authorization: Type.Optional(Type.Object({ permissions: Type.Optional(Type.Unknown()) })),
  remaining: Type.Optional(Type.Object({ cost: Type.Optional(cost) })),
  ratelimit: Type.Optional(Type.Object({ cost: Type.Optional(cost) })),
  ratelimits: Type.Optional(
    Type.Array(
      Type.Object({
        name: text(1),
        cost: Type.Optional(cost),
        limit: Type.Optional(int(0)),
        duration: Type.Optional(int(1, durationMsMax)),
      }),
      { maxItems: 32 },
    ),
  ),
});

const optionalString = optional(Type.String());
const optionalInteger = optional(Type.Integer());

/** A list of names the verification result holds read-only (VerifyResult in @keyraft/core). */
const stringList = Type.Unsafe<readonly string[]>(Type.Array(Type.String()));

export const verifyKeyResponse = responses(
  Type.Object({
    keyId: optionalString,
    valid: Type.Boolean(),
    name: optionalString,
    ownerId: optionalString,
    meta: optional(meta),
    expires: optionalInteger,
    ratelimit: optional(Type.Object({ limit: Type.Integer(), remaining: Type.Integer(), reset: Type.Integer() })),
    remaining: optionalInteger,
    code: Type.String(),
    enabled: optional(Type.Boolean()),
    permissions: optional(stringList),
    roles: optional(stringList),
    environment: optionalString,
    identity: optional(Type.Object({ id: Type.String(), externalId: Type.String(), meta })),
    requestId: Type.String(),
  }),
);

const keyRatelimitCreate = Type.Object({
  async: Type.Optional(Type.Boolean()),
  type: Type.Optional(stringEnum(["fast", "consistent"])),
  limit: int(1),
  duration: Type.Optional(int(1000, durationMsMax)),
  refillRate: Type.Optional(int(1)),
  refillInterval: Type.Optional(int(1, durationMsMax)),
});

export const createKeyBody = Type.Object({
  apiId: text(),
  prefix: Type.Optional(text(0, 16)),
  name: Type.Optional(text()),
  byteLength: Type.Optional(int(16, 255)),
  ownerId: Type.Optional(text()),
  externalId: Type.Optional(text()),
  meta: Type.Optional(meta),
  roles: Type.Optional(Type.Array(text(1, 512), { maxItems: connectionsPerRecordMax })),
  permissions: Type.Optional(Type.Array(text(1, 512), { maxItems: connectionsPerRecordMax })),
  expires: Type.Optional(int(0, timestampMsMax)),
  remaining: Type.Optional(int(-countMax)),
  refill: Type.Optional(refill),
  ratelimit: Type.Optional(keyRatelimitCreate),
  enabled: Type.Optional(Type.Boolean()),
  recoverable: Type.Optional(Type.Boolean()),
  environment: Type.Optional(text(0, 256)),
});

export const createKeyResponse = responses(Type.Object({ keyId: Type.String(), key: Type.String() }));

/** Items naming a role or permission by id or name (and slug), optionally creating it. */
export const refItems = (withSlug: boolean, minItems: number) =>
  Type.Array(
    Type.Object({
      id: Type.Optional(text(3)),
      name: Type.Optional(text(1)),
      ...(withSlug ? { slug: Type.Optional(text(1)) } : {}),
      create: Type.Optional(Type.Boolean()),
    }),
    { minItems, maxItems: connectionsPerRecordMax },
  );

export const updateKeyBody = Type.Object({
  keyId: text(),
  name: Type.Optional(nullable(text())),
  ownerId: Type.Optional(nullable(text())),
  externalId: Type.Optional(nullable(text())),
  meta: Type.Optional(nullable(meta)),
  expires: Type.Optional(nullable(int(0, timestampMsMax))),
  ratelimit: Type.Optional(
    nullable(
      Type.Object({
        type: Type.Optional(stringEnum(["fast", "consistent"])),
        async: Type.Optional(Type.Boolean()),
        limit: int(1),
        refillRate: Type.Optional(int(1)),
        refillInterval: Type.Optional(int(1, durationMsMax)),
        duration: Type.Optional(int(1, durationMsMax)),
      }),
    ),
  ),
  remaining: Type.Optional(nullable(int(0))),
  refill: Type.Optional(nullable(refill)),
  enabled: Type.Optional(Type.Boolean()),
  roles: Type.Optional(refItems(false, 0)),
  permissions: Type.Optional(refItems(false, 0)),
});

/** The body of the routes that add, remove or set a key's permissions or roles (the field named by the kind). */
export interface RefsBody {
  keyId: string;
  permissions?: Static<ReturnType<typeof refItems>>;
  roles?: Static<ReturnType<typeof refItems>>;
}

export const setPermissionsBody = Type.Object({ keyId: text(1), permissions: refItems(true, 1) });

export const setRolesBody = Type.Object({ keyId: text(1), roles: refItems(false, 1) });

export const namedItemsResponse = responses(namedItems);
export const emptyResponse = responses(emptyObject);

export const whoamiBody = Type.Object({ key: text(1) });

export const whoamiResponse = responses(
  Type.Object({
    id: Type.String(),
    name: optionalString,
    remaining: optionalInteger,
    identity: optional(Type.Object({ id: Type.String(), externalId: Type.String() })),
    meta: optional(meta),
    createdAt: Type.Integer(),
    enabled: Type.Boolean(),
    environment: optionalString,
  }),
);

export const deleteKeyBody = Type.Object({ keyId: text(1), permanent: Type.Optional(Type.Boolean()) });

export const getKeyQuery = Type.Object({ keyId: text(1), decrypt: Type.Optional(Type.Boolean()) });

export const keyObject = Type.Object({
  id: Type.String(),
  start: Type.String(),
  workspaceId: Type.String(),
  apiId: optionalString,
  name: optionalString,
  ownerId: optionalString,
  meta: optional(meta),
  createdAt: Type.Integer(),
  updatedAt: optionalInteger,
  expires: optionalInteger,
  remaining: optionalInteger,
  refill: optional(
    Type.Object({
      interval: Type.String(),
      amount: Type.Integer(),
      refillDay: optional(nullable(Type.Integer())),
      lastRefillAt: optionalInteger,
    }),
  ),
  ratelimit: optional(
    Type.Object({
      async: Type.Boolean(),
      limit: Type.Integer(),
      duration: Type.Integer(),
      refillRate: optionalInteger,
      refillInterval: optionalInteger,
    }),
  ),
  roles: optional(Type.Array(Type.String())),
  permissions: optional(Type.Array(Type.String())),
  enabled: optional(Type.Boolean()),
  identity: optional(Type.Object({ id: Type.String(), externalId: Type.String(), meta: optional(meta) })),
});

export const keyResponse = responses(keyObject);

export const updateRemainingBody = Type.Object({
  keyId: text(1),
  op: stringEnum(["increment", "decrement", "set"]),
  value: nullable(int(0)),
});

export const updateRemainingResponse = responses(Type.Object({ remaining: nullable(Type.Integer()) }));
