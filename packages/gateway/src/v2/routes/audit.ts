// POST /v2/audit.listLogs: the v2 form of GET /v1/audit.listLogs (src/audit/routes.ts), the same
// filters in the body and the same entries (listAuditLogs), newest first, in the paginated
// envelope. The cursor is the audit log's own (pass the previous page's `pagination.cursor`
// back as is): entries are ordered by their position in the log, not by id.

import { okPage, PaginatedEnvelope, v2Responses } from "../envelope.js";
import { auditReadPermission, listAuditLogs } from "../../audit/routes.js";
import { auditListQuery, auditLogSchema } from "../../audit/schemas.js";
import { requirePermissions } from "../auth.js";
import { principalOf, type V2RoutePlugin } from "../route.js";
import { Closed } from "../validation.js";

const ListLogsBody = Closed(auditListQuery.properties);

export const auditListPathV2 = "/audit.listLogs";

export const auditRoutesV2: V2RoutePlugin = (app, ctx, done) => {
  app.post(
    auditListPathV2,
    { schema: { body: ListLogsBody, response: v2Responses(PaginatedEnvelope(auditLogSchema)) } },
    (request) => {
      // `*` is granted by requirePermissions itself (v2/auth.ts).
      requirePermissions(principalOf(request), auditReadPermission);
      const page = listAuditLogs(ctx, request.body);
      return okPage(
        request,
        page.logs,
        page.cursor === undefined ? { hasMore: false } : { hasMore: true, cursor: page.cursor },
      );
    },
  );
  done();
};
