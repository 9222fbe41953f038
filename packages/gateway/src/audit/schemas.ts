// The audit API's schemas (TypeBox): one entry, the v1 query and the list answer.
import { auditPageEntriesMax } from "@keyraft/core";
import { Type, type Static } from "@sinclair/typebox";
import { errorSchema, textLengthMax, timestampMsMax } from "../schemas/common.js";

/** Entries a page holds when the request names no limit. */
export const auditPageEntriesDefault = 50;

const id = Type.String({ minLength: 1, maxLength: textLengthMax });
const timeMs = Type.Integer({ minimum: 0, maximum: timestampMsMax });

export const auditListQuery = Type.Object(
  {
    actorId: Type.Optional(id),
    targetId: Type.Optional(id),
    action: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
    /** Inclusive bounds on the entry time (Unix ms). */
    start: Type.Optional(timeMs),
    end: Type.Optional(timeMs),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: auditPageEntriesMax, default: auditPageEntriesDefault })),
    /** The `cursor` of the previous page. */
    cursor: Type.Optional(Type.String({ pattern: "^[1-9][0-9]{0,15}$" })),
  },
  { additionalProperties: false },
);
export type AuditListQuery = Static<typeof auditListQuery>;

export const auditLogSchema = Type.Object({
  id: Type.String({ description: "audit_<seq>: the entry's position in the replicated log" }),
  time: Type.Integer({ description: "Unix ms of the request on the node that took it" }),
  actor: Type.Object({
    type: Type.Union([Type.Literal("key"), Type.Literal("system")]),
    id: Type.Union([Type.String(), Type.Null()], { description: "The root key's id (never the key)" }),
  }),
  action: Type.String(),
  targetIds: Type.Array(Type.String()),
  requestId: Type.String(),
  changes: Type.Record(Type.String(), Type.Unknown()),
});
export type AuditLog = Static<typeof auditLogSchema>;

export const auditListResponse = {
  200: Type.Object({
    logs: Type.Array(auditLogSchema),
    cursor: Type.Optional(Type.String({ description: "Pass it back for the next (older) page; absent on the last" })),
  }),
  "4xx": errorSchema,
  "5xx": errorSchema,
};
