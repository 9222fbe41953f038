// prom-client metric objects over values read at scrape time: the registry formats any object
// with a name, a help text, a type and `get()`; these read the plain counters (plain.ts) and the
// node's own status instead of being updated per request.
import type { Metric, Registry } from "prom-client";
import type { PlainHistogram } from "./plain.js";

export type Labels = Record<string, string>;
export interface Sample {
  labels: Labels;
  value: number;
  /** For histogram series: `<name>_bucket`, `_sum`, `_count`. */
  metricName?: string;
}

type MetricType = "counter" | "gauge" | "histogram";

/** A metric whose samples are computed when Prometheus scrapes. */
export interface ScrapedMetric {
  name: string;
  help: string;
  type: MetricType;
  aggregator: "sum";
  get(): { name: string; help: string; type: MetricType; aggregator: "sum"; values: Sample[] };
}

export function scraped(name: string, help: string, type: MetricType, samples: () => Sample[]): ScrapedMetric {
  return {
    name,
    help,
    type,
    aggregator: "sum",
    get: () => ({ name, help, type, aggregator: "sum", values: samples() }),
  };
}

/** Registers a scraped metric. prom-client's type names only its own classes, but its registry reads nothing beyond this shape. */
export function register(registry: Registry, metric: ScrapedMetric): void {
  registry.registerMetric(metric as unknown as Metric);
}

/** The samples of one histogram: cumulative buckets with `le`, then sum and count. */
export function histogramSamples(name: string, histogram: PlainHistogram, labels: Labels = {}): Sample[] {
  const samples: Sample[] = [];
  let cumulative = 0;
  histogram.bounds.forEach((bound, slot) => {
    cumulative += histogram.counts[slot]!;
    samples.push({ metricName: `${name}_bucket`, labels: { ...labels, le: String(bound) }, value: cumulative });
  });
  cumulative += histogram.counts[histogram.bounds.length]!;
  samples.push({ metricName: `${name}_bucket`, labels: { ...labels, le: "+Inf" }, value: cumulative });
  samples.push({ metricName: `${name}_sum`, labels, value: histogram.sum });
  samples.push({ metricName: `${name}_count`, labels, value: histogram.count });
  return samples;
}
