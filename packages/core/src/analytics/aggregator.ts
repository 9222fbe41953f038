// The bounded in-memory aggregator of verification analytics: one series per hour x key x tag
// set, counting each outcome. Pure (time comes with each event, pruning takes `nowMs`).
//
// Bounds: at most `seriesMax` regular series. When full, a verification that would open a new
// series is counted in its api's overflow series of that hour (keyId `overflowKeyId`, no tags)
// instead, so totals per api and hour stay exact even when per-key detail is lost. Overflow
// series are bounded by `overflowSeriesMax`; past that, events are counted in `droppedEvents`
// only (reported, never silent). Series older than the retention are removed by `prune`.

import { assert } from "../assert.js";
import { addCounts, emptyCounts, outcomeField, totalOf } from "./counts.js";
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
  if (tags.length <= 1) return [...tags];
  return [...new Set(tags)].sort();
}

/** The tag set as one map key; cheap for the common cases (no tag, one tag, already sorted). */
export function tagSetKey(tags: readonly string[]): string {
  if (tags.length === 0) return "";
  if (tags.length === 1) return tags[0]!;
  for (let i = 1; i < tags.length; i++) {
    if (!(tags[i - 1]! < tags[i]!)) return canonicalTags(tags).join("\u0000");
  }
  return tags.join("\u0000");
}

export function matchesFilter(series: VerificationSeries, filter: VerificationFilter): boolean {
  if (filter.apiId !== undefined && series.apiId !== filter.apiId) return false;
  if (filter.apiIds !== undefined && !filter.apiIds.includes(series.apiId)) return false;
  // Hours overlapping [startMs, endMs] count: an hour is the finest resolution kept.
  if (series.hourMs + hourMs <= filter.startMs || series.hourMs > filter.endMs) return false;
  if (filter.keyIds !== undefined && filter.keyIds.length > 0 && !filter.keyIds.includes(series.keyId)) return false;
  if (filter.identityId !== undefined && series.identityId !== filter.identityId) return false;
  if (filter.tags !== undefined && filter.tags.length > 0 && !filter.tags.some((tag) => series.tags.includes(tag)))
    return false;
  return true;
}

export class VerificationAggregator {
  readonly seriesMax: number;
  readonly overflowSeriesMax: number;
  readonly retentionMs: number;
  /** hourMs -> keyId -> tag set key -> series. Nested so that lookups hash the key id string
   *  the key record holds (V8 caches its hash) instead of a fresh concatenation. */
  private readonly regular = new Map<number, Map<string, Map<string, VerificationSeries>>>();
  private regularSize = 0;
  /** `${hourMs}\u0000${apiId}` -> overflow series. */
  private readonly overflow = new Map<string, VerificationSeries>();
  /** Events counted nowhere because even the overflow series were full. */
  droppedEvents = 0;
  /** Events counted in an overflow series. */
  overflowedEvents = 0;

  constructor(options: AggregatorOptions = {}) {
    this.seriesMax = options.seriesMax ?? analyticsSeriesMaxDefault;
    this.overflowSeriesMax = options.overflowSeriesMax ?? analyticsOverflowSeriesMaxDefault;
    this.retentionMs = options.retentionMs ?? analyticsRetentionMsDefault;
    assert(
      this.seriesMax >= 0 && this.overflowSeriesMax >= 0 && this.retentionMs > 0,
      "VerificationAggregator: valid bounds",
    );
  }

  /** Number of series held (regular and overflow). */
  size(): number {
    return this.regularSize + this.overflow.size;
  }

