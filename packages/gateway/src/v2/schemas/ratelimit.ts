// Schemas of the v2 ratelimit.* routes (docs/api-v2.md), with upstream's bounds.

import { Type } from "@sinclair/typebox";
import { Closed } from "../validation.js";
import { countMax } from "../../schemas/common.js";
import { PageLimit } from "./common.js";

/** Longest window of ratelimit.limit (30 days). */
export const limitDurationMsMax = 2_592_000_000;

export const NamespaceRef = Type.String({ minLength: 1, maxLength: 512 });
export const Identifier = Type.String({ minLength: 1, maxLength: 512 });

export const LimitRequest = Closed({
  namespace: NamespaceRef,
  identifier: Identifier,
  limit: Type.Integer({ minimum: 1, maximum: countMax }),
  duration: Type.Integer({ minimum: 1000, maximum: limitDurationMsMax }),
  cost: Type.Integer({ minimum: 0, maximum: countMax, default: 1 }),
});

export const LimitData = Type.Object({
  limit: Type.Integer(),
  remaining: Type.Integer(),
  reset: Type.Integer(),
  success: Type.Boolean(),
  overrideId: Type.Optional(Type.String()),
});

/** Requests one multiLimit call judges at most. */
export const multiLimitRequestsMax = 100;

export const MultiLimitBody = Type.Array(LimitRequest, { minItems: 1, maxItems: multiLimitRequestsMax });

export const MultiLimitData = Type.Object({
  passed: Type.Boolean(),
  limits: Type.Array(
    Type.Object({
      namespace: Type.String(),
      identifier: Type.String(),
      limit: Type.Integer(),
      remaining: Type.Integer(),
      reset: Type.Integer(),
      passed: Type.Boolean(),
      overrideId: Type.Optional(Type.String()),
    }),
  ),
});

export const SetOverrideBody = Closed({
  namespace: NamespaceRef,
  identifier: Identifier,
  limit: Type.Integer({ minimum: 0, maximum: countMax }),
  duration: Type.Integer({ minimum: 1000, maximum: limitDurationMsMax }),
});

export const OverrideRefBody = Closed({ namespace: NamespaceRef, identifier: Identifier });

export const ListOverridesBody = Closed({
  namespace: NamespaceRef,
  cursor: Type.Optional(Type.String({ maxLength: 1024 })),
  limit: PageLimit(10),
});

export const Override = Type.Object({
  overrideId: Type.String(),
  identifier: Type.String(),
  limit: Type.Integer(),
  duration: Type.Integer(),
});
