// analytics.getVerifications (docs/api-v2.md, "Analytics"): one SELECT of keyraft's SQL subset,
// answered from this node's verification series merged with the cluster's other nodes' (as v1
// analytics are). `api.*.read_analytics` reads every api but api_root (that one needs `*`);
// otherwise the apis of the caller's `api.<apiId>.read_analytics` permissions (an unknown api id
// reads nothing); neither is a 403.

import {
  analyticsRowsMax,
  analyticsSqlFilter,
  mergeVerificationSeries,
  parseAnalyticsQuery,
  ROOT_API_ID,
  runAnalyticsQuery,
  type AnalyticsSqlRefusal,
  type KeyState,
} from "@keyraft/core";
import { Type } from "@sinclair/typebox";
import { anyOf, holds, requirePermissions, type Principal } from "../auth.js";
import { Envelope, ok, v2Responses } from "../envelope.js";
import { principalOf, type V2RoutePlugin } from "../route.js";
import { V2Error } from "../problem.js";
import { isRootAdmin } from "../root-scope.js";
import { Closed } from "../validation.js";

const GetVerificationsBody = Closed({ query: Type.String() });
const Row = Type.Object({}, { additionalProperties: true });

const scopedPermission = /^api\.(.+)\.read_analytics$/;

/** The apis the caller may read (null = all), or the 403. */
function analyticsScope(state: KeyState, principal: Principal): string[] | null {
  // api_root's verifications (the root keys' use) only for `*` holders (root-scope.ts).
  if (isRootAdmin(principal)) return null;
  if (holds(principal, "api.*.read_analytics")) {
    return [...state.apis.keys()].filter((apiId) => apiId !== ROOT_API_ID).sort();
  }
  const apiIds: string[] = [];
  let scoped = false;
  for (const slug of principal.slugs) {
    const match = scopedPermission.exec(slug);
    if (match === null) continue;
    scoped = true;
    if (state.apis.has(match[1]!) && match[1] !== ROOT_API_ID) apiIds.push(match[1]!);
  }
  if (!scoped) requirePermissions(principal, anyOf("api.*.read_analytics", "api.<apiId>.read_analytics"));
  return apiIds.sort();
}

function refusal(answer: AnalyticsSqlRefusal): V2Error {
  return new V2Error(answer.type, answer.message, { errors: [{ location: "body/query", message: answer.message }] });
}

export const analyticsRoutes: V2RoutePlugin = (app, ctx, done) => {
  const deps = ctx;
  app.post(
    "/analytics.getVerifications",
    { schema: { body: GetVerificationsBody, response: v2Responses(Envelope(Type.Array(Row))) } },
    async (request) => {
      const scope = analyticsScope(deps.state, principalOf(request));
      const parsed = parseAnalyticsQuery(request.body.query);
      if (!parsed.ok) throw refusal(parsed);
      // Only apis that do not exist are permitted: nothing to read (upstream answers no rows).
      if (scope !== null && scope.length === 0) return ok(request, []);
      const options = {
        nowMs: deps.nowMs(),
        retentionMs: ctx.analytics.aggregator.retentionMs,
        rowsMax: analyticsRowsMax,
      };
      const filter = analyticsSqlFilter(parsed.statement, scope, options);
      const local = ctx.analytics.select(filter);
      const series =
        deps.verificationPeers === undefined
          ? local
          : mergeVerificationSeries(local, await deps.verificationPeers.fetch(filter));
      const answer = runAnalyticsQuery(parsed.statement, series, options);
      if (!answer.ok) throw refusal(answer);
      return ok(request, answer.rows);
    },
  );
  done();
};