  record(event: VerificationEvent): void {
    const hour = hourStartMs(event.timeMs);
    const tagKey = tagSetKey(event.tags);
    let byKey = this.regular.get(hour);
    let byTags = byKey?.get(event.keyId);
    let series = byTags?.get(tagKey);
    if (series === undefined) {
      if (this.regularSize < this.seriesMax) {
        series = {
          hourMs: hour,
          keyId: event.keyId,
          apiId: event.apiId,
          identityId: event.identityId,
          externalId: event.externalId ?? null,
          tags: canonicalTags(event.tags),
          counts: emptyCounts(),
          spentCredits: 0,
        };
        if (byKey === undefined) {
          byKey = new Map();
          this.regular.set(hour, byKey);
        }
        if (byTags === undefined) {
          byTags = new Map();
          byKey.set(event.keyId, byTags);
        }
        byTags.set(tagKey, series);
        this.regularSize++;
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
    if (event.spentCredits !== undefined && event.spentCredits > 0)
      series.spentCredits = (series.spentCredits ?? 0) + event.spentCredits;
  }

  private *regularSeries(): Generator<VerificationSeries> {
    for (const byKey of this.regular.values()) for (const byTags of byKey.values()) yield* byTags.values();
  }

  private overflowSeries(hourMs: number, apiId: string): VerificationSeries | undefined {
    const id = `${hourMs}\u0000${apiId}`;
    let series = this.overflow.get(id);
    if (series === undefined) {
      if (this.overflow.size >= this.overflowSeriesMax) return undefined;
      series = {
        hourMs,
        keyId: overflowKeyId,
        apiId,
        identityId: null,
        externalId: null,
        tags: [],
        counts: emptyCounts(),
        spentCredits: 0,
      };
      this.overflow.set(id, series);
    }
    return series;
  }

  /** Removes series whose hour ended before `nowMs - retentionMs`. */
  prune(nowMs: number): number {
    const oldestHourMs = hourStartMs(nowMs - this.retentionMs);
    let removed = 0;
    for (const [hour, byKey] of this.regular) {
      if (hour >= oldestHourMs) continue;
      for (const byTags of byKey.values()) removed += byTags.size;
      this.regular.delete(hour);
    }
    this.regularSize -= removed;
    for (const [id, series] of this.overflow) {
      if (series.hourMs < oldestHourMs) {
        this.overflow.delete(id);
        removed++;
      }
    }
    assert(this.regularSize >= 0, "VerificationAggregator.prune: sizes stay consistent");
    return removed;
  }

  /** Copies of the series matching `filter` (the raw answer a peer ships). */
  select(filter: VerificationFilter): VerificationSeries[] {
    const selected: VerificationSeries[] = [];
    for (const series of this.regularSeries()) if (matchesFilter(series, filter)) selected.push(copySeries(series));
    for (const series of this.overflow.values()) if (matchesFilter(series, filter)) selected.push(copySeries(series));
    return selected;
  }

  /** Every series (copies), for persistence. */
  snapshot(): VerificationSeries[] {
    return [...this.regularSeries(), ...this.overflow.values()].map(copySeries);
  }

  /** Adds persisted series back (counts add up with what is already held; bounds still apply). */
  restore(series: readonly VerificationSeries[]): void {
    for (const item of series) {
      if (item.keyId === overflowKeyId) {
        const spill = this.overflowSeries(item.hourMs, item.apiId);
        if (spill === undefined) this.droppedEvents += totalOf(item.counts);
        else addSeriesMeasures(spill, item);
        continue;
      }
      // Recording an empty event creates (or finds) the series, then the counts are added.
      const before = this.droppedEvents;
      const tags = canonicalTags(item.tags);
      this.record({
        timeMs: item.hourMs,
        keyId: item.keyId,
        apiId: item.apiId,
        identityId: item.identityId,
        externalId: item.externalId ?? null,
        outcome: "VALID",
        tags,
      });
      if (this.droppedEvents !== before) {
        this.droppedEvents += totalOf(item.counts) - 1;
        continue;
      }
      const target =
        this.regular.get(item.hourMs)?.get(item.keyId)?.get(tagSetKey(tags)) ??
        this.overflow.get(`${item.hourMs}\u0000${item.apiId}`);
      assert(target !== undefined, "VerificationAggregator.restore: the series was just recorded");
      target.counts.valid--;
      addSeriesMeasures(target, item);
    }
  }
}

/** Adds the counts and spent credits of `from` into `into` (in place). */
export function addSeriesMeasures(into: VerificationSeries, from: VerificationSeries): void {
  addCounts(into.counts, from.counts);
  const spent = (into.spentCredits ?? 0) + (from.spentCredits ?? 0);
  if (spent > 0 || into.spentCredits !== undefined) into.spentCredits = spent;
}

export function copySeries(series: VerificationSeries): VerificationSeries {
  return { ...series, tags: [...series.tags], counts: { ...series.counts } };
}
