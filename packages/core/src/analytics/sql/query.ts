// Entry points of the analytics SQL subset: parse once, fetch the series the filter names (this
// node's and the cluster's), then run. Refusals come back as values, never as exceptions.

import type { VerificationSeries } from "../types.js";
import { refusing, type AnalyticsSqlRefusal } from "./errors.js";
import { runAnalyticsSql, type AnalyticsRow, type AnalyticsSqlOptions } from "./evaluate.js";
import { parseAnalyticsSql, type SelectStatement } from "./parser.js";

export function parseAnalyticsQuery(text: string): { ok: true; statement: SelectStatement } | AnalyticsSqlRefusal {
  return refusing(() => ({ ok: true as const, statement: parseAnalyticsSql(text) }));
}

export function runAnalyticsQuery(
  statement: SelectStatement,
  series: readonly VerificationSeries[],
  options: AnalyticsSqlOptions,
): { ok: true; rows: AnalyticsRow[] } | AnalyticsSqlRefusal {
  return refusing(() => ({ ok: true as const, rows: runAnalyticsSql(statement, series, options) }));
}
