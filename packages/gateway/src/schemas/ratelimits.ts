import { Type } from "@sinclair/typebox";
import {
  durationMsMax,
  emptyObject,
  int,
  meta,
  nullable,
  pageLimitDefault,
  responses,
  text,
  optional,
} from "./common.js";

/** The namespace of ratelimits.limit when the request names none (the schema's `default`). */
export const namespaceDefault = "default";

export const limitBody = Type.Object({
  namespace: Type.Optional(text(1, undefined, { default: namespaceDefault })),
  identifier: text(),
  limit: int(1),
  duration: int(1000, durationMsMax),
  cost: Type.Optional(int(0)),
  async: Type.Optional(Type.Boolean()),
  meta: Type.Optional(meta),
  resources: Type.Optional(
    Type.Array(Type.Object({ type: text(), id: text(), name: Type.Optional(text()), meta: Type.Optional(meta) }), {
      maxItems: 100,
    }),
  ),
});

export const limitResponse = responses(
  Type.Object({ success: Type.Boolean(), limit: Type.Integer(), remaining: Type.Integer(), reset: Type.Integer() }),
);

const namespaceFields = { namespaceId: Type.Optional(text()), namespaceName: Type.Optional(text()) };

export const setOverrideBody = Type.Object({
  ...namespaceFields,
  identifier: text(3),
  limit: int(1),
  duration: int(1000, durationMsMax),
  async: Type.Optional(Type.Boolean()),
});

export const setOverrideResponse = responses(Type.Object({ overrideId: Type.String() }));

export const getOverrideQuery = Type.Object({ ...namespaceFields, identifier: text() });

const override = Type.Object({
  id: Type.String(),
  identifier: Type.String(),
  limit: Type.Integer(),
  duration: Type.Integer(),
  async: optional(nullable(Type.Boolean())),
});

export const getOverrideResponse = responses(override);

export const listOverridesQuery = Type.Object({
  ...namespaceFields,
  limit: Type.Optional(int(1, 100, { default: pageLimitDefault })),
  cursor: Type.Optional(text()),
});

export const listOverridesResponse = responses(
  Type.Object({ overrides: Type.Array(override), cursor: optional(Type.String()), total: Type.Integer() }),
);

export const deleteOverrideBody = Type.Object({ ...namespaceFields, identifier: text() });

export const deleteOverrideResponse = responses(emptyObject);
