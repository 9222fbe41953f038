// apis.createApi, apis.getApi, apis.deleteApi. Permission checks come before the lookup (upstream);
// deleting an api deletes its keys, as v1 does (docs/api-v2.md); api_root is protected (412).

import { Type } from "@sinclair/typebox";
import { anyOf, requirePermissions } from "../auth.js";
import { EmptyData, Envelope, ok, v2Responses } from "../envelope.js";
import { principalOf, type V2RoutePlugin } from "../plugin.js";
import { V2Error } from "../problem.js";
import { submitV2 } from "../submit.js";
import { Closed } from "../validation.js";
import { ApiIdLookup } from "../schemas/common.js";

const CreateApiBody = Closed({ name: Type.String({ minLength: 3, maxLength: 256 }) });
const GetApiBody = Closed({ apiId: ApiIdLookup });

const apiNotFound = () => new V2Error("api_not_found", "The requested API does not exist or has been deleted.");

export const apiRoutes: V2RoutePlugin = (app, { ctx }, done) => {
  const { deps } = ctx;

  app.post(
    "/apis.createApi",
    { schema: { body: CreateApiBody, response: v2Responses(Envelope(Type.Object({ apiId: Type.String() }))) } },
    async (request) => {
      requirePermissions(principalOf(request), "api.*.create_api");
      const outcome = await submitV2(ctx, {
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
      requirePermissions(principalOf(request), anyOf("api.*.read_api", `api.${apiId}.read_api`));
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
      requirePermissions(principalOf(request), anyOf("api.*.delete_api", `api.${apiId}.delete_api`));
      if (!deps.state.apis.has(apiId)) throw apiNotFound();
      await submitV2(ctx, { type: "deleteApi", apiId }, { notFound: "api_not_found" });
      return ok(request, {});
    },
  );
  done();
};
