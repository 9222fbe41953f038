import { describe, expect, it } from "vitest";
import { newHistogram, recordUs } from "../src/hdr.js";
import type { LoadPlan } from "../src/load/plan.js";
import { phaseResult, type LoadRun } from "../src/load/run-load.js";
import { roundOrder } from "../src/scenarios/phase.js";

const plan: LoadPlan = {
  label: "verify plain",
  targets: ["http://127.0.0.1:1"],
  connections: 4,
  warmupMs: 0,
  durationMs: 2000,
  seed: 1,
  requests: [
    {
      name: "verifyKey",
      weight: 1,
      method: "POST",
      path: "/",
      headers: {},
      bodyTemplate: "{}",
      pool: ["a"],
      distribution: "uniform",
      zipfExponent: 1,
      okMarker: '"valid":true',
    },
  ],
};

function run(latencyUs: number, perSecond: number, targetCpuS: number | null): LoadRun {
  const histogram = newHistogram();
  for (let i = 0; i < 2 * perSecond; i++) recordUs(histogram, latencyUs);
  const second = () => {
    const h = newHistogram();
    for (let i = 0; i < perSecond; i++) recordUs(h, latencyUs);
    return { intervalMs: 1000, completed: perSecond, errors: 0, histogram: h };
  };
  return {
    plan,
    measuredMs: 2000,
    seconds: [second(), second()],
    statuses: { "200": 2 * perSecond },
    errorSamples: [],
    perRequest: new Map([["verifyKey", { histogram, completed: 2 * perSecond, errors: 0, marked: 2 * perSecond }]]),
    wallS: 2,
    generatorCpuS: 1,
    targetCpuS,
  };
}

describe("phase result over rounds", () => {
  it("adds counts and histograms of every run and lays their timelines end to end", () => {
    const result = phaseResult("verify plain", [run(1000, 100, 1.5), run(3000, 300, 2)]);
    expect(result.completed).toBe(800);
    expect(result.measuredS).toBe(4);
    expect(result.rps).toBe(200);
    expect(result.latency.count).toBe(800);
    expect(result.latency.p50Ms).toBeCloseTo(3, 2); // 600 of 800 answers took 3 ms
    expect(result.latency.percentilesMs[0]?.[0]).toBe(50);
    expect(result.timeline.map((point) => [point.atS, point.rps])).toEqual([
      [1, 100],
      [2, 100],
      [3, 300],
      [4, 300],
    ]);
    expect(result.statuses).toEqual({ "200": 800 });
    expect(result.perRequest["verifyKey"]).toMatchObject({ completed: 800, marked: 800, rps: 200 });
    expect(result.generatorCpuCores).toBe(0.5);
    expect(result.targetCpuCores).toBe(0.88); // 3.5 CPU-seconds over 4 s
    expect(result.rpsVariationPct).toBeGreaterThan(50);
  });

  it("reports the target CPU as unknown when any run could not measure it", () => {
    expect(phaseResult("x", [run(1000, 10, 1), run(1000, 10, null)]).targetCpuCores).toBeNull();
  });
});

describe("round order", () => {
  it("runs the phases as given in odd rounds and reversed in even ones, every phase once per round", () => {
    const phases = ["verify plain", "verify ratelimit", "baseline fastify"];
    const rounds = [0, 1, 2, 3].map((round) => roundOrder(phases, round));
    expect(rounds[0]).toEqual(phases);
    expect(rounds[1]).toEqual(["baseline fastify", "verify ratelimit", "verify plain"]);
    expect(rounds[2]).toEqual(phases);
    // Over an even number of rounds every phase has the same mean position.
    const meanPosition = (label: string) =>
      rounds.reduce((sum, order) => sum + order.indexOf(label), 0) / rounds.length;
    for (const label of phases) expect(meanPosition(label)).toBe(1);
    expect(phases).toEqual(["verify plain", "verify ratelimit", "baseline fastify"]); // not reordered in place
  });
});
