// ratelimit.setOverride, getOverride, listOverrides, deleteOverride (docs/api-v2.md). Namespaces by
// id or name, never created here (404). getOverride matches as ratelimit.limit does (an identifier
// covered only by a wildcard answers the wildcard override); an unauthorised read answers the same
// 404 as a missing override, so existence does not leak. setOverride on a deleted identifier makes
// it live again; limit 0 is stored (it refuses every request with a cost).

import { resolveOverride, type OverrideRecord } from "@keyraft/core";
import { anyOf, holdsAny, requirePermissions } from "../auth.js";
import { EmptyData, Envelope, ok, okPage, PaginatedEnvelope, v2Responses } from "../envelope.js";
import { findNamespaceId, namespaceNotFound } from "../namespaces.js";
import { pageById } from "../pagination.js";
import { principalOf, type V2RoutePlugin } from "../route.js";
import { V2Error } from "../problem.js";
import { ListOverridesBody, Override, OverrideRefBody, SetOverrideBody } from "../schemas/ratelimit.js";
import { submitV2 } from "../submit.js";
import { Type } from "@sinclair/typebox";

const overrideNotFound = () => new V2Error("ratelimit_override_not_found", "This override does not exist.");

function overrideView(override: OverrideRecord) {
  return {
    overrideId: override.id,
    identifier: override.identifier,
    limit: override.limit,
    duration: override.durationMs,
  };
}

const permission = (action: string, namespaceId: string) =>
  anyOf(`ratelimit.*.${action}`, `ratelimit.${namespaceId}.${action}`);

export const overrideRoutes: V2RoutePlugin = (app, ctx, done) => {
  const deps = ctx;
  const namespaceOf = (namespace: string): string => {
    const id = findNamespaceId(deps.state, namespace);
    if (id === undefined) throw namespaceNotFound();
    return id;
  };

  app.post(
    "/ratelimit.setOverride",
    {
      schema: {
        body: SetOverrideBody,
        response: v2Responses(Envelope(Type.Object({ overrideId: Type.String() }))),
      },
    },
    async (request) => {
      const body = request.body;
      const namespaceId = namespaceOf(body.namespace);
      requirePermissions(principalOf(request), permission("set_override", namespaceId));
      const outcome = await submitV2(
        ctx,
        request,
        {
          type: "setOverride",
          overrideId: ctx.ids.next("rlor"),
          namespaceId,
          identifier: body.identifier,
          limit: body.limit,
          durationMs: body.duration,
          async: null,
          nowMs: deps.nowMs(),
        },
        { notFound: "ratelimit_namespace_not_found" },
      );
      return ok(request, { overrideId: outcome.id ?? "" });
    },
  );

  app.post(
    "/ratelimit.getOverride",
    { schema: { body: OverrideRefBody, response: v2Responses(Envelope(Override)) } },
    (request) => {
      const body = request.body;
      const namespaceId = namespaceOf(body.namespace);
      const override = resolveOverride(deps.state, namespaceId, body.identifier);
      if (override === undefined) throw overrideNotFound();
      if (!holdsAny(principalOf(request), "ratelimit.*.read_override", `ratelimit.${namespaceId}.read_override`))
        throw overrideNotFound();
      return ok(request, overrideView(override));
    },
  );

  app.post(
    "/ratelimit.listOverrides",
    { schema: { body: ListOverridesBody, response: v2Responses(PaginatedEnvelope(Override)) } },
    (request) => {
      const body = request.body;
      const namespaceId = namespaceOf(body.namespace);
      requirePermissions(principalOf(request), permission("read_override", namespaceId));
      const overrides = [...(deps.state.overrideIdsByNamespace.get(namespaceId)?.values() ?? [])]
        .sort()
        .flatMap((id) => {
          const override = deps.state.overrides.get(id);
          return override === undefined ? [] : [override];
        });
      const page = pageById(overrides, (override) => override.id, body.cursor, body.limit);
      return okPage(request, page.items.map(overrideView), page.pagination);
    },
  );

  app.post(
    "/ratelimit.deleteOverride",
    { schema: { body: OverrideRefBody, response: v2Responses(Envelope(EmptyData)) } },
    async (request) => {
      const body = request.body;
      const namespaceId = namespaceOf(body.namespace);
      requirePermissions(principalOf(request), permission("delete_override", namespaceId));
      if (deps.state.overrideIdsByNamespace.get(namespaceId)?.get(body.identifier) === undefined)
        throw overrideNotFound();
      await submitV2(
        ctx,
        request,
        { type: "deleteOverride", namespaceId, identifier: body.identifier },
        { notFound: "ratelimit_override_not_found" },
      );
      return ok(request, {});
    },
  );
  done();
};
