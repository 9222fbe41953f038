// Schemas of keys.getVerifications and analytics.getVerifications. List parameters (keyId,
// tag, groupBy) arrive comma-separated, as the official client sends arrays.

import { analyticsRowsMax } from "@keyraft/core";
import { int, nullable, responses, text, timestampMsMax } from "./common.js";

export const keyVerificationsQuery = {
  type: "object",
  properties: {
    keyId: text(1),
    ownerId: text(1),
    start: nullable(int(0, timestampMsMax)),
    end: nullable(int(0, timestampMsMax)),
    granularity: { type: "string", enum: ["day"], default: "day" },
  },
} as const;

export const keyVerificationsResponse = responses({
  type: "object",
  properties: {
    verifications: {
      type: "array",
      items: {
        type: "object",
        properties: {
          time: { type: "integer" },
          success: { type: "integer" },
          rateLimited: { type: "integer" },
          usageExceeded: { type: "integer" },
        },
        required: ["time", "success", "rateLimited", "usageExceeded"],
      },
    },
  },
  required: ["verifications"],
});

export const analyticsOrderByValues = [
  "time",
  "valid",
  "notFound",
  "forbidden",
  "usageExceeded",
  "rateLimited",
  "unauthorized",
  "disabled",
  "insufficientPermissions",
  "expired",
  "total",
] as const;
export const analyticsGroupByValues = ["key", "identity", "tags", "tag", "month", "day", "hour"] as const;

export const analyticsVerificationsQuery = {
  type: "object",
  properties: {
    apiId: text(1),
    externalId: text(1),
    keyId: text(1, 100_000),
    tag: text(1, 10_000),
    start: nullable(int(0, timestampMsMax)),
    end: nullable(int(0, timestampMsMax)),
    groupBy: text(1, 200),
    limit: int(1, analyticsRowsMax),
    orderBy: { type: "string", enum: analyticsOrderByValues },
    order: { type: "string", enum: ["asc", "desc"], default: "asc" },
  },
  required: ["apiId"],
} as const;

const count = { type: "integer" } as const;

export const analyticsVerificationsResponse = responses({
  type: "array",
  items: {
    type: "object",
    properties: {
      time: count,
      valid: count,
      notFound: count,
      forbidden: count,
      usageExceeded: count,
      rateLimited: count,
      unauthorized: count,
      disabled: count,
      insufficientPermissions: count,
      expired: count,
      total: count,
      tag: { type: "string" },
      tags: { type: "array", items: { type: "string" } },
      keyId: { type: "string" },
      identity: {
        type: "object",
        properties: { id: { type: "string" }, externalId: { type: "string" } },
        required: ["id", "externalId"],
      },
    },
    required: ["total"],
  },
});
