import type { FastifyPluginCallbackTypebox } from "@fastify/type-provider-typebox";
import { livenessResponse } from "../schemas/apis.js";

// GET /v1/liveness: a constant answer (cluster/routes.ts adds the role and staleness headers).

/** Needs no service. */
export const livenessRoute: FastifyPluginCallbackTypebox = (app, _options, done) => {
  const body = {
    status: "we're so back",
    services: { metrics: "none", logger: "pino", ratelimit: "SlidingWindowLimiter", usagelimit: "CreditLedger" },
  };
  app.get("/v1/liveness", { schema: { response: livenessResponse } }, () => body);
  done();
};
