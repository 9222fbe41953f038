// The v2 success envelope `{meta:{requestId}, data}` (lists add `pagination`) and the response
// schemas every v2 route declares: 200 = the envelope of its data, every error status = the
// problem body. The schemas serialize the answer too, so a field a route forgot to declare is
// never sent and an optional field left undefined is omitted, never `null`.

import { Type, type Static, type TSchema } from "@sinclair/typebox";
import type { FastifyRequest } from "fastify";

export const Meta = Type.Object({ requestId: Type.String() });

export const ProblemSchema = Type.Object(
  {
    meta: Meta,
    error: Type.Object({
      title: Type.String(),
      detail: Type.String(),
      status: Type.Integer(),
      type: Type.String(),
      errors: Type.Optional(
        Type.Array(Type.Object({ location: Type.String(), message: Type.String(), fix: Type.Optional(Type.String()) })),
      ),
    }),
  },
  { description: "A v2 error (application/problem+json)" },
);

export const Pagination = Type.Object({
  hasMore: Type.Boolean(),
  /** The id of the next page's first item; absent on the last page (the SDK stops on it). */
  cursor: Type.Optional(Type.String()),
});
export type Pagination = Static<typeof Pagination>;

export const Envelope = <T extends TSchema>(data: T) => Type.Object({ meta: Meta, data });
export const PaginatedEnvelope = <T extends TSchema>(item: T) =>
  Type.Object({ meta: Meta, data: Type.Array(item), pagination: Pagination });

/** `data: {}` of the writes that answer nothing (the SDK requires the object). */
export const EmptyData = Type.Object({});

/** Response schemas of a route: its 200 envelope and the problem body for every error status. */
export function v2Responses<T extends TSchema>(ok: T) {
  return { 200: ok, "4xx": ProblemSchema, "5xx": ProblemSchema } as const;
}

/** The success body of `data`. */
export function ok<T>(request: FastifyRequest, data: T): { meta: { requestId: string }; data: T } {
  return { meta: { requestId: request.id }, data };
}

/** The success body of one page. */
export function okPage<T>(
  request: FastifyRequest,
  data: T[],
  pagination: Pagination,
): { meta: { requestId: string }; data: T[]; pagination: Pagination } {
  return { meta: { requestId: request.id }, data, pagination };
}
