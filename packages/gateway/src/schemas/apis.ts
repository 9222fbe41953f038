import { int, responses, text } from "./common.js";
import { keyObject } from "./keys.js";

export const createApiBody = { type: "object", properties: { name: text(3) }, required: ["name"] } as const;

export const createApiResponse = responses({
  type: "object",
  properties: { apiId: { type: "string" }, name: { type: "string" } },
  required: ["apiId"],
});

export const getApiQuery = { type: "object", properties: { apiId: text(1) }, required: ["apiId"] } as const;

export const getApiResponse = responses({
  type: "object",
  properties: { id: { type: "string" }, workspaceId: { type: "string" }, name: { type: "string" } },
  required: ["id", "workspaceId"],
});

export const livenessResponse = responses({
  type: "object",
  properties: {
    status: { type: "string" },
    services: {
      type: "object",
      properties: {
        metrics: { type: "string" },
        logger: { type: "string" },
        ratelimit: { type: "string" },
        usagelimit: { type: "string" },
      },
      required: ["metrics", "logger", "ratelimit", "usagelimit"],
    },
  },
  required: ["status", "services"],
});

export const deleteApiBody = { type: "object", properties: { apiId: text(1) }, required: ["apiId"] } as const;

export const listKeysQuery = {
  type: "object",
  properties: {
    apiId: text(1),
    limit: { ...int(1, 100), default: 100 },
    cursor: text(),
    ownerId: text(1),
    externalId: text(1),
    decrypt: { type: ["boolean", "null"] },
    revalidateKeysCache: { type: ["boolean", "null"] },
  },
  required: ["apiId"],
} as const;

export const legacyListKeysParams = { type: "object", properties: { apiId: text(1) }, required: ["apiId"] } as const;

export const legacyListKeysQuery = {
  type: "object",
  properties: {
    limit: { ...int(1, 100), default: 100 },
    offset: { ...int(0, 10_000_000), default: 0 },
    ownerId: text(1),
  },
} as const;

export const listKeysResponse = responses({
  type: "object",
  properties: { keys: { type: "array", items: keyObject }, cursor: { type: "string" }, total: { type: "integer" } },
  required: ["keys", "total"],
});

export const deleteKeysBody = {
  type: "object",
  properties: { apiId: text(1), permanent: { type: "boolean" } },
  required: ["apiId"],
} as const;

export const deleteKeysResponse = responses({
  type: "object",
  properties: { deletedKeys: { type: "integer" } },
  required: ["deletedKeys"],
});
