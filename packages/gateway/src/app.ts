// buildApp(deps): the Fastify instance serving the v1 API. Every route declares its schemas;
// every response, error or not, carries `Unkey-Request-Id`; every error has the v1 body.

import type { CommandOutcome, KeyCommand, KeyState, SlidingWindowLimiter } from "@keyraft/core";
import Fastify, {
  LogController,
  type FastifyBaseLogger,
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
} from "fastify";
import type { RequestListener, Server } from "node:http";
import type { Logger } from "pino";
import type { VerificationPeers } from "./analytics/peers.js";
import type { ClusterRateLimits } from "./counters/ratelimit/cluster-limits.js";
import type { VerificationRecorder } from "./analytics/recorder.js";
import type { CreditSpender } from "./counters/credits/lease-spender.js";
import { createContext } from "./context.js";
import { V1Error, errorBody, type V1ErrorCode } from "./errors.js";
import swagger from "@fastify/swagger";
import { registerAnalyticsRoutes } from "./routes/analytics.js";
import { registerApiRoutes } from "./routes/apis.js";
import { registerIdentityRoutes } from "./routes/identities.js";
import { registerKeyRbacRoutes } from "./routes/keys-rbac.js";
import { registerMigrationRoutes } from "./routes/migrations.js";
import { registerPermissionRoutes } from "./routes/permissions.js";
import { openApiOptions, registerOpenApiRoute } from "./openapi/document.js";
import { registerKeyReadRoutes } from "./routes/keys-read.js";
import { registerKeyWriteRoutes } from "./routes/keys-write.js";
import { registerLivenessRoute } from "./routes/liveness.js";
import { registerOverrideRoutes } from "./routes/overrides.js";
import { registerRatelimitRoute } from "./routes/ratelimit.js";
import { registerVerifyRoute } from "./routes/verify-key.js";
import { requestLoggerFactory } from "./logger.js";
import { isStoreError } from "./store/errors.js";
import type { CommandLog, CounterDurability } from "./store/types.js";
import { validatorCompiler } from "./validation/ajv.js";
import { registerJsonParser } from "./validation/json-body.js";
import { zodStyleMessage } from "./validation/messages.js";

/** Default largest request body (1 MiB); bigger bodies get 413 with the v1 error body. */
export const bodyLimitBytesDefault = 1_048_576;

export interface AppDeps {
  logger: Logger;
  /** The live key state; changed only by `commandLog` applying commands. */
  state: KeyState;
  /** Orders, applies (synchronously, in append) and makes durable every admin write. */
  commandLog: CommandLog<KeyCommand, CommandOutcome>;
  limiter: SlidingWindowLimiter;
  counterDurability: CounterDurability;
  nowMs(): number;
  randomBytes(length: number): Uint8Array;
  bodyLimitBytes: number;
  /** The HTTP server to listen with (timeouts, connection cap, TLS: http-server.ts); absent = Fastify's own (tests inject). */
  serverFactory?: (handler: RequestListener) => Server;
  /** Verification analytics of this node; buildApp creates one when absent (main.ts passes its own to save it on shutdown). */
  analytics?: VerificationRecorder;
  /** The cluster's other nodes for analytics queries; absent = this node only. */
  verificationPeers?: VerificationPeers;
  /** Credit leases of this node (counters/credits); absent = every credit spend is a log entry. */
  creditLeases?: CreditSpender;
  /** Rate limits across the cluster (counters/ratelimit); absent = judged here only. */
  rateLimits?: ClusterRateLimits;
}

export const requestIdHeader = "Unkey-Request-Id";

function codeForStatus(status: number): V1ErrorCode {
  if (status === 404) return "NOT_FOUND";
  if (status === 405) return "METHOD_NOT_ALLOWED";
  return status >= 500 ? "INTERNAL_SERVER_ERROR" : "BAD_REQUEST";
}

