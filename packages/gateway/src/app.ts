// buildApp(deps): the Fastify instance serving the v1 API (and v2, v2/plugin.ts), and the one composition root of the
// gateway: it builds the services (services.ts) and registers every plugin; nothing imports it
// back. Every route plugin owns its routes and schemas and declares, as its options type, the
// services it needs; the cross-cutting hooks (http/lifecycle.ts) apply to all of them. Every
// response, error or not, carries `Unkey-Request-Id`; every error has the v1 body.

import swagger from "@fastify/swagger";
import type { FastifyPluginCallbackTypebox } from "@fastify/type-provider-typebox";
import SerializerSelector from "@fastify/fast-json-stringify-compiler";
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from "fastify";
import type { Logger } from "pino";
import { clusterRoutes, stalenessGuardPlugin } from "./cluster/routes.js";
import type { AppDeps } from "./deps.js";
import { lifecyclePlugin } from "./http/lifecycle.js";
import { auditRoutes } from "./audit/routes.js";
import { dashboardRoutes } from "./dashboard/plugin.js";
import { dashboardReadRoutes } from "./dashboard/read-routes.js";
import { metricsRoute, requestMetrics } from "./metrics/plugin.js";
import { requestLoggerFactory } from "./logger.js";
import { openApiOptions, openApiRoute } from "./openapi/document.js";
import { analyticsRoutes } from "./routes/analytics.js";
import { apiRoutes } from "./routes/apis.js";
import { identityRoutes } from "./routes/identities.js";
import { keyRbacRoutes } from "./routes/keys-rbac.js";
import { keyReadRoutes } from "./routes/keys-read.js";
import { keyWriteRoutes } from "./routes/keys-write.js";
import { livenessRoute } from "./routes/liveness.js";
import { migrationRoutes } from "./routes/migrations.js";
import { overrideRoutes } from "./routes/overrides.js";
import { permissionRoutes } from "./routes/permissions.js";
import { ratelimitRoute } from "./routes/ratelimit.js";
import { verifyKeyRoutes } from "./routes/verify-key.js";
import { createServices, type GatewayServices } from "./services.js";
import { v2Plugin } from "./v2/plugin.js";
import { validatorCompiler } from "./validation/ajv.js";
import { DeferredCompiles } from "./validation/deferred-compile.js";
import { registerJsonParser } from "./validation/json-body.js";

/** Default largest request body (1 MiB); bigger bodies get 413 with the v1 error body. */
export const bodyLimitBytesDefault = 1_048_576;

export type { AppDeps } from "./deps.js";
export { requestIdHeader } from "./http/request-id.js";

export function buildApp(deps: AppDeps): FastifyInstance {
  const services = createServices(deps);
  // Every route's validators and serializers are compiled one per event-loop turn after the start,
  // or by the first request that needs them (validation/deferred-compile.ts says why).
  const compiles = new DeferredCompiles();
  const serializerFactory = SerializerSelector();
  const app = Fastify({
    // pino's Logger is a FastifyBaseLogger; typing the instance with the base keeps route
    // registration functions on the default FastifyInstance type.
    loggerInstance: deps.logger as unknown as FastifyBaseLogger,
    // No per-request log lines (the hot path); errors are logged by the error handler.
    logController: new LogController({ disableRequestLogging: true }),
    // request.log is made lazily: a pino child per request costs a few µs and is rarely used.
    childLoggerFactory: (logger, bindings, options) =>
      requestLoggerFactory(logger as unknown as Logger, bindings, options) as unknown as FastifyBaseLogger,
    bodyLimit: deps.bodyLimitBytes,
    genReqId: () => services.ids.next("req"),
    requestIdHeader: false,
    // Requests arriving while the server closes get the v1 error body (http/lifecycle.ts), not Fastify's.
    return503OnClosing: false,
    ...(deps.serverFactory === undefined ? {} : { serverFactory: deps.serverFactory }),
    schemaController: {
      compilersFactory: {
        buildSerializer: (externalSchemas, options) =>
          compiles.serializers(serializerFactory(externalSchemas, options as Parameters<typeof serializerFactory>[1])),
      },
    },
  });
  app.setValidatorCompiler(compiles.validators(validatorCompiler()));
  app.addHook("onClose", (_instance, done) => {
    compiles.stop();
    done();
  });
  registerJsonParser(app);
  void app.register(lifecyclePlugin);
  if (deps.cluster !== undefined) void app.register(stalenessGuardPlugin, deps.cluster);
  // Verifications forwarded by another node are verified here (counters/ratelimit).
  deps.rateLimits?.setLocalVerifier((hash, requestId, fields) =>
    services.verification.verifyForwarded(hash, requestId, fields),
  );
  services.analytics.start();
  app.addHook("onClose", (_instance, done) => {
    services.analytics.stop();
    done();
  });
  // The OpenAPI document is generated from the route schemas (registered after the plugin so
  // its onRoute hook sees every route).
  void app.register(swagger, openApiOptions);
  void app.register(requestMetrics, { metrics: services.metrics });
  if (deps.metricsEndpoint !== undefined)
    void app.register(metricsRoute, { metrics: services.metrics, token: deps.metricsEndpoint.token });
  if (deps.cluster !== undefined) {
    void app.register(clusterRoutes, { ...services, cluster: deps.cluster.cluster });
  }
  void app.register(livenessRoute);
  const routePlugins: FastifyPluginCallbackTypebox<GatewayServices>[] = [
    verifyKeyRoutes,
    keyWriteRoutes,
    keyReadRoutes,
    keyRbacRoutes,
    apiRoutes,
    ratelimitRoute,
    overrideRoutes,
    permissionRoutes,
    identityRoutes,
    analyticsRoutes,
    migrationRoutes,
    auditRoutes,
    dashboardReadRoutes,
  ];
  for (const routes of routePlugins) {
    void app.register(routes, services);
  }
  void app.register(dashboardRoutes);
  // The v2 API (v2/plugin.ts): its own validation, authentication and error body under /v2.
  void app.register(v2Plugin, { ...services, prefix: "/v2", compiles });
  void app.register(openApiRoute, { document: () => app.swagger() });
  return app;
}

export { bootstrapRootKey } from "./state/bootstrap.js";
export type { BootstrapRootKeyOptions, BootstrapRootKeyResult } from "./state/bootstrap.js";
