// The metrics of requests (a hook on every response: its route's latency and status class) and
// GET /metrics, the Prometheus text, behind KEYRAFT_METRICS_TOKEN when it is set.
import { timingSafeEqual } from "node:crypto";
import { Type } from "@sinclair/typebox";
import type { FastifyPluginCallbackTypebox } from "@fastify/type-provider-typebox";
import type { FastifyRequest } from "fastify";
import fastifyPlugin from "fastify-plugin";
import type { GatewayMetrics } from "./gateway-metrics.js";

export const metricsPath = "/metrics";

/** Counts every response of the instance it is registered on (not encapsulated: it sees every route). */
export const requestMetrics = fastifyPlugin<{ metrics: GatewayMetrics }>(
  (app, options, done) => {
    const { metrics } = options;
    app.addHook("onResponse", (request, reply, next) => {
      // routeOptions.url is the matched route's pattern (bounded), never the raw URL.
      metrics.responded(request.routeOptions.url, reply.statusCode, reply.elapsedTime);
      next();
    });
    done();
  },
  { name: "keyraft-request-metrics" },
);

function tokenMatches(request: FastifyRequest, expected: Buffer): boolean {
  const header = request.headers.authorization;
  if (typeof header !== "string" || !header.startsWith("Bearer ")) return false;
  const given = Buffer.from(header.slice("Bearer ".length));
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** GET /metrics. With a token, a request without `Authorization: Bearer <token>` gets 401. */
export const metricsRoute: FastifyPluginCallbackTypebox<{ metrics: GatewayMetrics; token: string | null }> = (
  app,
  options,
  done,
) => {
  const { metrics } = options;
  const expected = options.token === null ? null : Buffer.from(options.token);
  app.get(
    metricsPath,
    {
      schema: {
        summary: "Prometheus metrics of this node (text exposition format)",
        tags: ["operations"],
        response: { 200: Type.String(), 401: Type.String() },
      },
    },
    async (request, reply) => {
      if (expected !== null && !tokenMatches(request, expected)) {
        return reply
          .code(401)
          .header("www-authenticate", 'Bearer realm="metrics"')
          .type("text/plain; charset=utf-8")
          .send("metrics: a bearer token is required (KEYRAFT_METRICS_TOKEN)\n");
      }
      return reply.type(metrics.contentType).send(await metrics.text());
    },
  );
  done();
};
