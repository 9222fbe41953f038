// Schemas of migrations.createKeys and migrations.enqueueKeys.

import { connectionsPerRecordMax, importKeysMax } from "@keyraft/core";
import { countMax, durationMsMax, emptyObject, int, meta, responses, text, timestampMsMax } from "./common.js";

const migratedKeyFields = {
  prefix: text(0, 16),
  name: text(),
  plaintext: text(1),
  hash: {
    type: "object",
    properties: { value: text(1, 128), variant: { type: "string", enum: ["sha256_base64"] } },
    required: ["value", "variant"],
  },
  start: text(0, 64),
  ownerId: text(),
  externalId: text(),
  meta,
  roles: { type: "array", maxItems: connectionsPerRecordMax, items: text(1, 512) },
  permissions: { type: "array", maxItems: connectionsPerRecordMax, items: text(1, 512) },
  expires: int(0, timestampMsMax),
  remaining: int(-countMax),
  refill: {
    type: "object",
    properties: { interval: { type: "string", enum: ["daily", "monthly"] }, amount: int(1), refillDay: int(1, 31) },
    required: ["interval", "amount"],
  },
  ratelimit: {
    type: "object",
    properties: {
      async: { type: "boolean" },
      type: { type: "string", enum: ["fast", "consistent"] },
      limit: int(1),
      duration: int(1000, durationMsMax),
      refillRate: int(1),
      refillInterval: int(1, durationMsMax),
    },
    required: ["limit"],
  },
  enabled: { type: "boolean" },
  environment: text(0, 256),
} as const;

export const createKeysBody = {
  type: "array",
  minItems: 1,
  maxItems: importKeysMax,
  items: { type: "object", properties: { apiId: text(1), ...migratedKeyFields }, required: ["apiId"] },
} as const;

export const createKeysResponse = responses({
  type: "object",
  properties: { keyIds: { type: "array", items: { type: "string" } } },
  required: ["keyIds"],
});

export const enqueueKeysBody = {
  type: "object",
  properties: {
    migrationId: text(1),
    apiId: text(1),
    keys: {
      type: "array",
      minItems: 1,
      maxItems: importKeysMax,
      items: { type: "object", properties: migratedKeyFields },
    },
  },
  required: ["migrationId", "apiId", "keys"],
} as const;

export const enqueueKeysResponse = { 202: emptyObject, ...responses(emptyObject) };
