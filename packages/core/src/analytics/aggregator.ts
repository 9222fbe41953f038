// The bounded in-memory aggregator of verification analytics: one series per hour x key x tag
// set, counting each outcome. Pure (time comes with each event, pruning takes `nowMs`).
//
// Bounds: at most `seriesMax` regular series. When full, a verification that would open a new
// series is counted in its api's overflow series of that hour (keyId `overflowKeyId`, no tags)
// instead, so totals per api and hour stay exact even when per-key detail is lost. Overflow
// series are bounded by `overflowSeriesMax`; past that, events are counted in `droppedEvents`
// only (reported, never silent). Series older than the retention are removed by `prune`.

import { assert } from "../assert.js";
import { addCounts, emptyCounts, outcomeField } from "./counts.js";
import { hourMs, hourStartMs } from "./time.js";
import type { VerificationEvent, VerificationFilter, VerificationSeries } from "./types.js";

/** Key id of the overflow series. */
export const overflowKeyId = "overflow";
/** Default maximum of regular series (one hour x key x tag set each, ~300 bytes). */
export const analyticsSeriesMaxDefault = 200_000;
/** Default maximum of overflow series (one per api and hour). */
export const analyticsOverflowSeriesMaxDefault = 20_000;
/** Default retention: 90 days. */
export const analyticsRetentionMsDefault = 90 * 86_400_000;

export interface AggregatorOptions {
  seriesMax?: number;
  overflowSeriesMax?: number;
  retentionMs?: number;
}

/** Canonical tag set: sorted, without duplicates. */
export function canonicalTags(tags: readonly string[]): string[] {
  if (tags.length === 0) return [];
  return [...new Set(tags)].sort();
}

function seriesId(hourMs: number, keyId: string, tags: readonly string[]): string {
  return tags.length === 0 ? `${hourMs}\u0000${keyId}` : `${hourMs}\u0000${keyId}\u0000${tags.join("\u0000")}`;
}

export function matchesFilter(series: VerificationSeries, filter: VerificationFilter): boolean {
  if (series.apiId !== filter.apiId) return false;
  // Hours overlapping [startMs, endMs] count: an hour is the finest resolution kept.
  if (series.hourMs + hourMs <= filter.startMs || series.hourMs > filter.endMs) return false;
  if (filter.keyIds !== undefined && filter.keyIds.length > 0 && !filter.keyIds.includes(series.keyId)) return false;
  if (filter.identityId !== undefined && series.identityId !== filter.identityId) return false;
  if (filter.tags !== undefined && filter.tags.length > 0 && !filter.tags.some((tag) => series.tags.includes(tag))) return false;
  return true;
}

export class VerificationAggregator {
  readonly seriesMax: number;
  readonly overflowSeriesMax: number;
  readonly retentionMs: number;
  private readonly regular = new Map<string, VerificationSeries>();
  private readonly overflow = new Map<string, VerificationSeries>();
  /** Events counted nowhere because even the overflow series were full. */
  droppedEvents = 0;
  /** Events counted in an overflow series. */
  overflowedEvents = 0;

  constructor(options: AggregatorOptions = {}) {
    this.seriesMax = options.seriesMax ?? analyticsSeriesMaxDefault;
    this.overflowSeriesMax = options.overflowSeriesMax ?? analyticsOverflowSeriesMaxDefault;
    this.retentionMs = options.retentionMs ?? analyticsRetentionMsDefault;
    assert(this.seriesMax >= 0 && this.overflowSeriesMax >= 0 && this.retentionMs > 0, "VerificationAggregator: valid bounds");
  }

  /** Number of series held (regular and overflow). */
  size(): number {
    return this.regular.size + this.overflow.size;
  }

  record(event: VerificationEvent): void {
    const hour = hourStartMs(event.timeMs);
    const tags = canonicalTags(event.tags);
    const id = seriesId(hour, event.keyId, tags);
    let series = this.regular.get(id);
    if (series === undefined) {
      if (this.regular.size < this.seriesMax) {
        series = { hourMs: hour, keyId: event.keyId, apiId: event.apiId, identityId: event.identityId, tags, counts: emptyCounts() };
        this.regular.set(id, series);
      } else {
        series = this.overflowSeries(hour, event.apiId);
        if (series === undefined) {
          this.droppedEvents++;
          return;
        }
        this.overflowedEvents++;
      }
    }
    series.counts[outcomeField(event.outcome)]++;
  }

  private overflowSeries(hourMs: number, apiId: string): VerificationSeries | undefined {
    const id = `${hourMs}\u0000${apiId}`;
    let series = this.overflow.get(id);
    if (series === undefined) {
      if (this.overflow.size >= this.overflowSeriesMax) return undefined;
      series = { hourMs, keyId: overflowKeyId, apiId, identityId: null, tags: [], counts: emptyCounts() };
      this.overflow.set(id, series);
    }
    return series;
  }

  /** Removes series whose hour ended before `nowMs - retentionMs`. */
  prune(nowMs: number): number {
    const oldestHourMs = hourStartMs(nowMs - this.retentionMs);
    let removed = 0;
    for (const map of [this.regular, this.overflow]) {
      for (const [id, series] of map) {
        if (series.hourMs < oldestHourMs) {
          map.delete(id);
          removed++;
        }
      }
    }
    return removed;
  }

  /** Copies of the series matching `filter` (the raw answer a peer ships). */
  select(filter: VerificationFilter): VerificationSeries[] {
    const selected: VerificationSeries[] = [];
    for (const map of [this.regular, this.overflow]) {
      for (const series of map.values()) {
        if (matchesFilter(series, filter)) selected.push(copySeries(series));
      }
    }
    return selected;
  }

  /** Every series (copies), for persistence. */
  snapshot(): VerificationSeries[] {
    return [...this.regular.values(), ...this.overflow.values()].map(copySeries);
  }

  /** Adds persisted series back (counts add up with what is already held; bounds still apply). */
  restore(series: readonly VerificationSeries[]): void {
    for (const item of series) {
      const tags = canonicalTags(item.tags);
      const overflow = item.keyId === overflowKeyId;
      const map = overflow ? this.overflow : this.regular;
      const id = overflow ? `${item.hourMs}\u0000${item.apiId}` : seriesId(item.hourMs, item.keyId, tags);
      const existing = map.get(id);
      if (existing !== undefined) {
        addCounts(existing.counts, item.counts);
        continue;
      }
      if (map.size >= (overflow ? this.overflowSeriesMax : this.seriesMax)) {
        const spill = this.overflowSeries(item.hourMs, item.apiId);
        if (spill === undefined) this.droppedEvents++;
        else addCounts(spill.counts, item.counts);
        continue;
      }
      map.set(id, { ...copySeries(item), tags });
    }
  }
}

export function copySeries(series: VerificationSeries): VerificationSeries {
  return { ...series, tags: [...series.tags], counts: { ...series.counts } };
}
