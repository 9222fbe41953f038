// ratelimits.limit: one sliding-window limit (decision 3), with the namespace's override applied
// (decision 4: exact identifier first, then the most specific wildcard, then the lowest id).

import { resolveOverride, ROOT_PERMISSION, type KeyState, type LimitCheck, type OverrideRecord } from "@keyraft/core";
import type { FastifyInstance } from "fastify";
import { requestIdHeader } from "../app.js";
import { anyOf, authenticate, holdsAny, requirePermission } from "../auth/root-key.js";
import type { GatewayContext } from "../context.js";
import { judgeLimitHere, type LimitAnswer } from "../counters/ratelimit/judge-here.js";
import { limitSubject } from "../counters/ratelimit/subject.js";
import { notFound } from "../errors.js";
import { limitBody, limitResponse } from "../schemas/ratelimits.js";

interface LimitBody {
  namespace: string;
  identifier: string;
  limit: number;
  duration: number;
  cost?: number;
  async?: boolean;
}

/** Limiter key: namespace, identifier and the effective window, so a changed limit starts afresh. */
export function namespaceLimitKey(namespaceId: string, identifier: string, limit: number, durationMs: number): string {
  return `r:${namespaceId}:${limit}:${durationMs}:${identifier}`;
}

/** A ratelimit check of a namespace's identifier with the namespace's override applied (v1 and v2). */
export interface PlannedNamespaceCheck {
  check: LimitCheck;
  override: OverrideRecord | undefined;
  /** Judged here and reconciled in the background (v1 `async`, or the override's). */
  isAsync: boolean;
}

export function planNamespaceCheck(
  state: KeyState,
  namespaceId: string,
  identifier: string,
  requested: { limit: number; durationMs: number; cost: number; async: boolean },
): PlannedNamespaceCheck {
  const override = resolveOverride(state, namespaceId, identifier);
  const limit = override?.limit ?? requested.limit;
  const durationMs = override?.durationMs ?? requested.durationMs;
  return {
    check: {
      key: namespaceLimitKey(namespaceId, identifier, limit, durationMs),
      limit,
      durationMs,
      cost: requested.cost,
    },
    override,
    isAsync: override?.async ?? requested.async,
  };
}

/** Judges a planned check where its identifier is served (in a cluster: its owner node). */
export function judgeNamespaceCheck(
  ctx: GatewayContext,
  namespaceId: string,
  identifier: string,
  planned: PlannedNamespaceCheck,
): Promise<LimitAnswer> {
  const { deps } = ctx;
  return Promise.resolve(
    deps.rateLimits?.limit(limitSubject(namespaceId, identifier), planned.check, planned.isAsync) ??
      judgeLimitHere(deps.limiter, deps.counterDurability, planned.check, deps.nowMs(), () => null),
  );
}

export function registerRatelimitRoute(app: FastifyInstance, ctx: GatewayContext): void {
  const { deps } = ctx;
  app.post("/v1/ratelimits.limit", { schema: { body: limitBody, response: limitResponse } }, async (request, reply) => {
    const body = request.body as LimitBody;
    const auth = await authenticate(ctx, request);
    let namespaceId = deps.state.namespaceIdByName.get(body.namespace);
    if (namespaceId === undefined) {
      if (!holdsAny(auth, ROOT_PERMISSION, "ratelimit.*.create_namespace"))
        throw notFound(`namespace ${body.namespace} not found`);
      const created = await ctx.submit({
        type: "createNamespace",
        namespaceId: ctx.ids.next("rlns"),
        name: body.namespace,
        nowMs: deps.nowMs(),
      });
      namespaceId = created.id ?? "";
    }
    requirePermission(auth, anyOf(ROOT_PERMISSION, "ratelimit.*.limit", `ratelimit.${namespaceId}.limit`));
    const planned = planNamespaceCheck(deps.state, namespaceId, body.identifier, {
      limit: body.limit,
      durationMs: body.duration,
      cost: body.cost ?? 1,
      async: body.async ?? false,
    });
    const answer = await judgeNamespaceCheck(ctx, namespaceId, body.identifier, planned);
    return reply.header(requestIdHeader, request.id).send(answer);
  });
}
