// The audit log: appended to while commands apply (recordAudit), read newest first by listLogs
// (queryAudit). Bounded by retention (carried in each command, so every replica drops alike) and
// by auditEntriesMax.
import { assert } from "../assert.js";
import type { KeyCommand } from "../keystate/commands.js";
import type { CommandOk } from "../keystate/outcome.js";
import { describeCommand } from "./describe.js";
import { auditEntriesMax, auditPageEntriesMax } from "./limits.js";
import type { AuditEntry, AuditLogState } from "./types.js";

export function createAuditLog(): AuditLogState {
  return { entries: [], nextSeq: 1 };
}

/** Adds the entry of an applied command that carries an audit context (others leave no entry). */
export function recordAudit(log: AuditLogState, command: KeyCommand, outcome: CommandOk): void {
  const context = command.audit;
  if (context === undefined) return;
  const description = describeCommand(command, outcome);
  if (description === null) return;
  const oldestKeptMs = context.atMs - context.retentionMs;
  let expired = 0;
  while (expired < log.entries.length && log.entries[expired]!.atMs < oldestKeptMs) expired++;
  if (expired > 0) log.entries.splice(0, expired);
  if (log.entries.length >= auditEntriesMax) log.entries.splice(0, log.entries.length - auditEntriesMax + 1);
  log.entries.push({
    seq: log.nextSeq,
    atMs: context.atMs,
    actorKeyId: context.actorKeyId,
    action: description.action,
    targetIds: description.targetIds,
    requestId: context.requestId,
    changes: description.changes,
  });
  log.nextSeq++;
  assert(log.entries.length <= auditEntriesMax, "recordAudit: the log is bounded");
}

export interface AuditFilter {
  actorKeyId?: string;
  /** Entries naming this id among their targets. */
  targetId?: string;
  action?: string;
  /** Inclusive bounds on atMs. */
  sinceMs?: number;
  untilMs?: number;
  /** Entries with seq below this (the `cursor` of the previous page). */
  beforeSeq?: number;
  /** 1..auditPageEntriesMax. */
  limit: number;
  /** Entries older than this are hidden even before a later write drops them (the reader's retention). */
  oldestKeptMs: number;
}

export interface AuditPage {
  entries: AuditEntry[];
  /** The next page's `beforeSeq`, or null when this page reached the oldest match. */
  cursor: number | null;
}

/** Matching entries, newest first. Entries are plain data never changed after they are added. */
export function queryAudit(log: AuditLogState, filter: AuditFilter): AuditPage {
  assert(filter.limit >= 1 && filter.limit <= auditPageEntriesMax, "queryAudit: 1 <= limit <= auditPageEntriesMax");
  const entries: AuditEntry[] = [];
  for (let i = log.entries.length - 1; i >= 0; i--) {
    const candidate = log.entries[i]!;
    if (filter.beforeSeq !== undefined && candidate.seq >= filter.beforeSeq) continue;
    if (!matches(candidate, filter)) continue;
    if (entries.length === filter.limit) return { entries, cursor: entries[entries.length - 1]!.seq };
    entries.push(candidate);
  }
  return { entries, cursor: null };
}

function matches(entry: AuditEntry, filter: AuditFilter): boolean {
  if (entry.atMs < filter.oldestKeptMs) return false;
  if (filter.actorKeyId !== undefined && entry.actorKeyId !== filter.actorKeyId) return false;
  if (filter.action !== undefined && entry.action !== filter.action) return false;
  if (filter.sinceMs !== undefined && entry.atMs < filter.sinceMs) return false;
  if (filter.untilMs !== undefined && entry.atMs > filter.untilMs) return false;
  if (filter.targetId !== undefined && !entry.targetIds.includes(filter.targetId)) return false;
  return true;
}
