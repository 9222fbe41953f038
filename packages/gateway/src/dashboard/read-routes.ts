// Two lists the v1 API lacks and the dashboard needs (keyraft's own endpoints):
//   GET /v1/apis.listApis               the apis this root key may read (`*`, api.*.read_api or api.<id>.read_api)
//   GET /v1/ratelimits.listNamespaces   rate-limit namespaces (`*` or ratelimit.*.read_override)
import { ROOT_API_ID, ROOT_PERMISSION } from "@keyraft/core";
import { Type } from "@sinclair/typebox";
import type { FastifyPluginCallbackTypebox } from "@fastify/type-provider-typebox";
import { anyOf, authenticate, holds, type RootKeyDeps } from "../auth/root-key.js";
import { errorSchema } from "../schemas/common.js";

const errors = { "4xx": errorSchema, "5xx": errorSchema };

const listApisResponse = {
  200: Type.Object({
    apis: Type.Array(Type.Object({ id: Type.String(), name: Type.String(), keys: Type.Integer() })),
  }),
  ...errors,
};

const listNamespacesResponse = {
  200: Type.Object({
    namespaces: Type.Array(Type.Object({ id: Type.String(), name: Type.String(), overrides: Type.Integer() })),
  }),
  ...errors,
};

export const dashboardReadRoutes: FastifyPluginCallbackTypebox<RootKeyDeps> = (app, deps, done) => {
  const { state } = deps;
  app.get(
    "/v1/apis.listApis",
    {
      schema: { summary: "List the apis this root key may read (keyraft)", tags: ["apis"], response: listApisResponse },
    },
    async (request, reply) => {
      const auth = await authenticate(deps, request);
      const all = holds(auth, ROOT_PERMISSION) || holds(auth, "api.*.read_api");
      const apis = [...state.apis.values()]
        .filter((api) =>
          api.id === ROOT_API_ID ? holds(auth, ROOT_PERMISSION) : all || holds(auth, `api.${api.id}.read_api`),
        )
        .sort((a, b) => a.createdAtMs - b.createdAtMs || (a.id < b.id ? -1 : 1))
        .map((api) => ({ id: api.id, name: api.name, keys: state.keys.countOfApi(api.id) }));
      return reply.send({ apis });
    },
  );
  app.get(
    "/v1/ratelimits.listNamespaces",
    {
      schema: {
        summary: "List the rate-limit namespaces (keyraft)",
        tags: ["ratelimits"],
        response: listNamespacesResponse,
      },
    },
    async (request, reply) => {
      await authenticate(deps, request, anyOf(ROOT_PERMISSION, "ratelimit.*.read_override"));
      const namespaces = [...state.namespaces.values()]
        .sort((a, b) => (a.name < b.name ? -1 : 1))
        .map((namespace) => ({
          id: namespace.id,
          name: namespace.name,
          overrides: state.overrideIdsByNamespace.get(namespace.id)?.size ?? 0,
        }));
      return reply.send({ namespaces });
    },
  );
  done();
};
