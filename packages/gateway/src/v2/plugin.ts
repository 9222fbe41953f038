// The Unkey v2 API (docs/api-v2.md): every route under /v2, registered by buildApp as one
// encapsulated Fastify plugin with prefix "/v2". Inside it every route gets:
//   - request validation with closed objects (unknown fields → 400 invalid_input, errors[]),
//   - root-key authentication after validation (skipped for `config: { v2Public: true }`),
//   - the v2 error body (application/problem+json) for every error, 404 for an unknown path,
//   - (from http/lifecycle.ts, as every route) the `Unkey-Request-Id` header, = meta.requestId.
//
// How to add a v2 route:
//   1. Write a plugin in src/v2/routes/<group>-<topic>.ts:
//        export const myRoutes: V2RoutePlugin = (app, services, done) => {   // (./route.js)
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
//   2. Add it to `v2RoutePlugins` below (route plugins import only ./route.js of this area's
//      plumbing, never this file).
//   3. Test it through app.inject (packages/gateway/test/v2-*.test.ts).

import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import type { FastifyInstance } from "fastify";
import type { GatewayServices } from "../services.js";
import { rememberActor } from "../audit/actor.js";
import { authenticateRootKey } from "./auth.js";
import { sendV2Error } from "./error-handler.js";
import { V2Error } from "./problem.js";
import type { V2RoutePlugin } from "./route.js";
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
import type { DeferredCompiles } from "../validation/deferred-compile.js";

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

/** Registered by app.ts with the gateway's services and `prefix: "/v2"`. */
export function v2Plugin(
  app: FastifyInstance,
  options: GatewayServices & { prefix?: string; compiles?: DeferredCompiles },
  done: (error?: Error) => void,
): void {
  // The route plugins get the services without the prefix (theirs is relative to this one).
  const { prefix: _prefix, compiles, ...services } = options;
  const v2 = app.withTypeProvider<TypeBoxTypeProvider>();
  const compiler = v2ValidatorCompiler();
  v2.setValidatorCompiler(compiles === undefined ? compiler : compiles.validators(compiler));
  v2.decorateRequest("v2Principal", null);
  // After validation (a schema error beats every auth error, as upstream), before the handler.
  v2.addHook("preHandler", (request, _reply, next) => {
    if (request.is404 || request.routeOptions.config.v2Public === true) {
      next();
      return;
    }
    try {
      const principal = authenticateRootKey(services, request);
      request.v2Principal = principal;
      // The writes this request makes are audited as this root key's.
      rememberActor(request, principal.keyId);
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
  for (const plugin of v2RoutePlugins) {
    void v2.register(plugin, services);
  }
  done();
}
