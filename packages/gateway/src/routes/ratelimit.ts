// ratelimits.limit: one sliding-window limit (decision 3), with the namespace's override applied
// (decision 4: exact identifier first, then the most specific wildcard, then the lowest id).

import { ROOT_PERMISSION } from "@keyraft/core";
import type { FastifyPluginCallbackTypebox } from "@fastify/type-provider-typebox";
import { anyOf, authenticate, holdsAny, requirePermission, type RootKeyDeps } from "../auth/root-key.js";
import type { GatewayServices } from "../services.js";
import { judgeNamespaceCheck, planNamespaceCheck } from "../counters/ratelimit/namespace-check.js";
import { notFound } from "../errors.js";
import { limitBody, limitResponse, namespaceDefault } from "../schemas/ratelimits.js";

/** The services these routes use (registered by app.ts with GatewayServices). */
export type RatelimitRouteDeps = Pick<
  GatewayServices,
  "ids" | "rateLimits" | "submit" | "metrics" | "limiter" | "counterDurability"
> &
  RootKeyDeps;

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
    const planned = planNamespaceCheck(deps.state, namespaceId, body.identifier, {
      limit: body.limit,
      durationMs: body.duration,
      cost: body.cost ?? 1,
      async: body.async ?? false,
    });
    // In a cluster: judged by the node serving the identifier (async: here, reconciled in the background).
    const answer = await judgeNamespaceCheck(deps, namespaceId, body.identifier, planned);
    deps.metrics.rateLimitAnswered(answer.success);
    return reply.send(answer);
  });
  done();
};
