import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { mergeVerificationSeries, queryVerifications } from "../src/analytics/query.js";
import { VerificationAggregator } from "../src/analytics/aggregator.js";
import type { VerificationSeries } from "../src/analytics/types.js";
import type { VerifyCode } from "../src/verify/types.js";
import { overflowKeyId } from "../src/analytics/aggregator.js";
import { totalOf } from "../src/analytics/counts.js";
import type { VerificationEvent } from "../src/analytics/types.js";

const t0 = Date.UTC(2026, 0, 10, 12, 30);
const hour = 3_600_000;
const event = (overrides: Partial<VerificationEvent> = {}): VerificationEvent => ({
  timeMs: t0,
  keyId: "key_a",
  apiId: "api_1",
  identityId: null,
  outcome: "VALID",
  tags: [],
  ...overrides,
});
const all = { apiId: "api_1", startMs: 0, endMs: Number.MAX_SAFE_INTEGER };

describe("VerificationAggregator", () => {
  it("counts per hour x key x tag set x outcome; tag sets are order-insensitive", () => {
    const aggregator = new VerificationAggregator();
    aggregator.record(event({ tags: ["b", "a"] }));
    aggregator.record(event({ tags: ["a", "b", "a"], outcome: "RATE_LIMITED" }));
    aggregator.record(event({ timeMs: t0 + hour }));
    aggregator.record(event({ keyId: "key_b", outcome: "USAGE_EXCEEDED" }));
    aggregator.record(event({ apiId: "api_2" }));
    const series = aggregator.select(all);
    expect(series).toHaveLength(3);
    const tagged = series.find((item) => item.tags.length === 2)!;
    expect(tagged.tags).toEqual(["a", "b"]);
    expect(tagged.counts.valid).toBe(1);
    expect(tagged.counts.rateLimited).toBe(1);
    expect(aggregator.size()).toBe(4);
  });

  it("when full, new series go to the api's overflow series of that hour; totals stay exact", () => {
    const aggregator = new VerificationAggregator({ seriesMax: 2, overflowSeriesMax: 1 });
    for (let i = 0; i < 10; i++) aggregator.record(event({ keyId: `key_${i}` }));
    const series = aggregator.select(all);
    expect(series.map((item) => item.keyId).sort()).toEqual(["key_0", "key_1", overflowKeyId]);
    expect(series.reduce((sum, item) => sum + totalOf(item.counts), 0)).toBe(10);
    expect(aggregator.overflowedEvents).toBe(8);
    // The single overflow series is taken by this hour: another hour's new series are dropped, counted.
    aggregator.record(event({ keyId: "key_x", timeMs: t0 + hour }));
    expect(aggregator.droppedEvents).toBe(1);
    expect(aggregator.size()).toBe(3);
  });

  it("prunes series older than the retention; snapshot/restore round-trips", () => {
    const aggregator = new VerificationAggregator({ retentionMs: 2 * hour });
    aggregator.record(event({ timeMs: t0 - 5 * hour }));
    aggregator.record(event({ timeMs: t0 }));
    expect(aggregator.prune(t0)).toBe(1);
    const restored = new VerificationAggregator();
    restored.restore(aggregator.snapshot());
    restored.restore(aggregator.snapshot());
    const [only] = restored.select(all);
    expect(only?.counts.valid).toBe(2);
  });
});

