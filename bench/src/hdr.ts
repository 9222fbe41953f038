// HDR histograms of latencies in microseconds (pure JS implementation: no wasm, works offline).
import * as hdr from "hdr-histogram-js";
import { limits } from "./limits.js";

export type Histogram = hdr.Histogram;

export function newHistogram(): Histogram {
  return hdr.build({
    bitBucketSize: 32,
    autoResize: true,
    lowestDiscernibleValue: 1,
    highestTrackableValue: limits.latencyUsMax,
    numberOfSignificantValueDigits: 3,
    useWebAssembly: false,
  });
}

/** Records a latency, clamped to [1 µs, latencyUsMax]. */
export function recordUs(histogram: Histogram, latencyUs: number): void {
  histogram.recordValue(Math.min(limits.latencyUsMax, Math.max(1, Math.round(latencyUs))));
}

export function encodeHistogram(histogram: Histogram): string {
  return hdr.encodeIntoCompressedBase64(histogram);
}

export function decodeHistogram(encoded: string): Histogram {
  return hdr.decodeFromCompressedBase64(encoded, 32, false);
}

/** Percentiles shown in tables and charts. */
export const summaryPercentiles = [50, 75, 90, 95, 97.5, 99, 99.5, 99.9, 99.95, 99.99, 99.999, 100] as const;

export interface LatencySummary {
  count: number;
  meanMs: number;
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
  p999Ms: number;
  maxMs: number;
  /** [percentile, latency in ms] for every entry of summaryPercentiles. */
  percentilesMs: Array<[number, number]>;
}

/** Summary in milliseconds (3 decimals). An empty histogram gives zeros. */
export function summarize(histogram: Histogram): LatencySummary {
  const ms = (us: number): number => Math.round(us) / 1000;
  const at = (percentile: number): number =>
    histogram.totalCount === 0 ? 0 : ms(histogram.getValueAtPercentile(percentile));
  return {
    count: histogram.totalCount,
    meanMs: histogram.totalCount === 0 ? 0 : Math.round(histogram.mean) / 1000,
    p50Ms: at(50),
    p90Ms: at(90),
    p99Ms: at(99),
    p999Ms: at(99.9),
    maxMs: histogram.totalCount === 0 ? 0 : ms(histogram.maxValue),
    percentilesMs: summaryPercentiles.map((p) => [p, at(p)]),
  };
}
