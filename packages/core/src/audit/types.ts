// The audit log's records. An entry is derived from a command applied from the replicated log,
// so every replica derives the same entries in the same order (same ids, same fields).

/**
 * Who asked for an admin write, carried inside the command so every replica records the same
 * entry. Set by the node that took the request; never a secret (a root key's id, not the key).
 */
export interface AuditContext {
  /** The root key's id; null for writes the node made itself (the root key bootstrap). */
  actorKeyId: string | null;
  requestId: string;
  /** Wall-clock time of the request on the node that took it (Unix ms). */
  atMs: number;
  /**
   * The proposer's retention (KEYRAFT_AUDIT_RETENTION_DAYS in ms): entries older than
   * `atMs - retentionMs` are dropped when this one is added. In the command so every replica
   * drops the same entries, whatever its own configuration says.
   */
  retentionMs: number;
}

export interface AuditEntry {
  /** Position in the log: 1, 2, 3, ... in apply order (the cursor of listLogs). */
  seq: number;
  atMs: number;
  actorKeyId: string | null;
  /** Dotted `<resource>.<verb>`, e.g. key.create (auditActions). */
  action: string;
  /** Ids of the records the write addressed, the main one first (at most auditTargetIdsMax). */
  targetIds: string[];
  requestId: string;
  /** The fields the write set, by name; never a secret or a hash (metadata only as "set"/null). */
  changes: Record<string, unknown>;
}

/** The audit log inside the key state: entries oldest first. */
export interface AuditLogState {
  entries: AuditEntry[];
  /** The seq of the next entry (never reused, also after retention dropped entries). */
  nextSeq: number;
}