describe("queryVerifications", () => {
  const aggregator = new VerificationAggregator();
  const codes: VerifyCode[] = ["VALID", "VALID", "RATE_LIMITED", "USAGE_EXCEEDED"];
  codes.forEach((outcome, i) =>
    aggregator.record(event({ outcome, timeMs: t0 + i * hour, tags: i % 2 === 0 ? ["x"] : ["x", "y"] })),
  );
  aggregator.record(event({ keyId: "key_b", identityId: "id_1", timeMs: t0 + 30 * hour }));
  const series = aggregator.select(all);

  it("groups by day, hour, month and totals without a time grouping", () => {
    const byDay = queryVerifications(series, { ...all, groupBy: ["day"] });
    expect(byDay).toEqual([
      expect.objectContaining({ time: Date.UTC(2026, 0, 10), valid: 2, rateLimited: 1, usageExceeded: 1, total: 4 }),
      expect.objectContaining({ time: Date.UTC(2026, 0, 11), valid: 1, total: 1 }),
    ]);
    expect(queryVerifications(series, { ...all, groupBy: ["hour"] })).toHaveLength(5);
    expect(queryVerifications(series, { ...all, groupBy: ["month"] })).toEqual([
      expect.objectContaining({ time: Date.UTC(2026, 0, 1), total: 5 }),
    ]);
    const [total] = queryVerifications(series, { ...all, groupBy: [] });
    expect(total).toMatchObject({ total: 5, valid: 3 });
    expect(total?.time).toBeUndefined();
  });

  it("filters by key, identity, tag and time range; groups by key, tags and single tag", () => {
    expect(queryVerifications(series, { ...all, keyIds: ["key_b"], groupBy: [] })[0]?.total).toBe(1);
    expect(queryVerifications(series, { ...all, identityId: "id_1", groupBy: ["identity"] })).toEqual([
      expect.objectContaining({ identityId: "id_1", total: 1 }),
    ]);
    expect(queryVerifications(series, { ...all, tags: ["y"], groupBy: [] })[0]?.total).toBe(2);
    expect(
      queryVerifications(series, { ...all, startMs: t0 + 1.5 * hour, endMs: t0 + 2.5 * hour - 1, groupBy: [] })[0]
        ?.total,
    ).toBe(1);
    const byKey = queryVerifications(series, { ...all, groupBy: ["key"], orderBy: "total", order: "desc" });
    expect(byKey.map((row) => [row.keyId, row.total])).toEqual([
      ["key_a", 4],
      ["key_b", 1],
    ]);
    const byTag = queryVerifications(series, { ...all, groupBy: ["tag"], orderBy: "total", order: "desc" });
    expect(byTag.map((row) => [row.tag, row.total])).toEqual([
      ["x", 4],
      ["y", 2],
    ]);
    const byTags = queryVerifications(series, { ...all, groupBy: ["tags"], orderBy: "total" });
    expect(byTags.map((row) => [row.tags?.join(","), row.total]).sort()).toEqual([
      ["", 1],
      ["x", 2],
      ["x,y", 2],
    ]);
    expect(queryVerifications(series, { ...all, groupBy: ["hour"], limit: 2 })).toHaveLength(2);
  });
});

describe("mergeVerificationSeries", () => {
  const seriesArb: fc.Arbitrary<VerificationSeries[]> = fc.array(
    fc.record({
      hourMs: fc.integer({ min: 0, max: 3 }).map((h) => t0 - (t0 % hour) + h * hour),
      keyId: fc.constantFrom("key_a", "key_b"),
      apiId: fc.constant("api_1"),
      identityId: fc.constant(null),
      tags: fc.subarray(["a", "b"]),
      counts: fc.record({
        valid: fc.nat(5),
        notFound: fc.nat(5),
        forbidden: fc.nat(5),
        usageExceeded: fc.nat(5),
        rateLimited: fc.nat(5),
        unauthorized: fc.nat(5),
        disabled: fc.nat(5),
        insufficientPermissions: fc.nat(5),
        expired: fc.nat(5),
      }),
    }),
    { maxLength: 8 },
  );

  it("is commutative and associative and preserves every count; querying merged = summing answers", () => {
    fc.assert(
      fc.property(seriesArb, seriesArb, seriesArb, (a, b, c) => {
        expect(mergeVerificationSeries(a, b)).toEqual(mergeVerificationSeries(b, a));
        expect(mergeVerificationSeries(mergeVerificationSeries(a, b), c)).toEqual(
          mergeVerificationSeries(a, mergeVerificationSeries(b, c)),
        );
        const sum = (list: VerificationSeries[]) => list.reduce((total, item) => total + totalOf(item.counts), 0);
        expect(sum(mergeVerificationSeries(a, b))).toBe(sum(a) + sum(b));
        const q = { ...all, groupBy: [] as const };
        const merged = queryVerifications(mergeVerificationSeries(a, b), q)[0]?.total ?? 0;
        expect(merged).toBe((queryVerifications(a, q)[0]?.total ?? 0) + (queryVerifications(b, q)[0]?.total ?? 0));
      }),
    );
  });
});
