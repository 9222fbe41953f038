// ratelimits.limit: one sliding-window limit (decision 3), with the namespace's override applied
// (decision 4: exact identifier first, then the most specific wildcard, then the lowest id).

import { limiterCountersPerNamespaceMax, resolveOverride, ROOT_PERMISSION, type LimitCheck } from "@keyraft/core";
import type { FastifyPluginCallbackTypebox } from "@fastify/type-provider-typebox";
import { anyOf, authenticate, holdsAny, requirePermission, type RootKeyDeps } from "../auth/root-key.js";
import type { GatewayServices } from "../services.js";
import { judgeLimitHere } from "../counters/ratelimit/judge-here.js";
import { limitSubject } from "../counters/ratelimit/subject.js";
import { notFound } from "../errors.js";
import { limitBody, limitResponse, namespaceDefault } from "../schemas/ratelimits.js";

/** Limiter key: namespace, identifier and the effective window, so a changed limit starts afresh. */
export function namespaceLimitKey(namespaceId: string, identifier: string, limit: number, durationMs: number): string {
  return `r:${namespaceId}:${limit}:${durationMs}:${identifier}`;
}

/** The services these routes use (registered by app.ts with GatewayServices). */
export type RatelimitRouteDeps = Pick<GatewayServices, "ids" | "rateLimits" | "submit" | "metrics"> & RootKeyDeps;

export const ratelimitRoute: FastifyPluginCallbackTypebox<RatelimitRouteDeps> = (app, deps, done) => {
  app.post("/v1/ratelimits.limit", { schema: { body: limitBody, response: limitResponse } }, async (request, reply) => {
    const body = request.body;
    // The schema's default fills it (validation runs with useDefaults).
    const namespace = body.namespace ?? namespaceDefault;
    const auth = await authenticate(deps, request);
    let namespaceId = deps.state.namespaceIdByName.get(namespace);
    if (namespaceId === undefined) {
      if (!holdsAny(auth, ROOT_PERMISSION, "ratelimit.*.create_namespace"))
        throw notFound(`namespace ${namespace} not found`);
      const created = await deps.submit(request, {
        type: "createNamespace",
        namespaceId: deps.ids.next("rlns"),
        name: namespace,
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
    deps.metrics.rateLimitAnswered(answer.success);
    return reply.send(answer);
  });
  done();
};
