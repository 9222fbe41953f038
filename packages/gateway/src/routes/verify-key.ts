// POST /v1/keys.verifyKey (and its legacy alias /v1/keys/verify): translates the v1 request for
// the verification service (verify/verification.ts) and its outcome into the v1 answer. The hot
// path: one hash, one decision, no await unless credits are spent or counts need covering.

import type { FastifyPluginCallbackTypebox } from "@fastify/type-provider-typebox";
import type { FastifyReply } from "fastify";
import { hashKey } from "../auth/hash.js";
import { verifyKeyBody, verifyKeyResponse } from "../schemas/keys.js";
import type { GatewayServices } from "../services.js";
import type { VerifyOutcome } from "../verify/verification.js";
import type { BodyRequest } from "../http/typed-request.js";

export const triggeredHeader = "Unkey-Ratelimit-Triggered";

/** The services these routes use (registered by app.ts with GatewayServices). */
export type VerifyKeyRoutesDeps = Pick<GatewayServices, "verification">;

function answer(reply: FastifyReply, outcome: VerifyOutcome): FastifyReply {
  if (outcome.triggeredRatelimit !== undefined) reply.header(triggeredHeader, outcome.triggeredRatelimit);
  return reply.send(outcome.result);
}

export const verifyKeyRoutes: FastifyPluginCallbackTypebox<VerifyKeyRoutesDeps> = (app, { verification }, done) => {
  const schema = { body: verifyKeyBody, response: verifyKeyResponse };
  const handler = (request: BodyRequest<typeof verifyKeyBody>, reply: FastifyReply) => {
    const { body } = request;
    const outcome = verification.verify(hashKey(body.key), request.id, body);
    if (outcome instanceof Promise) return outcome.then((settled) => answer(reply, settled));
    return answer(reply, outcome);
  };
  app.post("/v1/keys.verifyKey", { schema }, handler);
  // Legacy alias (upstream's deprecated REST route).
  app.post("/v1/keys/verify", { schema: { ...schema, deprecated: true } }, handler);
  done();
};
