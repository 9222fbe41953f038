import { describe, expect, it } from "vitest";
import { decodeHistogram } from "../src/hdr.js";
import { Tally } from "../src/load/tally.js";
import { IntervalCounts, tickSchedule } from "../src/load/ticks.js";
import { limits } from "../src/limits.js";

describe("tick schedule", () => {
  it("ticks every second of warm-up and of measuring, aligned to the measure start", () => {
    expect(tickSchedule(2000, 3000)).toEqual([
      { atMs: 1000, warmup: true },
      { atMs: 2000, warmup: true },
      { atMs: 3000, warmup: false },
      { atMs: 4000, warmup: false },
      { atMs: 5000, warmup: false },
    ]);
  });

  it("ends fractional parts with a shorter interval, and has no warm-up tick without warm-up", () => {
    expect(tickSchedule(500, 1500)).toEqual([
      { atMs: 500, warmup: true },
      { atMs: 1500, warmup: false },
      { atMs: 2000, warmup: false },
    ]);
    expect(tickSchedule(0, 1000)).toEqual([{ atMs: 1000, warmup: false }]);
  });
});

describe("interval counts", () => {
  it("hands over one interval at a time and numbers only measured seconds", () => {
    const counts = new IntervalCounts(0);
    counts.record(1000, false);
    counts.record(null, true);
    const warm = counts.take(true, 1000);
    expect(warm).toMatchObject({ warmup: true, second: -1, intervalMs: 1000, completed: 2, errors: 1 });
    expect(decodeHistogram(warm.histogram).totalCount).toBe(1);
    counts.record(2000, false);
    expect(counts.take(false, 1500)).toMatchObject({
      warmup: false,
      second: 0,
      intervalMs: 500,
      completed: 1,
      errors: 0,
    });
    expect(counts.take(false, 2500)).toMatchObject({ second: 1, completed: 0 });
    expect(counts.measuredTaken).toBe(2);
  });
});

describe("tally", () => {
  it("counts statuses and keeps distinct error samples, both bounded", () => {
    const tally = new Tally();
    tally.status(200);
    tally.status(200);
    tally.status(503);
    expect(tally.statuses).toEqual({ "200": 2, "503": 1 });
    for (let i = 0; i < 100; i++) tally.status(1000 + i);
    expect(Object.keys(tally.statuses)).toHaveLength(limits.statusesMax);
    tally.error("a");
    tally.error("a");
    tally.error("b");
    expect(tally.errorSamples).toEqual(["a", "b"]);
    for (let i = 0; i < 100; i++) tally.error(`e${i}`);
    expect(tally.errorSamples).toHaveLength(limits.errorSamplesMax);
  });
});
