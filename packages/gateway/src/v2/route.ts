// What a v2 route plugin needs of the v2 plumbing (plugin.ts registers the plugins; they import
// this file, never plugin.ts): its type, and the root key the request was authenticated as.

import type { FastifyPluginCallbackTypebox } from "@fastify/type-provider-typebox";
import type { FastifyRequest } from "fastify";
import { assert } from "@keyraft/core";
import type { GatewayServices } from "../services.js";
import type { Principal } from "./auth.js";

/** A plugin holding v2 routes, registered inside the /v2 prefix with the gateway's services. */
export type V2RoutePlugin = FastifyPluginCallbackTypebox<GatewayServices>;

declare module "fastify" {
  interface FastifyContextConfig {
    /** A v2 route answering without a root key (liveness). */
    v2Public?: boolean;
    /** A v2 route whose errors the official client types only as application/problem+json (problem.ts). */
    v2ProblemJsonOnly?: boolean;
  }
  interface FastifyRequest {
    /** The authenticated root key of a v2 request (null on public routes and outside /v2). */
    v2Principal: Principal | null;
  }
}

/** The principal a non-public v2 route was authenticated as. */
export function principalOf(request: FastifyRequest): Principal {
  const principal = request.v2Principal;
  assert(principal !== null, "principalOf: the route is authenticated");
  return principal;
}
