// Requests typed from a route's TypeBox schemas, for handlers written apart from their route
// (one handler serving two paths, or one per kind). Inline handlers get these types from the
// type provider (@fastify/type-provider-typebox) without naming them.

import type { Static, TSchema } from "@sinclair/typebox";
import type { FastifyRequest } from "fastify";

/** A request whose body is the static type of `Body`. */
export type BodyRequest<Body extends TSchema> = FastifyRequest<{ Body: Static<Body> }>;
