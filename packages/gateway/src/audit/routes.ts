// GET /v1/audit.listLogs: the audit log of admin writes, newest first, with filters and cursor
// pagination; root keys holding `*` or `audit.*.read`.
import { queryAudit, ROOT_PERMISSION, type AuditEntry } from "@keyraft/core";
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import type { FastifyPluginCallback } from "fastify";
import { requestIdHeader } from "../app.js";
import { anyOf, authenticate } from "../auth/root-key.js";
import type { GatewayContext } from "../context.js";
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

/** One page of the audit log for a listLogs request (v1 query or v2 body alike). */
export function listAuditLogs(ctx: GatewayContext, query: AuditListQuery): { logs: AuditLog[]; cursor?: string } {
  const { deps } = ctx;
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

export const auditRoutes: FastifyPluginCallback<{ ctx: GatewayContext }> = (instance, options, done) => {
  const { ctx } = options;
  const app = instance.withTypeProvider<TypeBoxTypeProvider>();
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
      await authenticate(ctx, request, anyOf(ROOT_PERMISSION, auditReadPermission));
      return reply.header(requestIdHeader, request.id).send(listAuditLogs(ctx, request.query));
    },
  );
  done();
};
