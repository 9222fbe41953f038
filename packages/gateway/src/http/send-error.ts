// Every error as a v1 error response: status, code, message and headers from the error's kind.
// The request id header is already on the reply (the onRequest hook of http/lifecycle.ts runs
// before anything that can fail; a malformed URL never reaches this handler).

import type { FastifyError, FastifyReply, FastifyRequest } from "fastify";
import { V1Error, errorBody, type V1ErrorCode } from "../errors.js";
import { isStoreError } from "../store/errors.js";
import { zodStyleMessage } from "../validation/messages.js";

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

export function sendError(request: FastifyRequest, reply: FastifyReply, error: Error): void {
  const described = describeError(error);
  // 503s (overload, shutdown) are expected operating states, not failures worth an error line.
  if (described.status >= 500 && described.status !== 503)
    request.log.error({ err: error, reqId: request.id }, "request failed");
  reply.code(described.status);
  for (const [name, value] of Object.entries(described.headers ?? {})) reply.header(name, value);
  void reply.send(errorBody(described.code, described.message, request.id));
}
