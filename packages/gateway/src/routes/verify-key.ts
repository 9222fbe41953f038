// POST /v1/keys.verifyKey (and its legacy alias /v1/keys/verify): translates the v1 request for
// the verification service (verify/verification.ts) and its outcome into the v1 answer. The hot
// path: one hash, one decision, no await unless credits are spent or counts need covering.

import type { FastifyPluginCallbackTypebox } from "@fastify/type-provider-typebox";
import { hashKey } from "../auth/hash.js";
import { verifyKeyBody, verifyKeyResponse } from "../schemas/keys.js";
import type { GatewayServices } from "../services.js";

export const triggeredHeader = "Unkey-Ratelimit-Triggered";

/** The services these routes use (registered by app.ts with GatewayServices). */
export type VerifyKeyRoutesDeps = Pick<GatewayServices, "verification">;

export const verifyKeyRoutes: FastifyPluginCallbackTypebox<VerifyKeyRoutesDeps> = (app, { verification }, done) => {
  const schema: { body: typeof verifyKeyBody; response: typeof verifyKeyResponse; deprecated?: boolean } = {
    body: verifyKeyBody,
    response: verifyKeyResponse,
  };
  const route = (url: string, routeSchema: typeof schema) =>
    app.post(url, { schema: routeSchema }, (request, reply) => {
      const { body } = request;
      const outcome = verification.verify(hashKey(body.key), request.id, body);
      if (outcome instanceof Promise) {
        return outcome.then((settled) => {
          if (settled.triggeredRatelimit !== undefined) reply.header(triggeredHeader, settled.triggeredRatelimit);
          return settled.result;
        });
      }
      if (outcome.triggeredRatelimit !== undefined) reply.header(triggeredHeader, outcome.triggeredRatelimit);
      return outcome.result; // Fastify sends what a handler returns
    });
  route("/v1/keys.verifyKey", schema);
  // Legacy alias (upstream's deprecated REST route).
  route("/v1/keys/verify", { ...schema, deprecated: true });
  done();
};
