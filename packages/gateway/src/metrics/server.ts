// GET /metrics on a port of its own (KEYRAFT_METRICS_PORT), so Prometheus can reach it on a
// network the API is not exposed to.
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from "fastify";
import type { Logger } from "pino";
import type { GatewayMetrics } from "./gateway-metrics.js";
import { metricsRoute } from "./plugin.js";

export async function startMetricsServer(options: {
  metrics: GatewayMetrics;
  token: string | null;
  host: string;
  port: number;
  logger: Logger;
}): Promise<FastifyInstance> {
  const app = Fastify({ loggerInstance: options.logger as unknown as FastifyBaseLogger, disableRequestLogging: true });
  await app.register(metricsRoute, { metrics: options.metrics, token: options.token });
  await app.listen({ host: options.host, port: options.port });
  return app;
}
