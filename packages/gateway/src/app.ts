// buildApp(deps): the Fastify instance serving the v1 API. Every route declares its schemas;
// every response, error or not, carries `Unkey-Request-Id`; every error has the v1 body.

import type { CommandOutcome, KeyCommand, KeyState, SlidingWindowLimiter } from "@keyraft/core";
import Fastify, { LogController, type FastifyBaseLogger, type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from "fastify";
import type { Logger } from "pino";
import { createContext } from "./context.js";
import { V1Error, errorBody, type V1ErrorCode } from "./errors.js";
import { registerApiRoutes } from "./routes/apis.js";
import { registerKeyReadRoutes } from "./routes/keys-read.js";
import { registerKeyWriteRoutes } from "./routes/keys-write.js";
import { registerLivenessRoute } from "./routes/liveness.js";
import { registerOverrideRoutes } from "./routes/overrides.js";
import { registerRatelimitRoute } from "./routes/ratelimit.js";
import { registerVerifyRoute } from "./routes/verify-key.js";
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
}

export const requestIdHeader = "Unkey-Request-Id";

function codeForStatus(status: number): V1ErrorCode {
  if (status === 404) return "NOT_FOUND";
  if (status === 405) return "METHOD_NOT_ALLOWED";
  return status >= 500 ? "INTERNAL_SERVER_ERROR" : "BAD_REQUEST";
}

/** Maps any error to (status, code, message, headers) of a v1 error response. */
function describeError(error: FastifyError | V1Error | Error): { status: number; code: V1ErrorCode; message: string; headers?: Record<string, string> } {
  if (error instanceof V1Error) return { status: error.statusCode, code: error.code, message: error.message, headers: { ...error.headers } };
  const fastifyError = error as FastifyError;
  if (fastifyError.validation) return { status: 400, code: "BAD_REQUEST", message: zodStyleMessage(fastifyError.validation as never) };
  if (isStoreError(error, "KEYRAFT_STORE_OVERLOADED")) {
    return { status: 503, code: "INTERNAL_SERVER_ERROR", message: error.message, headers: { "Retry-After": "1" } };
  }
  if (isStoreError(error, "KEYRAFT_STORE_UNENCODABLE")) return { status: 400, code: "BAD_REQUEST", message: error.message };
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
  if (described.status >= 500) request.log.error({ err: error, reqId: request.id }, "request failed");
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
    bodyLimit: deps.bodyLimitBytes,
    genReqId: () => ctx.ids.next("req"),
    requestIdHeader: false,
    return503OnClosing: true,
  });
  app.setValidatorCompiler(validatorCompiler());
  registerJsonParser(app);
  app.setErrorHandler((error: FastifyError, request, reply) => sendError(request, reply, error));
  app.setNotFoundHandler((request, reply) => {
    sendError(request, reply, new V1Error("NOT_FOUND", `route ${request.method} ${request.url.split("?")[0] ?? ""} not found`));
  });
  registerLivenessRoute(app, ctx);
  registerVerifyRoute(app, ctx);
  registerKeyWriteRoutes(app, ctx);
  registerKeyReadRoutes(app, ctx);
  registerApiRoutes(app, ctx);
  registerRatelimitRoute(app, ctx);
  registerOverrideRoutes(app, ctx);
  return app;
}

export { bootstrapRootKey } from "./state/bootstrap.js";
export type { BootstrapRootKeyOptions, BootstrapRootKeyResult } from "./state/bootstrap.js";
