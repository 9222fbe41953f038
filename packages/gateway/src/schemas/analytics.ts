// Schemas of keys.getVerifications and analytics.getVerifications. List parameters (keyId,
// tag, groupBy) arrive comma-separated, as the official client sends arrays.

import { analyticsRowsMax } from "@keyraft/core";
import { Type } from "@sinclair/typebox";
import { int, nullable, responses, stringEnum, text, timestampMsMax, optional } from "./common.js";

export const keyVerificationsQuery = Type.Object({
  keyId: Type.Optional(text(1)),
  ownerId: Type.Optional(text(1)),
  start: Type.Optional(nullable(int(0, timestampMsMax))),
  end: Type.Optional(nullable(int(0, timestampMsMax))),
  granularity: Type.Optional(stringEnum(["day"], { default: "day" })),
});

export const keyVerificationsResponse = responses(
  Type.Object({
    verifications: Type.Array(
      Type.Object({
        time: Type.Integer(),
        success: Type.Integer(),
        rateLimited: Type.Integer(),
        usageExceeded: Type.Integer(),
      }),
    ),
  }),
);

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

export const analyticsVerificationsQuery = Type.Object({
  apiId: text(1),
  externalId: Type.Optional(text(1)),
  keyId: Type.Optional(text(1, 100_000)),
  tag: Type.Optional(text(1, 10_000)),
  start: Type.Optional(nullable(int(0, timestampMsMax))),
  end: Type.Optional(nullable(int(0, timestampMsMax))),
  groupBy: Type.Optional(text(1, 200)),
  limit: Type.Optional(int(1, analyticsRowsMax)),
  orderBy: Type.Optional(stringEnum(analyticsOrderByValues)),
  order: Type.Optional(stringEnum(["asc", "desc"], { default: "asc" })),
});

const count = Type.Integer();
const optionalCount = optional(count);

export const analyticsVerificationsResponse = responses(
  Type.Array(
    Type.Object({
      time: optionalCount,
      valid: optionalCount,
      notFound: optionalCount,
      forbidden: optionalCount,
      usageExceeded: optionalCount,
      rateLimited: optionalCount,
      unauthorized: optionalCount,
      disabled: optionalCount,
      insufficientPermissions: optionalCount,
      expired: optionalCount,
      total: count,
      tag: optional(Type.String()),
      tags: optional(Type.Array(Type.String())),
      keyId: optional(Type.String()),
      identity: optional(Type.Object({ id: Type.String(), externalId: Type.String() })),
    }),
  ),
);
