// keys.getVerifications and analytics.getVerifications: real counts (decision 7) from this node's
// aggregator, merged with the cluster's other nodes when `verificationPeers` is wired.

import {
  dayStartMs,
  mergeVerificationSeries,
  queryVerifications,
  ROOT_PERMISSION,
  type AnalyticsGroupBy,
  type AnalyticsOrderBy,
  type KeyRecord,
  type VerificationFilter,
  type VerificationQuery,
  type VerificationSeries,
  keyHasIdentity,
  keyHasOwnerId,
} from "@keyraft/core";
import type { FastifyPluginCallbackTypebox } from "@fastify/type-provider-typebox";
import {
  anyOf,
  authenticate,
  holdsAny,
  requirePermission,
  requireRootAdmin,
  type RootKeyDeps,
} from "../auth/root-key.js";
import { maySeeApiKeys } from "../auth/root-scope.js";
import type { GatewayServices } from "../services.js";
import { badRequest, notFound } from "../errors.js";
import {
  analyticsGroupByValues,
  analyticsVerificationsQuery,
  analyticsVerificationsResponse,
  keyVerificationsQuery,
  keyVerificationsResponse,
} from "../schemas/analytics.js";

/** Default window of keys.getVerifications (upstream): the last 24 hours. */
export const keyVerificationsWindowMsDefault = 86_400_000;
/** Default window of analytics.getVerifications: the last 30 days. */
export const analyticsWindowMsDefault = 30 * 86_400_000;
/** Default rows of analytics.getVerifications. */
export const analyticsRowsDefault = 100;
/** Values one comma-separated list parameter may hold. */
export const analyticsListValuesMax = 1_000;

function splitList(value: string | undefined, field: string): string[] | undefined {
  if (value === undefined) return undefined;
  const values = value
    .split(",")
    .map((part) => part.trim())
    .filter((part) => part !== "");
  if (values.length > analyticsListValuesMax)
    throw badRequest(`${field}: Array must contain at most ${analyticsListValuesMax} element(s)`);
  return values;
}

function parseGroupBy(value: string | undefined): AnalyticsGroupBy[] {
  const values = splitList(value, "groupBy") ?? [];
  const allowed: readonly string[] = analyticsGroupByValues;
  for (const item of values) {
    if (!allowed.includes(item)) {
      throw badRequest(
        `groupBy: Invalid enum value. Expected ${analyticsGroupByValues.map((v) => `'${v}'`).join(" | ")}, received '${item}'`,
      );
    }
  }
  return values as AnalyticsGroupBy[];
}

/** The services these routes use (registered by app.ts with GatewayServices). */
export type AnalyticsRoutesDeps = Pick<GatewayServices, "analytics" | "verificationPeers"> & RootKeyDeps;

