// Answers a verification query from raw series (one node's, or several nodes' merged):
// filter, group by time bucket / key / identity / tag set / single tag, order and limit.

import { addSeriesMeasures, canonicalTags, copySeries, matchesFilter } from "./aggregator.js";
import { addCounts, emptyCounts, totalOf } from "./counts.js";
import { dayStartMs, hourStartMs, monthStartMs } from "./time.js";
import type { AnalyticsGroupBy, VerificationQuery, VerificationRow, VerificationSeries } from "./types.js";

/** Rows an answer may hold at most (the v1 `limit` is capped here). */
export const analyticsRowsMax = 10_000;

function seriesKey(series: VerificationSeries): string {
  return `${series.hourMs}\u0000${series.keyId}\u0000${canonicalTags(series.tags).join("\u0000")}`;
}

/**
 * Combines two nodes' series: the same hour x key x tag set adds its counts. Pure, commutative
 * and associative (as a multiset of series), so a cluster can fold any number of answers.
 */
export function mergeVerificationSeries(
  a: readonly VerificationSeries[],
  b: readonly VerificationSeries[],
): VerificationSeries[] {
  const merged = new Map<string, VerificationSeries>();
  for (const series of [...a, ...b]) {
    const key = seriesKey(series);
    const existing = merged.get(key);
    if (existing === undefined) merged.set(key, { ...copySeries(series), tags: canonicalTags(series.tags) });
    else addSeriesMeasures(existing, series);
  }
  return [...merged.values()].sort(compareSeries);
}

function compareSeries(a: VerificationSeries, b: VerificationSeries): number {
  if (a.hourMs !== b.hourMs) return a.hourMs - b.hourMs;
  const keyA = seriesKey(a);
  const keyB = seriesKey(b);
  return keyA < keyB ? -1 : keyA > keyB ? 1 : 0;
}

function timeBucket(groupBy: readonly AnalyticsGroupBy[], hourMs: number): number | undefined {
  if (groupBy.includes("hour")) return hourStartMs(hourMs);
  if (groupBy.includes("day")) return dayStartMs(hourMs);
  if (groupBy.includes("month")) return monthStartMs(hourMs);
  return undefined;
}

export function queryVerifications(series: readonly VerificationSeries[], query: VerificationQuery): VerificationRow[] {
  const groups = new Map<string, VerificationRow>();
  const byTag = query.groupBy.includes("tag");
  for (const item of series) {
    if (!matchesFilter(item, query)) continue;
    const time = timeBucket(query.groupBy, item.hourMs);
    const tagValues: Array<string | undefined> = byTag ? (item.tags.length === 0 ? [] : item.tags) : [undefined];
    for (const tag of tagValues) {
      const parts: unknown[] = [time];
      if (query.groupBy.includes("key")) parts.push(item.keyId);
      if (query.groupBy.includes("identity")) parts.push(item.identityId);
      if (query.groupBy.includes("tags")) parts.push(item.tags);
      if (byTag) parts.push(tag);
      const groupKey = JSON.stringify(parts);
      let row = groups.get(groupKey);
      if (row === undefined) {
        row = { ...emptyCounts(), total: 0 };
        if (time !== undefined) row.time = time;
        if (query.groupBy.includes("key")) row.keyId = item.keyId;
        if (query.groupBy.includes("identity")) row.identityId = item.identityId;
        if (query.groupBy.includes("tags")) row.tags = [...item.tags];
        if (tag !== undefined) row.tag = tag;
        groups.set(groupKey, row);
      }
      addCounts(row, item.counts);
      row.total = totalOf(row);
    }
  }
  const rows = [...groups.values()];
  const orderBy = query.orderBy ?? "time";
  const direction = query.order === "desc" ? -1 : 1;
  const value = (row: VerificationRow): number =>
    orderBy === "time" ? (row.time ?? 0) : orderBy === "total" ? row.total : row[orderBy];
  rows.sort((a, b) => direction * (value(a) - value(b)) || (a.time ?? 0) - (b.time ?? 0));
  const limit = Math.min(query.limit ?? analyticsRowsMax, analyticsRowsMax);
  return rows.slice(0, limit);
}
