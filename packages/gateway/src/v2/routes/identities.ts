// identities.createIdentity/getIdentity/listIdentities/updateIdentity/deleteIdentity
// (docs/api-v2.md). An identity is addressed by its id or its externalId. Its rate limits are
// shared by all its keys; `autoApply` ones apply to every verification of them. Deleting an
// identity deletes it (its keys keep working without it), as v1 does; listing needs
// identity.*.read_identity.

import type { IdentityRecord, JsonObject, KeyState } from "@keyraft/core";
import { Type } from "@sinclair/typebox";
import { anyOf, requirePermissions } from "../auth.js";
import { Envelope, Meta, ok, okPage, PaginatedEnvelope, v2Responses } from "../envelope.js";
import { checkMetaV2 } from "../keys-common.js";
import { byId, pageById } from "../pagination.js";
import { principalOf, type V2RoutePlugin } from "../route.js";
import { invalidInput, V2Error } from "../problem.js";
import { CreateIdentityBody, IdentityRefBody, ListIdentitiesBody, UpdateIdentityBody } from "../schemas/identities.js";
import { IdentityResponse as Identity, identityView } from "../schemas/identity.js";
import { duplicateName, ratelimitInputs, type RatelimitRequest } from "../schemas/ratelimits.js";
import { submitV2 } from "../submit.js";
import { searchMatcher } from "../search.js";

const identityNotFound = () => new V2Error("identity_not_found", "This identity does not exist.");

function findIdentity(state: KeyState, ref: string): IdentityRecord | undefined {
  return state.identities.get(ref) ?? state.identities.get(state.identityIdByExternalId.get(ref) ?? "");
}

/** The definitions as the key state takes them; a name given twice is a 400. */
function limitInputs(ratelimits: readonly RatelimitRequest[]) {
  const duplicate = duplicateName(ratelimits);
  if (duplicate !== undefined)
    throw invalidInput(`Ratelimit with name '${duplicate}' is already defined in the request`, "body/ratelimits");
  return ratelimitInputs(ratelimits);
}

/** Stored meta: `{}` is none. */
const storedMeta = (meta: JsonObject): JsonObject | null => (Object.keys(meta).length === 0 ? null : meta);

export const identityRoutes: V2RoutePlugin = (app, ctx, done) => {
  const deps = ctx;

  app.post(
    "/identities.createIdentity",
    {
      schema: {
        body: CreateIdentityBody,
        response: v2Responses(Envelope(Type.Object({ identityId: Type.String() }))),
      },
    },
    async (request) => {
      const body = request.body;
      requirePermissions(principalOf(request), "identity.*.create_identity");
      checkMetaV2(body.meta);
      const ratelimits = limitInputs(body.ratelimits ?? []);
      const conflict = () =>
        new V2Error(
          "identity_already_exists",
          `Identity with externalId '${body.externalId}' already exists in this workspace.`,
        );
      if (deps.state.identityIdByExternalId.has(body.externalId)) throw conflict();
      const outcome = await submitV2(
        ctx,
        request,
        {
          type: "createIdentity",
          identityId: ctx.ids.next("id"),
          externalId: body.externalId,
          environment: "default",
          meta: body.meta === undefined ? null : storedMeta(body.meta),
          ratelimits,
          nowMs: deps.nowMs(),
        },
        {
          notFound: "identity_not_found",
          translate: (error) =>
            error.code === "CONFLICT" && error.message.startsWith("Identity with externalId") ? conflict() : undefined,
        },
      );
      return ok(request, { identityId: outcome.id ?? "" });
    },
  );

  app.post(
    "/identities.getIdentity",
    { schema: { body: IdentityRefBody, response: v2Responses(Envelope(Identity)) } },
    (request) => {
      const identity = findIdentity(deps.state, request.body.identity);
      if (identity === undefined) throw identityNotFound();
      requirePermissions(
        principalOf(request),
        anyOf("identity.*.read_identity", `identity.${identity.id}.read_identity`),
      );
      return ok(request, identityView(identity));
    },
  );

  app.post(
    "/identities.listIdentities",
    { schema: { body: ListIdentitiesBody, response: v2Responses(PaginatedEnvelope(Identity)) } },
    (request) => {
      const body = request.body;
      requirePermissions(principalOf(request), "identity.*.read_identity");
      const matches = searchMatcher(body.search);
      const all = [...deps.state.identities.values()]
        .filter((identity) => matches(identity.id, identity.externalId))
        .sort(byId);
      const page = pageById(all, (identity) => identity.id, body.cursor, body.limit);
      return okPage(request, page.items.map(identityView), page.pagination);
    },
  );

  app.post(
    "/identities.updateIdentity",
    { schema: { body: UpdateIdentityBody, response: v2Responses(Envelope(Identity)) } },
    async (request) => {
      const body = request.body;
      requirePermissions(principalOf(request), "identity.*.update_identity");
      const ratelimits = body.ratelimits === undefined ? undefined : limitInputs(body.ratelimits);
      checkMetaV2(body.meta);
      const identity = findIdentity(deps.state, body.identity);
      if (identity === undefined) throw identityNotFound();
      await submitV2(
        ctx,
        request,
        {
          type: "updateIdentity",
          identityId: identity.id,
          ...(body.meta === undefined ? {} : { meta: storedMeta(body.meta) }),
          ...(ratelimits === undefined ? {} : { ratelimits }),
        },
        { notFound: "identity_not_found" },
      );
      const updated = deps.state.identities.get(identity.id);
      if (updated === undefined) throw identityNotFound();
      return ok(request, identityView(updated));
    },
  );

  app.post(
    "/identities.deleteIdentity",
    {
      schema: { body: IdentityRefBody, response: v2Responses(Type.Object({ meta: Meta })) },
      // The official client types this route's errors only as problem+json.
      config: { v2ProblemJsonOnly: true },
    },
    async (request) => {
      requirePermissions(principalOf(request), "identity.*.delete_identity");
      const identity = findIdentity(deps.state, request.body.identity);
      if (identity === undefined) throw identityNotFound();
      await submitV2(
        ctx,
        request,
        { type: "deleteIdentity", identityId: identity.id },
        { notFound: "identity_not_found" },
      );
      return { meta: { requestId: request.id } };
    },
  );
  done();
};
