// The hooks every request goes through, wrapped with fastify-plugin so they apply to the whole
// app: the request id header (set here once for every answer), the shutdown answer (503 while
// the server closes), and the v1 error body for every error and unknown route.

import type { FastifyError, FastifyPluginCallback } from "fastify";
import fp from "fastify-plugin";
import { V1Error } from "../errors.js";
import { requestIdHeader } from "./request-id.js";
import { sendError } from "./send-error.js";

const lifecycle: FastifyPluginCallback = (app, _options, done) => {
  let closing = false;
  app.addHook("preClose", (hookDone) => {
    closing = true;
    hookDone();
  });
  // One hook for both (the hot path pays for one hook call).
  app.addHook("onRequest", (request, reply, hookDone) => {
    reply.header(requestIdHeader, request.id);
    if (!closing) {
      hookDone();
      return;
    }
    reply.header("Connection", "close");
    hookDone(shuttingDown());
  });
  app.setErrorHandler((error: FastifyError, request, reply) => sendError(request, reply, error));
  app.setNotFoundHandler((request, reply) => {
    sendError(
      request,
      reply,
      new V1Error("NOT_FOUND", `route ${request.method} ${request.url.split("?")[0] ?? ""} not found`),
    );
  });
  done();
};

export const lifecyclePlugin = fp(lifecycle, { name: "keyraft-lifecycle" });

/** The answer to a request that arrives while the server shuts down: retry elsewhere. */
function shuttingDown(): V1Error {
  return new V1Error("INTERNAL_SERVER_ERROR", "the server is shutting down; retry on another node", {
    statusCode: 503,
    headers: { "Retry-After": "1" },
  });
}
