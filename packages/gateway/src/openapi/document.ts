// GET /openapi.json: the OpenAPI 3.1 document @fastify/swagger builds from the route schemas,
// so it cannot drift from what the routes validate and answer.

import type { FastifyDynamicSwaggerOptions } from "@fastify/swagger";
import type { FastifyPluginCallback } from "fastify";

export const openApiOptions: FastifyDynamicSwaggerOptions = {
  openapi: {
    openapi: "3.1.0",
    info: {
      title: "keyraft",
      description: "Self-hosted API key issuing, verification and rate limiting, compatible with the Unkey v1 API.",
      version: "1.0.0",
    },
    components: {
      securitySchemes: { rootKey: { type: "http", scheme: "bearer", description: "A root key" } },
    },
    security: [{ rootKey: [] }],
  },
};

export interface OpenApiRouteOptions {
  /** The document of the whole app (the root instance's `swagger()`). */
  document(): unknown;
}

export const openApiRoute: FastifyPluginCallback<OpenApiRouteOptions> = (app, { document }, done) => {
  app.get("/openapi.json", { schema: { hide: true } }, async (_request, reply) => reply.send(document()));
  done();
};
