// Every error a v2 route (or the parsing before it) raises, answered as a v2 problem document with
// upstream's type and status: schema failures → 400 invalid_input, an oversized body → 413, an
// overloaded store or a closing server → 503 with Retry-After, anything unexpected → 500 (logged).

import type { FastifyError, FastifyReply, FastifyRequest } from "fastify";
import { V1Error } from "../errors.js";
import { isStoreError } from "../store/errors.js";
import { V2Error, errorContentType, problemBody } from "./problem.js";
import { validationProblem } from "./validation.js";

/** Errors the shared v1 code (body parser, command log, shutdown hook) raises, in v2 terms. */
function fromV1Error(error: V1Error): V2Error {
  if (error.statusCode === 503)
    return new V2Error("service_unavailable", error.message, { headers: { ...error.headers } });
  if (error.statusCode === 413) return new V2Error("request_body_too_large", error.message);
  if (error.statusCode === 400)
    return new V2Error("invalid_input", error.message, { errors: [{ location: "body", message: error.message }] });
  return new V2Error("unexpected_error", error.message, { cause: error });
}

/** Maps any error to the V2Error answered for it. */
export function toV2Error(error: Error): V2Error {
  if (error instanceof V2Error) return error;
  const fastifyError = error as FastifyError;
  if (fastifyError.validation) {
    return validationProblem(fastifyError.validation, fastifyError.validationContext ?? "body");
  }
  if (error instanceof V1Error) return fromV1Error(error);
  if (isStoreError(error, "KEYRAFT_STORE_OVERLOADED")) {
    return new V2Error("service_unavailable", error.message, { headers: { "Retry-After": "1" } });
  }
  if (isStoreError(error, "KEYRAFT_STORE_UNENCODABLE")) {
    return new V2Error("invalid_input", error.message, { errors: [{ location: "body", message: error.message }] });
  }
  const status = fastifyError.statusCode;
  if (fastifyError.code === "FST_ERR_CTP_BODY_TOO_LARGE" || status === 413) {
    return new V2Error("request_body_too_large", "The request body is larger than the limit.");
  }
  if (typeof status === "number" && status >= 400 && status < 500) {
    const detail =
      fastifyError.code === "FST_ERR_CTP_INVALID_MEDIA_TYPE"
        ? "The request body is invalid: send it as application/json."
        : "The request body is invalid.";
    return new V2Error("invalid_input", detail, { errors: [{ location: "body", message: fastifyError.message }] });
  }
  return new V2Error("unexpected_error", "An unexpected error occurred.", { cause: error });
}

export function sendV2Error(request: FastifyRequest, reply: FastifyReply, error: Error): FastifyReply {
  const problem = toV2Error(error);
  if (problem.statusCode >= 500 && problem.statusCode !== 503) {
    request.log.error({ err: error, reqId: request.id }, "request failed");
  }
  const problemJsonOnly = request.routeOptions.config.v2ProblemJsonOnly === true;
  reply.code(problem.statusCode).type(errorContentType(problem.statusCode, request.headers.accept, problemJsonOnly));
  for (const [name, value] of Object.entries(problem.headers)) reply.header(name, value);
  return reply.send(problemBody(problem, request.id));
}
