// Counters and histograms kept as plain numbers in typed arrays: the hot path adds to an array
// slot (no label object, no hashing, no allocation), and the scrape turns the arrays into
// Prometheus values (exposition.ts). prom-client's own labelled metrics hash their label values
// on every call, which is what a verification must not pay.
import { assert } from "@keyraft/core";

/** Upper bounds (seconds) of the request latency buckets. */
export const latencyBucketsSeconds: readonly number[] = [
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5,
];

/** A histogram without labels: counts per bucket (not cumulative; the exposition sums them), sum and count. */
export class PlainHistogram {
  /** counts[i]: observations <= bounds[i] and > bounds[i - 1]; the last slot is +Inf. */
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(readonly bounds: readonly number[]) {
    assert(bounds.length > 0, "PlainHistogram: at least one bucket");
    for (let i = 1; i < bounds.length; i++) assert(bounds[i]! > bounds[i - 1]!, "PlainHistogram: bounds increase");
    this.counts = new Float64Array(bounds.length + 1);
  }

  observe(value: number): void {
    const bounds = this.bounds;
    let slot = 0;
    while (slot < bounds.length && value > bounds[slot]!) slot++;
    this.counts[slot]!++;
    this.sum += value;
    this.count++;
  }
}

/**
 * Histograms by one label whose values are few and known only at run time (a route, an append
 * kind). At most `valuesMax` distinct values; later ones share the `otherValue` histogram, so a
 * scrape stays bounded whatever the traffic.
 */
export class HistogramsByLabel {
  readonly byValue = new Map<string, PlainHistogram>();

  constructor(
    readonly bounds: readonly number[],
    readonly valuesMax: number,
    readonly otherValue = "other",
  ) {
    assert(valuesMax >= 1, "HistogramsByLabel: valuesMax >= 1");
  }

  /** The histogram of `value` (created on first use; `otherValue` past the bound). */
  of(value: string): PlainHistogram {
    let histogram = this.byValue.get(value);
    if (histogram !== undefined) return histogram;
    const key = this.byValue.size < this.valuesMax ? value : this.otherValue;
    histogram = this.byValue.get(key);
    if (histogram === undefined) {
      histogram = new PlainHistogram(this.bounds);
      this.byValue.set(key, histogram);
    }
    return histogram;
  }
}

/**
 * Counts by (group, code), with codes fixed up front and groups bounded: the first `groupsMax`
 * groups get their own row, later ones count under `otherGroup`. `add` is a Map lookup and an
 * array increment.
 */
export class CountsByGroupAndCode {
  readonly rows = new Map<string, Float64Array>();
  private readonly codeSlots = new Map<string, number>();

  constructor(
    readonly codes: readonly string[],
    readonly groupsMax: number,
    readonly otherGroup = "other",
  ) {
    assert(groupsMax >= 1, "CountsByGroupAndCode: groupsMax >= 1");
    codes.forEach((code, slot) => this.codeSlots.set(code, slot));
    assert(this.codeSlots.size === codes.length, "CountsByGroupAndCode: codes are distinct");
  }

  add(group: string, code: string): void {
    const slot = this.codeSlots.get(code);
    assert(slot !== undefined, "CountsByGroupAndCode: a known code");
    let row = this.rows.get(group);
    if (row === undefined) {
      const key = this.rows.size < this.groupsMax ? group : this.otherGroup;
      row = this.rows.get(key);
      if (row === undefined) {
        row = new Float64Array(this.codes.length);
        this.rows.set(key, row);
      }
    }
    row[slot]!++;
  }
}