/** Maps any error to (status, code, message, headers) of a v1 error response. */
function describeError(error: FastifyError | V1Error | Error): {
  status: number;
  code: V1ErrorCode;
  message: string;
  headers?: Record<string, string>;
} {
  if (error instanceof V1Error)
    return { status: error.statusCode, code: error.code, message: error.message, headers: { ...error.headers } };
  const fastifyError = error as FastifyError;
  if (fastifyError.validation)
    return { status: 400, code: "BAD_REQUEST", message: zodStyleMessage(fastifyError.validation as never) };
  if (isStoreError(error, "KEYRAFT_STORE_OVERLOADED")) {
    return { status: 503, code: "INTERNAL_SERVER_ERROR", message: error.message, headers: { "Retry-After": "1" } };
  }
  if (isStoreError(error, "KEYRAFT_STORE_UNENCODABLE"))
    return { status: 400, code: "BAD_REQUEST", message: error.message };
  const status = fastifyError.statusCode;
  if (typeof status === "number" && status >= 400 && status < 500) {
    if (fastifyError.code === "FST_ERR_CTP_INVALID_MEDIA_TYPE") {
      return { status: 400, code: "BAD_REQUEST", message: "Unsupported Media Type: send the body as application/json" };
    }
    if (fastifyError.code === "FST_ERR_CTP_BODY_TOO_LARGE") {
      return { status: 413, code: "BAD_REQUEST", message: "the request body is larger than the limit" };
    }
    return { status, code: codeForStatus(status), message: fastifyError.message };
  }
  return { status: 500, code: "INTERNAL_SERVER_ERROR", message: "internal server error" };
}

function sendError(request: FastifyRequest, reply: FastifyReply, error: Error): void {
  const described = describeError(error);
  // 503s (overload, shutdown) are expected operating states, not failures worth an error line.
  if (described.status >= 500 && described.status !== 503)
    request.log.error({ err: error, reqId: request.id }, "request failed");
  reply.code(described.status).header(requestIdHeader, request.id);
  for (const [name, value] of Object.entries(described.headers ?? {})) reply.header(name, value);
  void reply.send(errorBody(described.code, described.message, request.id));
}

export function buildApp(deps: AppDeps): FastifyInstance {
  const ctx = createContext(deps);
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
    genReqId: () => ctx.ids.next("req"),
    requestIdHeader: false,
    // Requests arriving while the server closes get the v1 error body (below), not Fastify's.
    return503OnClosing: false,
    ...(deps.serverFactory === undefined ? {} : { serverFactory: deps.serverFactory }),
  });
  app.setValidatorCompiler(validatorCompiler());
  registerJsonParser(app);
  app.setErrorHandler((error: FastifyError, request, reply) => sendError(request, reply, error));
  app.setNotFoundHandler((request, reply) => {
    sendError(
      request,
      reply,
      new V1Error("NOT_FOUND", `route ${request.method} ${request.url.split("?")[0] ?? ""} not found`),
    );
  });
  let closing = false;
  app.addHook("preClose", (done) => {
    closing = true;
    done();
  });
  app.addHook("onRequest", (request, reply, done) => {
    if (!closing) {
      done();
      return;
    }
    reply.header("Connection", "close");
    done(shuttingDown());
  });
  ctx.analytics.start();
  app.addHook("onClose", (_instance, done) => {
    ctx.analytics.stop();
    done();
  });
  // The OpenAPI document is generated from the route schemas (registered after the plugin so
  // its onRoute hook sees every route).
  void app.register(swagger, openApiOptions);
  void app.register(async (routes) => {
    registerLivenessRoute(routes, ctx);
    registerVerifyRoute(routes, ctx);
    registerKeyWriteRoutes(routes, ctx);
    registerKeyReadRoutes(routes, ctx);
    registerKeyRbacRoutes(routes, ctx);
    registerApiRoutes(routes, ctx);
    registerRatelimitRoute(routes, ctx);
    registerOverrideRoutes(routes, ctx);
    registerPermissionRoutes(routes, ctx);
    registerIdentityRoutes(routes, ctx);
    registerAnalyticsRoutes(routes, ctx);
    registerMigrationRoutes(routes, ctx);
    registerOpenApiRoute(routes, app);
  });
  return app;
}

/** The answer to a request that arrives while the server shuts down: retry elsewhere. */
function shuttingDown(): V1Error {
  return new V1Error("INTERNAL_SERVER_ERROR", "the server is shutting down; retry on another node", {
    statusCode: 503,
    headers: { "Retry-After": "1" },
  });
}

export { bootstrapRootKey } from "./state/bootstrap.js";
export type { BootstrapRootKeyOptions, BootstrapRootKeyResult } from "./state/bootstrap.js";