export const analyticsRoutes: FastifyPluginCallbackTypebox<AnalyticsRoutesDeps> = (app, deps, done) => {
  /** This node's series for `filter`, merged with the peers' when wired. */
  const collect = async (filter: VerificationFilter): Promise<VerificationSeries[]> => {
    const local = deps.analytics.select(filter);
    if (deps.verificationPeers === undefined) return local;
    return mergeVerificationSeries(local, await deps.verificationPeers.fetch(filter));
  };

  app.get(
    "/v1/keys.getVerifications",
    { schema: { querystring: keyVerificationsQuery, response: keyVerificationsResponse } },
    async (request, reply) => {
      const query = request.query;
      if (query.keyId === undefined && query.ownerId === undefined)
        throw badRequest("keyId or ownerId must be provided");
      // Authentication before any work: an unauthenticated caller never makes this node scan keys.
      const auth = await authenticate(deps, request);
      const mayRead = (apiId: string) =>
        holdsAny(auth, ROOT_PERMISSION, "api.*.read_key", `api.${apiId}.read_key`) && maySeeApiKeys(auth, apiId);
      let keys: KeyRecord[];
      if (query.keyId !== undefined) {
        const key = deps.state.keys.get(query.keyId);
        if (key === undefined) throw notFound(`key ${query.keyId} not found`);
        requirePermission(auth, anyOf(ROOT_PERMISSION, "api.*.read_key", `api.${key.apiId}.read_key`));
        requireRootAdmin(auth, key.apiId);
        keys = [key];
      } else {
        // Only the keys this caller may read: "none found" and "found elsewhere" answer alike, so
        // the answer tells nothing about ownerIds of apis the caller cannot read.
        const ownerId = query.ownerId;
        const identityId = ownerId === undefined ? undefined : deps.state.identityIdByExternalId.get(ownerId);
        keys = [...deps.state.keys.valuesWith(keyHasOwnerId | keyHasIdentity)].filter(
          (key) =>
            (key.ownerId === ownerId || (identityId !== undefined && key.identityId === identityId)) &&
            mayRead(key.apiId),
        );
        if (keys.length === 0) throw notFound("No keys were found to match your query");
      }
      const apiIds = [...new Set(keys.map((key) => key.apiId))].sort();
      const endMs = query.end ?? deps.nowMs();
      const startMs = query.start ?? endMs - keyVerificationsWindowMsDefault;
      const keyIds = keys.map((key) => key.id);
      let series: VerificationSeries[] = [];
      for (const apiId of apiIds)
        series = mergeVerificationSeries(series, await collect({ apiId, startMs, endMs, keyIds }));
      const rows = apiIds.flatMap((apiId) =>
        queryVerifications(series, { apiId, startMs, endMs, keyIds, groupBy: ["day"] }),
      );
      const byDay = new Map<number, { time: number; success: number; rateLimited: number; usageExceeded: number }>();
      for (const row of rows) {
        const time = row.time ?? dayStartMs(startMs);
        const day = byDay.get(time) ?? { time, success: 0, rateLimited: 0, usageExceeded: 0 };
        day.success += row.valid;
        day.rateLimited += row.rateLimited;
        day.usageExceeded += row.usageExceeded;
        byDay.set(time, day);
      }
      const verifications = [...byDay.values()]
        .filter((day) => day.success + day.rateLimited + day.usageExceeded > 0)
        .sort((a, b) => a.time - b.time);
      return reply.send({ verifications });
    },
  );

  app.get(
    "/v1/analytics.getVerifications",
    { schema: { querystring: analyticsVerificationsQuery, response: analyticsVerificationsResponse } },
    async (request, reply) => {
      const query = request.query;
      const groupBy = parseGroupBy(query.groupBy);
      await authenticate(
        deps,
        request,
        anyOf(ROOT_PERMISSION, "api.*.read_analytics", `api.${query.apiId}.read_analytics`),
      );
      if (!deps.state.apis.has(query.apiId)) throw notFound(`api ${query.apiId} not found`);
      let identityId: string | undefined;
      if (query.externalId !== undefined) {
        identityId = deps.state.identityIdByExternalId.get(query.externalId);
        if (identityId === undefined) return reply.send([]);
      }
      const endMs = query.end ?? deps.nowMs();
      const startMs = query.start ?? endMs - analyticsWindowMsDefault;
      if (startMs > endMs) throw badRequest("start: must not be after end");
      const filter: VerificationFilter = {
        apiId: query.apiId,
        startMs,
        endMs,
        keyIds: splitList(query.keyId, "keyId"),
        identityId,
        tags: splitList(query.tag, "tag"),
      };
      const analyticsQuery: VerificationQuery = {
        ...filter,
        groupBy,
        orderBy: query.orderBy,
        order: query.order,
        limit: query.limit ?? analyticsRowsDefault,
      };
      const rows = queryVerifications(await collect(filter), analyticsQuery).map(
        ({ identityId: rowIdentityId, ...row }) => {
          if (rowIdentityId === undefined) return row;
          const identity = rowIdentityId === null ? undefined : deps.state.identities.get(rowIdentityId);
          return {
            ...row,
            identity:
              rowIdentityId === null ? undefined : { id: rowIdentityId, externalId: identity?.externalId ?? "" },
          };
        },
      );
      return reply.send(rows);
    },
  );
  done();
};
