// Schemas of identities.* (field order = upstream's zod order).

import { ratelimitsPerRecordMax } from "@keyraft/core";
import { durationMsMax, emptyObject, int, meta, responses, text } from "./common.js";

const ratelimits = {
  type: "array",
  maxItems: ratelimitsPerRecordMax,
  items: {
    type: "object",
    properties: { name: text(1), limit: int(1), duration: int(1000, durationMsMax) },
    required: ["name", "limit", "duration"],
  },
} as const;

const ratelimitsView = {
  type: "array",
  items: {
    type: "object",
    properties: { name: { type: "string" }, limit: { type: "integer" }, duration: { type: "integer" } },
    required: ["name", "limit", "duration"],
  },
} as const;

export const createIdentityBody = {
  type: "object",
  properties: { externalId: text(3), meta, ratelimits },
  required: ["externalId"],
} as const;

export const createIdentityResponse = responses({
  type: "object",
  properties: { identityId: { type: "string" } },
  required: ["identityId"],
});

export const getIdentityQuery = { type: "object", properties: { identityId: text(1), externalId: text(1) } } as const;

const identityView = {
  type: "object",
  properties: { id: { type: "string" }, externalId: { type: "string" }, meta, ratelimits: ratelimitsView },
  required: ["id", "externalId", "meta", "ratelimits"],
} as const;

export const identityResponse = responses(identityView);

export const listIdentitiesQuery = {
  type: "object",
  properties: {
    environment: { ...text(1), default: "default" },
    limit: { ...int(1, 100), default: 100 },
    cursor: text(),
  },
} as const;

export const listIdentitiesResponse = responses({
  type: "object",
  properties: {
    identities: {
      type: "array",
      items: {
        type: "object",
        properties: { id: { type: "string" }, externalId: { type: "string" }, ratelimits: ratelimitsView },
        required: ["id", "externalId", "ratelimits"],
      },
    },
    cursor: { type: "string" },
    total: { type: "integer" },
  },
  required: ["identities", "total"],
});

export const updateIdentityBody = {
  type: "object",
  properties: {
    identityId: text(1),
    externalId: text(1),
    environment: { ...text(1), default: "default" },
    meta,
    ratelimits,
  },
} as const;

export const deleteIdentityBody = {
  type: "object",
  properties: { identityId: text(1) },
  required: ["identityId"],
} as const;
export const identityEmptyResponse = responses(emptyObject);
