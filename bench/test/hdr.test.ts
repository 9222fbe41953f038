import { describe, expect, it } from "vitest";
import { decodeHistogram, encodeHistogram, newHistogram, recordUs, summarize } from "../src/hdr.js";

describe("HDR summary", () => {
  it("summarizes 1..10000 µs in milliseconds within HDR precision", () => {
    const histogram = newHistogram();
    for (let us = 1; us <= 10_000; us++) recordUs(histogram, us);
    const summary = summarize(histogram);
    expect(summary.count).toBe(10_000);
    expect(summary.p50Ms).toBeCloseTo(5, 1);
    expect(summary.p90Ms).toBeCloseTo(9, 1);
    expect(summary.p99Ms).toBeCloseTo(9.9, 1);
    expect(summary.maxMs).toBeCloseTo(10, 1);
    expect(summary.meanMs).toBeCloseTo(5, 1);
    const percentiles = summary.percentilesMs.map(([p]) => p);
    expect(percentiles[0]).toBe(50);
    expect(percentiles[percentiles.length - 1]).toBe(100);
    const latencies = summary.percentilesMs.map(([, ms]) => ms);
    for (let i = 1; i < latencies.length; i++)
      expect(latencies[i] as number).toBeGreaterThanOrEqual(latencies[i - 1] as number);
  });

  it("gives zeros for an empty histogram", () => {
    const summary = summarize(newHistogram());
    expect(summary).toMatchObject({ count: 0, p50Ms: 0, p99Ms: 0, maxMs: 0, meanMs: 0 });
  });

  it("clamps values below 1 µs and survives an encode/decode round trip", () => {
    const histogram = newHistogram();
    recordUs(histogram, 0.2);
    recordUs(histogram, 2_500);
    recordUs(histogram, 2_500);
    const decoded = decodeHistogram(encodeHistogram(histogram));
    expect(decoded.totalCount).toBe(3);
    expect(decoded.minNonZeroValue).toBe(1);
    expect(summarize(decoded).p99Ms).toBeCloseTo(2.5, 2);
  });

  it("adds histograms of several workers", () => {
    const a = newHistogram(),
      b = newHistogram(),
      total = newHistogram();
    for (let i = 0; i < 100; i++) recordUs(a, 1_000);
    for (let i = 0; i < 100; i++) recordUs(b, 3_000);
    total.add(decodeHistogram(encodeHistogram(a)));
    total.add(decodeHistogram(encodeHistogram(b)));
    expect(total.totalCount).toBe(200);
    expect(summarize(total).p50Ms).toBeCloseTo(1, 2);
    expect(summarize(total).p99Ms).toBeCloseTo(3, 2);
  });
});
