// GET /dashboard: the operator's pages, served by every node from its own files (no CDN). The
// page signs in with a root key kept in the tab's sessionStorage and calls this node's API with
// it in the Authorization header, so it sees and does what that root key may, nothing more.
import { Type } from "@sinclair/typebox";
import type { FastifyPluginCallbackTypebox } from "@fastify/type-provider-typebox";
import type { FastifyReply } from "fastify";
import { loadDashboardAssets, loadDashboardPage, type Asset } from "./assets.js";

export const dashboardPath = "/dashboard";

/** Same-origin only: no inline script, no third-party anything, no framing. */
const securityHeaders = {
  "content-security-policy": [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join("; "),
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
};

function send(reply: FastifyReply, asset: Asset): FastifyReply {
  return reply.headers(securityHeaders).header("cache-control", "no-cache").type(asset.contentType).send(asset.body);
}

export const dashboardRoutes: FastifyPluginCallbackTypebox = (app, _options, done) => {
  const page = loadDashboardPage();
  const assets = loadDashboardAssets();
  const hidden = { hide: true };
  app.get(dashboardPath, { schema: hidden }, (_request, reply) => send(reply, page));
  app.get(`${dashboardPath}/`, { schema: hidden }, (_request, reply) => send(reply, page));
  app.get(
    `${dashboardPath}/assets/*`,
    { schema: { ...hidden, params: Type.Object({ "*": Type.String({ maxLength: 200 }) }) } },
    (request, reply) => {
      const asset = assets.get(request.params["*"]);
      if (asset === undefined) return reply.code(404).type("text/plain; charset=utf-8").send("not found\n");
      return send(reply, asset);
    },
  );
  done();
};
