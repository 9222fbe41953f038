// ratelimits.limit: one sliding-window limit (decision 3), with the namespace's override applied
// (decision 4: exact identifier first, then the most specific wildcard, then the lowest id).

import { limiterCountersPerNamespaceMax, resolveOverride, ROOT_PERMISSION, type LimitCheck } from "@keyraft/core";
import type { FastifyInstance } from "fastify";
import { requestIdHeader } from "../app.js";
import { anyOf, authenticate, holdsAny, requirePermission } from "../auth/root-key.js";
import type { GatewayContext } from "../context.js";
import { judgeLimitHere } from "../counters/ratelimit/judge-here.js";
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
    const override = resolveOverride(deps.state, namespaceId, body.identifier);
    const limit = override?.limit ?? body.limit;
    const durationMs = override?.durationMs ?? body.duration;
    // Identifiers are the caller's to choose: their counters are bounded per namespace.
    const check: LimitCheck = {
      key: namespaceLimitKey(namespaceId, body.identifier, limit, durationMs),
      limit,
      durationMs,
      cost: body.cost ?? 1,
      group: `n:${namespaceId}`,
      groupEntriesMax: limiterCountersPerNamespaceMax,
    };
    // In a cluster: judged by the node serving the identifier (async: here, reconciled in the background).
    const isAsync = override?.async ?? body.async ?? false;
    const answer = await (deps.rateLimits?.limit(limitSubject(namespaceId, body.identifier), check, isAsync) ??
      judgeLimitHere(deps.limiter, deps.counterDurability, check, deps.nowMs(), () => null));
    return reply.header(requestIdHeader, request.id).send(answer);
  });
}
