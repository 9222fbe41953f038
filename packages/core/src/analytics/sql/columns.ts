// The tables and columns of keyraft's analytics SQL subset, served from the hourly series
// (docs/api-v2.md, "Analytics"). `key_verifications_v1` is the hourly series expanded into one
// row per verification stamped with its hour; the per_hour/day/month tables are the series
// summed per time bucket and dimension set.

import { outcomeFields } from "../counts.js";
import { dayStartMs, hourStartMs, monthStartMs } from "../time.js";
import type { OutcomeField, VerificationSeries } from "../types.js";
import { AnalyticsSqlError } from "./errors.js";

export type AnalyticsTable = "raw" | "hour" | "day" | "month";

const tables: Record<string, AnalyticsTable> = {
  key_verifications_v1: "raw",
  key_verifications_per_hour_v1: "hour",
  key_verifications_per_day_v1: "day",
  key_verifications_per_month_v1: "month",
};

/** The workspace every keyraft row belongs to. */
export const analyticsWorkspaceId = "ws_keyraft";

const supportedTables = Object.keys(tables).join(", ");

export function analyticsTable(name: string): AnalyticsTable {
  const table = tables[name];
  if (table !== undefined) return table;
  if (name === "key_verifications_per_minute_v1") {
    throw new AnalyticsSqlError(
      "invalid_analytics_table",
      `Table '${name}' is not available in keyraft, which keeps hourly series; use one of ${supportedTables}`,
    );
  }
  throw new AnalyticsSqlError(
    "invalid_analytics_table",
    `Access to table '${name}' is not allowed; keyraft's analytics keep ${supportedTables}`,
  );
}

/** The keyspace id v2 analytics show for an api: `ks_` + the api id's part after `api_`. */
export function keySpaceIdOf(apiId: string): string {
  return apiId.startsWith("api_") ? `ks_${apiId.slice("api_".length)}` : `ks_${apiId}`;
}

const outcomeCodes: Record<OutcomeField, string> = {
  valid: "VALID",
  notFound: "NOT_FOUND",
  forbidden: "FORBIDDEN",
  usageExceeded: "USAGE_EXCEEDED",
  rateLimited: "RATE_LIMITED",
  unauthorized: "UNAUTHORIZED",
  disabled: "DISABLED",
  insufficientPermissions: "INSUFFICIENT_PERMISSIONS",
  expired: "EXPIRED",
};

/**
 * One fact: the verifications of one time bucket x key x identity x outcome x tag set. On the
 * raw table it stands for `count` identical rows (its weight); on the others it is one row.
 */
export interface AnalyticsFact {
  timeMs: number;
  apiId: string;
  keyId: string;
  identityId: string;
  externalId: string;
  outcome: string;
  tags: readonly string[];
  count: number;
  spentCredits: number;
}

function bucketOf(table: AnalyticsTable, hourMs: number): number {
  switch (table) {
    case "raw":
    case "hour":
      return hourStartMs(hourMs);
    case "day":
      return dayStartMs(hourMs);
    case "month":
      return monthStartMs(hourMs);
    default: {
      const unreachable: never = table;
      throw new Error(`bucketOf: unknown table ${String(unreachable)}`);
    }
  }
}

/** The facts of `table` from hourly series (spent credits belong to the VALID outcome: only it spends). */
export function analyticsFacts(table: AnalyticsTable, series: readonly VerificationSeries[]): AnalyticsFact[] {
  const facts = new Map<string, AnalyticsFact>();
  for (const item of series) {
    const timeMs = bucketOf(table, item.hourMs);
    for (const field of outcomeFields) {
      const count = item.counts[field];
      if (count === 0) continue;
      const outcome = outcomeCodes[field];
      const fact: AnalyticsFact = {
        timeMs,
        apiId: item.apiId,
        keyId: item.keyId,
        identityId: item.identityId ?? "",
        externalId: item.externalId ?? "",
        outcome,
        tags: item.tags,
        count,
        spentCredits: field === "valid" ? (item.spentCredits ?? 0) : 0,
      };
      const id = JSON.stringify([timeMs, fact.apiId, fact.keyId, fact.identityId, fact.externalId, outcome, fact.tags]);
      const existing = facts.get(id);
      if (existing === undefined) facts.set(id, fact);
      else {
        existing.count += count;
        existing.spentCredits += fact.spentCredits;
      }
    }
  }
  return [...facts.values()];
}

/** Columns every table has. */
const commonColumns = new Set([
  "time",
  "workspace_id",
  "key_space_id",
  "identity_id",
  "external_id",
  "key_id",
  "outcome",
  "tags",
  "source",
  "app_id",
  "spent_credits",
]);
/** Columns of the raw table upstream that keyraft does not record. */
const unrecordedColumns = new Set(["request_id", "region", "latency"]);

/** Throws for a column the table does not have. */
export function checkColumn(table: AnalyticsTable, name: string): void {
  if (commonColumns.has(name)) return;
  if (name === "count" && table !== "raw") return;
  if (unrecordedColumns.has(name))
    throw new AnalyticsSqlError("invalid_analytics_query", `Unknown column '${name}': keyraft does not record it`);
  throw new AnalyticsSqlError(
    "invalid_analytics_query",
    `Unknown column '${name}'; the columns are ${[...commonColumns].join(", ")}${table === "raw" ? "" : ", count"}`,
  );
}
