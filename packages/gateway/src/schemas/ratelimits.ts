import { durationMsMax, emptyObject, int, meta, responses, text } from "./common.js";

export const limitBody = {
  type: "object",
  properties: {
    namespace: { ...text(1), default: "default" },
    identifier: text(),
    limit: int(1),
    duration: int(1000, durationMsMax),
    cost: int(0),
    async: { type: "boolean" },
    meta,
    resources: {
      type: "array",
      maxItems: 100,
      items: {
        type: "object",
        properties: { type: text(), id: text(), name: text(), meta },
        required: ["type", "id"],
      },
    },
  },
  required: ["identifier", "limit", "duration"],
} as const;

export const limitResponse = responses({
  type: "object",
  properties: {
    success: { type: "boolean" },
    limit: { type: "integer" },
    remaining: { type: "integer" },
    reset: { type: "integer" },
  },
  required: ["success", "limit", "remaining", "reset"],
});

const namespaceFields = { namespaceId: text(), namespaceName: text() } as const;

export const setOverrideBody = {
  type: "object",
  properties: {
    ...namespaceFields,
    identifier: text(3),
    limit: int(1),
    duration: int(1000, durationMsMax),
    async: { type: "boolean" },
  },
  required: ["identifier", "limit", "duration"],
} as const;

export const setOverrideResponse = responses({
  type: "object",
  properties: { overrideId: { type: "string" } },
  required: ["overrideId"],
});

export const getOverrideQuery = {
  type: "object",
  properties: { ...namespaceFields, identifier: text() },
  required: ["identifier"],
} as const;

const override = {
  type: "object",
  properties: {
    id: { type: "string" },
    identifier: { type: "string" },
    limit: { type: "integer" },
    duration: { type: "integer" },
    async: { type: ["boolean", "null"] },
  },
  required: ["id", "identifier", "limit", "duration"],
} as const;

export const getOverrideResponse = responses(override);

export const listOverridesQuery = {
  type: "object",
  properties: { ...namespaceFields, limit: { ...int(1, 100), default: 100 }, cursor: text() },
} as const;

export const listOverridesResponse = responses({
  type: "object",
  properties: {
    overrides: { type: "array", items: override },
    cursor: { type: "string" },
    total: { type: "integer" },
  },
  required: ["overrides", "total"],
});

export const deleteOverrideBody = {
  type: "object",
  properties: { ...namespaceFields, identifier: text() },
  required: ["identifier"],
} as const;

export const deleteOverrideResponse = responses(emptyObject);
