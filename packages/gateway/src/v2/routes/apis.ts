// apis.createApi, apis.getApi, apis.deleteApi. Permission checks come before the lookup (upstream);
// deleting an api deletes its keys, as v1 does (docs/api-v2.md); api_root is protected (412).

import type { KeyRecord, KeyState } from "@keyraft/core";
import { Type } from "@sinclair/typebox";
import { allOf, anyOf, requirePermissions, satisfies } from "../auth.js";
import { EmptyData, Envelope, ok, okPage, PaginatedEnvelope, v2Responses } from "../envelope.js";
import { byId, pageById } from "../pagination.js";
import { KeyResponse, keyView } from "../schemas/key.js";
import { principalOf, type V2RoutePlugin } from "../route.js";
import { V2Error } from "../problem.js";
import { requireRootApiAdmin } from "../root-scope.js";
import { submitV2 } from "../submit.js";
import { Closed } from "../validation.js";
import { ApiIdLookup, PageLimit } from "../schemas/common.js";

const CreateApiBody = Closed({ name: Type.String({ minLength: 3, maxLength: 256 }) });
const GetApiBody = Closed({ apiId: ApiIdLookup });

const ListKeysBody = Closed({
  apiId: Type.String({ minLength: 1, maxLength: 255 }),
  limit: Type.Optional(PageLimit(100)),
  cursor: Type.Optional(Type.String({ maxLength: 1024 })),
  externalId: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
  decrypt: Type.Optional(Type.Boolean({ default: false })),
  revalidateKeysCache: Type.Optional(Type.Boolean({ default: false })),
});

/** The api's keys (of one identity when given), by id. */
function keysOfApi(state: KeyState, apiId: string, identityId: string | undefined): KeyRecord[] {
  const keys: KeyRecord[] = [];
  for (const keyId of state.keys.idsOfApi(apiId)) {
    const key = state.keys.get(keyId);
    if (key !== undefined && (identityId === undefined || key.identityId === identityId)) keys.push(key);
  }
  return keys.sort(byId);
}

const apiNotFound = () => new V2Error("api_not_found", "The requested API does not exist or has been deleted.");

export const apiRoutes: V2RoutePlugin = (app, ctx, done) => {
  const deps = ctx;

  app.post(
    "/apis.createApi",
    { schema: { body: CreateApiBody, response: v2Responses(Envelope(Type.Object({ apiId: Type.String() }))) } },
    async (request) => {
      requirePermissions(principalOf(request), "api.*.create_api");
      const outcome = await submitV2(ctx, request, {
        type: "createApi",
        apiId: ctx.ids.next("api"),
        name: request.body.name,
        nowMs: deps.nowMs(),
      });
      return ok(request, { apiId: outcome.id ?? "" });
    },
  );

  app.post(
    "/apis.getApi",
    {
      schema: {
        body: GetApiBody,
        response: v2Responses(Envelope(Type.Object({ id: Type.String(), name: Type.String() }))),
      },
    },
    (request) => {
      const { apiId } = request.body;
      const principal = principalOf(request);
      requirePermissions(principal, anyOf("api.*.read_api", `api.${apiId}.read_api`));
      requireRootApiAdmin(principal, apiId);
      const api = deps.state.apis.get(apiId);
      if (api === undefined) throw apiNotFound();
      return ok(request, { id: api.id, name: api.name });
    },
  );

  app.post(
    "/apis.deleteApi",
    { schema: { body: GetApiBody, response: v2Responses(Envelope(EmptyData)) } },
    async (request) => {
      const { apiId } = request.body;
      const principal = principalOf(request);
      requirePermissions(principal, anyOf("api.*.delete_api", `api.${apiId}.delete_api`));
      requireRootApiAdmin(principal, apiId);
      if (!deps.state.apis.has(apiId)) throw apiNotFound();
      await submitV2(ctx, request, { type: "deleteApi", apiId }, { notFound: "api_not_found" });
      return ok(request, {});
    },
  );
  app.post(
    "/apis.listKeys",
    { schema: { body: ListKeysBody, response: v2Responses(PaginatedEnvelope(KeyResponse)) } },
    (request) => {
      const { apiId, limit, cursor, externalId, decrypt } = request.body;
      if (!deps.state.apis.has(apiId)) throw apiNotFound();
      // A root key that may not read the api's keys learns nothing, not even that the api exists.
      const read = allOf(
        anyOf("api.*.read_key", `api.${apiId}.read_key`),
        anyOf("api.*.read_api", `api.${apiId}.read_api`),
      );
      const principal = principalOf(request);
      if (!satisfies(principal, read)) throw apiNotFound();
      requireRootApiAdmin(principal, apiId);
      if (decrypt === true) throw new V2Error("precondition_failed", "Vault hasn't been set up.");
      let identityId: string | undefined;
      if (externalId !== undefined) {
        identityId = deps.state.identityIdByExternalId.get(externalId);
        if (identityId === undefined) return okPage(request, [], { hasMore: false });
      }
      const page = pageById(keysOfApi(deps.state, apiId, identityId), (key) => key.id, cursor, limit ?? 100);
      const nowMs = deps.nowMs();
      return okPage(
        request,
        page.items.map((key) => keyView(deps.state, key, nowMs, deps.creditLeases?.shown)),
        page.pagination,
      );
    },
  );
  done();
};
