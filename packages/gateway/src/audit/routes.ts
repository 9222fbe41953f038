// GET /v1/audit.listLogs: the audit log of admin writes, newest first, with filters and cursor
// pagination; root keys holding `*` or `audit.*.read`. The v2 form (POST /v2/audit.listLogs, the
// same fields in the body) is src/v2/routes/audit.ts, calling listAuditLogs.
import { queryAudit, ROOT_PERMISSION, type AuditEntry } from "@keyraft/core";
import type { FastifyPluginCallbackTypebox } from "@fastify/type-provider-typebox";
import { anyOf, authenticate, type RootKeyDeps } from "../auth/root-key.js";
import type { GatewayServices } from "../services.js";
import { auditRetentionMs } from "./config.js";
import {
  auditListQuery,
  auditListResponse,
  auditPageEntriesDefault,
  type AuditListQuery,
  type AuditLog,
} from "./schemas.js";

export const auditReadPermission = "audit.*.read";
export const auditListPath = "/v1/audit.listLogs";

/** The API form of an entry. */
export function auditLogOf(entry: AuditEntry): AuditLog {
  return {
    id: `audit_${entry.seq}`,
    time: entry.atMs,
    actor: entry.actorKeyId === null ? { type: "system", id: null } : { type: "key", id: entry.actorKeyId },
    action: entry.action,
    targetIds: entry.targetIds,
    requestId: entry.requestId,
    changes: entry.changes,
  };
}

/** The services the audit routes use (registered by app.ts with GatewayServices). */
export type AuditRoutesDeps = Pick<GatewayServices, "auditRetentionDays"> & RootKeyDeps;

/** One page of the audit log for a listLogs request (v1 query or v2 body alike). */
export function listAuditLogs(deps: AuditRoutesDeps, query: AuditListQuery): { logs: AuditLog[]; cursor?: string } {
  const page = queryAudit(deps.state.audit, {
    ...(query.actorId === undefined ? {} : { actorKeyId: query.actorId }),
    ...(query.targetId === undefined ? {} : { targetId: query.targetId }),
    ...(query.action === undefined ? {} : { action: query.action }),
    ...(query.start === undefined ? {} : { sinceMs: query.start }),
    ...(query.end === undefined ? {} : { untilMs: query.end }),
    ...(query.cursor === undefined ? {} : { beforeSeq: Number(query.cursor) }),
    limit: query.limit ?? auditPageEntriesDefault,
    oldestKeptMs: deps.nowMs() - auditRetentionMs(deps.auditRetentionDays),
  });
  return {
    logs: page.entries.map(auditLogOf),
    ...(page.cursor === null ? {} : { cursor: String(page.cursor) }),
  };
}

export const auditRoutes: FastifyPluginCallbackTypebox<AuditRoutesDeps> = (app, deps, done) => {
  app.get(
    auditListPath,
    {
      schema: {
        summary: "List audit log entries of admin writes, newest first",
        tags: ["audit"],
        querystring: auditListQuery,
        response: auditListResponse,
      },
    },
    async (request, reply) => {
      await authenticate(deps, request, anyOf(ROOT_PERMISSION, auditReadPermission));
      return reply.send(listAuditLogs(deps, request.query));
    },
  );
  done();
};
