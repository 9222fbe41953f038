// The Unkey v2 API (docs/api-v2.md): every route under /v2, registered by buildApp as one
// encapsulated Fastify plugin with prefix "/v2". Inside it every route gets:
//   - request validation with closed objects (unknown fields → 400 invalid_input, errors[]),
//   - root-key authentication after validation (skipped for `config: { v2Public: true }`),
//   - the v2 error body (application/problem+json) for every error, 404 for an unknown path,
//   - the `Unkey-Request-Id` header (the body's meta.requestId).
//
// How to add a v2 route:
//   1. Write a plugin in src/v2/routes/<group>-<topic>.ts:
//        export const myRoutes: V2RoutePlugin = (app, { ctx }, done) => {
//          app.post("/group.operation", { schema: { body: MyBody, response: v2Responses(Envelope(MyData)) } },
//            async (request) => {
//              const principal = principalOf(request);             // already authenticated
//              requirePermissions(principal, anyOf("api.*.x", ...)); // 403 with upstream's detail
//              ... throw new V2Error("key_not_found", "...") for an error ...
//              return ok(request, data);                           // {meta:{requestId}, data}
//            });
//          done();
//        };
//      Body schemas are TypeBox `Closed({...})` objects; `request.body` is typed from them.
//   2. Add it to `v2RoutePlugins` below.
//   3. Test it through app.inject (packages/gateway/test/v2-*.test.ts).

import type { FastifyPluginCallbackTypebox, TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { assert } from "@keyraft/core";
import { requestIdHeader } from "../app.js";
import type { GatewayContext } from "../context.js";
import { authenticateRootKey, type Principal } from "./auth.js";
import { sendV2Error } from "./error-handler.js";
import { V2Error } from "./problem.js";
import { apiRoutes } from "./routes/apis.js";
import { keyCreateRoutes } from "./routes/keys-create.js";
import { keyMigrateRoutes } from "./routes/keys-migrate.js";
import { keyRbacRoutes } from "./routes/keys-rbac.js";
import { keyReadRoutes } from "./routes/keys-read.js";
import { keyVerifyRoutes } from "./routes/keys-verify.js";
import { keyWriteRoutes } from "./routes/keys-write.js";
import { livenessRoute } from "./routes/liveness.js";
import { restRoutePlugins } from "./routes/rest.js";
import { v2ValidatorCompiler } from "./validation.js";

export interface V2PluginOptions {
  ctx: GatewayContext;
}

/** A plugin holding v2 routes; registered inside the /v2 prefix. */
export type V2RoutePlugin = FastifyPluginCallbackTypebox<V2PluginOptions>;

declare module "fastify" {
  interface FastifyContextConfig {
    /** A v2 route answering without a root key (liveness). */
    v2Public?: boolean;
  }
  interface FastifyRequest {
    /** The authenticated root key of a v2 request (null on public routes and outside /v2). */
    v2Principal: Principal | null;
  }
}

/** Every v2 route plugin, in registration order. */
export const v2RoutePlugins: readonly V2RoutePlugin[] = [
  livenessRoute,
  apiRoutes,
  keyCreateRoutes,
  keyReadRoutes,
  keyWriteRoutes,
  keyRbacRoutes,
  keyVerifyRoutes,
  keyMigrateRoutes,
  ...restRoutePlugins,
];

/** The principal a non-public v2 route was authenticated as. */
export function principalOf(request: FastifyRequest): Principal {
  const principal = request.v2Principal;
  assert(principal !== null, "principalOf: the route is authenticated");
  return principal;
}

export function v2Plugin(app: FastifyInstance, options: V2PluginOptions, done: (error?: Error) => void): void {
  const { ctx } = options;
  const v2 = app.withTypeProvider<TypeBoxTypeProvider>();
  v2.setValidatorCompiler(v2ValidatorCompiler());
  v2.decorateRequest("v2Principal", null);
  v2.addHook("onRequest", (request, reply, next) => {
    reply.header(requestIdHeader, request.id);
    next();
  });
  // After validation (a schema error beats every auth error, as upstream), before the handler.
  v2.addHook("preHandler", (request, _reply, next) => {
    if (request.routeOptions.config.v2Public === true) {
      next();
      return;
    }
    try {
      request.v2Principal = authenticateRootKey(ctx, request);
      next();
    } catch (error) {
      next(error as Error);
    }
  });
  v2.setErrorHandler((error: Error, request, reply) => sendV2Error(request, reply, error));
  v2.setNotFoundHandler((request, reply) => {
    const path = request.url.split("?")[0] ?? "";
    sendV2Error(request, reply, new V2Error("route_not_found", `No route ${request.method} ${path}.`));
  });
  for (const plugin of v2RoutePlugins) void v2.register(plugin, { ctx });
  done();
}
