// Schemas of migrations.createKeys and migrations.enqueueKeys.

import { connectionsPerRecordMax, importKeysMax } from "@keyraft/core";
import { Type } from "@sinclair/typebox";
import {
  countMax,
  durationMsMax,
  emptyObject,
  int,
  meta,
  responses,
  stringEnum,
  text,
  timestampMsMax,
} from "./common.js";

const migratedKeyFields = {
  prefix: Type.Optional(text(0, 16)),
  name: Type.Optional(text()),
  plaintext: Type.Optional(text(1)),
  hash: Type.Optional(Type.Object({ value: text(1, 128), variant: stringEnum(["sha256_base64"]) })),
  start: Type.Optional(text(0, 64)),
  ownerId: Type.Optional(text()),
  externalId: Type.Optional(text()),
  meta: Type.Optional(meta),
  roles: Type.Optional(Type.Array(text(1, 512), { maxItems: connectionsPerRecordMax })),
  permissions: Type.Optional(Type.Array(text(1, 512), { maxItems: connectionsPerRecordMax })),
  expires: Type.Optional(int(0, timestampMsMax)),
  remaining: Type.Optional(int(-countMax)),
  refill: Type.Optional(
    Type.Object({ interval: stringEnum(["daily", "monthly"]), amount: int(1), refillDay: Type.Optional(int(1, 31)) }),
  ),
  ratelimit: Type.Optional(
    Type.Object({
      async: Type.Optional(Type.Boolean()),
      type: Type.Optional(stringEnum(["fast", "consistent"])),
      limit: int(1),
      duration: Type.Optional(int(1000, durationMsMax)),
      refillRate: Type.Optional(int(1)),
      refillInterval: Type.Optional(int(1, durationMsMax)),
    }),
  ),
  enabled: Type.Optional(Type.Boolean()),
  environment: Type.Optional(text(0, 256)),
};

export const migratedKey = Type.Object({ apiId: text(1), ...migratedKeyFields });

export const createKeysBody = Type.Array(migratedKey, { minItems: 1, maxItems: importKeysMax });

export const createKeysResponse = responses(Type.Object({ keyIds: Type.Array(Type.String()) }));

export const enqueueKeysBody = Type.Object({
  migrationId: text(1),
  apiId: text(1),
  keys: Type.Array(Type.Object(migratedKeyFields), { minItems: 1, maxItems: importKeysMax }),
});

export const enqueueKeysResponse = { 202: emptyObject, ...responses(emptyObject) };
