import type { FastifyInstance } from "fastify";
import { requestIdHeader } from "../app.js";
import type { GatewayContext } from "../context.js";
import { livenessResponse } from "../schemas/apis.js";

export function registerLivenessRoute(app: FastifyInstance, _ctx: GatewayContext): void {
  const body = {
    status: "we're so back",
    services: { metrics: "none", logger: "pino", ratelimit: "SlidingWindowLimiter", usagelimit: "CreditLedger" },
  };
  app.get("/v1/liveness", { schema: { response: livenessResponse } }, (request, reply) =>
    reply.header(requestIdHeader, request.id).send(body),
  );
}
