// Schemas of the keys.* routes (field order = upstream's zod order: validation reports the first
// issue in this order).

import { connectionsPerRecordMax } from "@keyraft/core";
import {
  countMax,
  durationMsMax,
  int,
  meta,
  namedItems,
  nullable,
  responses,
  text,
  timestampMsMax,
  emptyObject,
} from "./common.js";

const cost = int(0);
const refill = {
  type: "object",
  properties: {
    interval: { type: "string", enum: ["daily", "monthly"] },
    amount: int(1),
    refillDay: int(1, 31),
  },
  required: ["interval", "amount"],
} as const;

export const verifyKeyBody = {
  type: "object",
  properties: {
    apiId: text(),
    key: text(1),
    tags: { type: "array", maxItems: 10, items: text(1, 128) },
    authorization: { type: "object", properties: { permissions: {} } },
    remaining: { type: "object", properties: { cost } },
    ratelimit: { type: "object", properties: { cost } },
    ratelimits: {
      type: "array",
      maxItems: 32,
      items: {
        type: "object",
        properties: { name: text(1), cost, limit: int(0), duration: int(1, durationMsMax) },
        required: ["name"],
      },
    },
  },
  required: ["key"],
} as const;

export const verifyKeyResponse = responses({
  type: "object",
  properties: {
    keyId: { type: "string" },
    valid: { type: "boolean" },
    name: { type: "string" },
    ownerId: { type: "string" },
    meta,
    expires: { type: "integer" },
    ratelimit: {
      type: "object",
      properties: { limit: { type: "integer" }, remaining: { type: "integer" }, reset: { type: "integer" } },
      required: ["limit", "remaining", "reset"],
    },
    remaining: { type: "integer" },
    code: { type: "string" },
    enabled: { type: "boolean" },
    permissions: { type: "array", items: { type: "string" } },
    roles: { type: "array", items: { type: "string" } },
    environment: { type: "string" },
    identity: {
      type: "object",
      properties: { id: { type: "string" }, externalId: { type: "string" }, meta },
      required: ["id", "externalId", "meta"],
    },
    requestId: { type: "string" },
  },
  required: ["valid", "code", "requestId"],
});

const keyRatelimitCreate = {
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
} as const;

export const createKeyBody = {
  type: "object",
  properties: {
    apiId: text(),
    prefix: text(0, 16),
    name: text(),
    byteLength: int(16, 255),
    ownerId: text(),
    externalId: text(),
    meta,
    roles: { type: "array", maxItems: connectionsPerRecordMax, items: text(1, 512) },
    permissions: { type: "array", maxItems: connectionsPerRecordMax, items: text(1, 512) },
    expires: int(0, timestampMsMax),
    remaining: int(-countMax),
    refill,
    ratelimit: keyRatelimitCreate,
    enabled: { type: "boolean" },
    recoverable: { type: "boolean" },
    environment: text(0, 256),
  },
  required: ["apiId"],
} as const;

export const createKeyResponse = responses({
  type: "object",
  properties: { keyId: { type: "string" }, key: { type: "string" } },
  required: ["keyId", "key"],
});

export const refItems = (withSlug: boolean, minItems: number) =>
  ({
    type: "array",
    minItems,
    maxItems: connectionsPerRecordMax,
    items: {
      type: "object",
      properties: {
        id: text(3),
        name: text(1),
        ...(withSlug ? { slug: text(1) } : {}),
        create: { type: "boolean" },
      },
    },
  }) as const;

export const updateKeyBody = {
  type: "object",
  properties: {
    keyId: text(),
    name: nullable(text()),
    ownerId: nullable(text()),
    externalId: nullable(text()),
    meta: { type: ["object", "null"], additionalProperties: true },
    expires: nullable(int(0, timestampMsMax)),
    ratelimit: {
      type: ["object", "null"],
      properties: {
        type: { type: "string", enum: ["fast", "consistent"] },
        async: { type: "boolean" },
        limit: int(1),
        refillRate: int(1),
        refillInterval: int(1, durationMsMax),
        duration: int(1, durationMsMax),
      },
      required: ["limit"],
    },
    remaining: nullable(int(0)),
    refill: { ...refill, type: ["object", "null"] },
    enabled: { type: "boolean" },
    roles: refItems(false, 0),
    permissions: refItems(false, 0),
  },
  required: ["keyId"],
} as const;

export const setPermissionsBody = {
  type: "object",
  properties: { keyId: text(1), permissions: refItems(true, 1) },
  required: ["keyId", "permissions"],
} as const;

export const setRolesBody = {
  type: "object",
  properties: { keyId: text(1), roles: refItems(false, 1) },
  required: ["keyId", "roles"],
} as const;

export const namedItemsResponse = responses(namedItems);
export const emptyResponse = responses(emptyObject);

export const whoamiBody = { type: "object", properties: { key: text(1) }, required: ["key"] } as const;

export const whoamiResponse = responses({
  type: "object",
  properties: {
    id: { type: "string" },
    name: { type: "string" },
    remaining: { type: "integer" },
    identity: {
      type: "object",
      properties: { id: { type: "string" }, externalId: { type: "string" } },
      required: ["id", "externalId"],
    },
    meta,
    createdAt: { type: "integer" },
    enabled: { type: "boolean" },
    environment: { type: "string" },
  },
  required: ["id", "createdAt", "enabled"],
});

export const deleteKeyBody = {
  type: "object",
  properties: { keyId: text(1), permanent: { type: "boolean" } },
  required: ["keyId"],
} as const;

export const getKeyQuery = {
  type: "object",
  properties: { keyId: text(1), decrypt: { type: "boolean" } },
  required: ["keyId"],
} as const;

export const keyObject = {
  type: "object",
  properties: {
    id: { type: "string" },
    start: { type: "string" },
    workspaceId: { type: "string" },
    apiId: { type: "string" },
    name: { type: "string" },
    ownerId: { type: "string" },
    meta,
    createdAt: { type: "integer" },
    updatedAt: { type: "integer" },
    expires: { type: "integer" },
    remaining: { type: "integer" },
    refill: {
      type: "object",
      properties: {
        interval: { type: "string" },
        amount: { type: "integer" },
        refillDay: { type: ["integer", "null"] },
        lastRefillAt: { type: "integer" },
      },
      required: ["interval", "amount"],
    },
    ratelimit: {
      type: "object",
      properties: {
        async: { type: "boolean" },
        limit: { type: "integer" },
        duration: { type: "integer" },
        refillRate: { type: "integer" },
        refillInterval: { type: "integer" },
      },
      required: ["async", "limit", "duration"],
    },
    roles: { type: "array", items: { type: "string" } },
    permissions: { type: "array", items: { type: "string" } },
    enabled: { type: "boolean" },
    identity: {
      type: "object",
      properties: { id: { type: "string" }, externalId: { type: "string" }, meta },
      required: ["id", "externalId"],
    },
  },
  required: ["id", "start", "workspaceId", "createdAt"],
} as const;

export const keyResponse = responses(keyObject);

export const updateRemainingBody = {
  type: "object",
  properties: {
    keyId: text(1),
    op: { type: "string", enum: ["increment", "decrement", "set"] },
    value: nullable(int(0)),
  },
  required: ["keyId", "op", "value"],
} as const;

export const updateRemainingResponse = responses({
  type: "object",
  properties: { remaining: { type: ["integer", "null"] } },
  required: ["remaining"],
});
