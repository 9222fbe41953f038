import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { runRateLimitSimulation } from "../src/sim-counters/ratelimit-simulation.js";

const regressionSeeds = readFileSync(new URL("../testdata/sim-counters-ratelimit-seeds.txt", import.meta.url), "utf8")
  .split("\n")
  .map((line) => line.trim())
  .filter((line) => line !== "" && !line.startsWith("#"))
  .map(Number);
const seeds = Number(process.env["SIM_RATELIMIT_SEEDS"] ?? 2000);
const steps = 400;

const report = (seed: number, failure: string | undefined): string =>
  `seed ${seed}: ${failure ?? ""}\n` +
  `replay: npm run test:sim-counters -- --ratelimit --seed ${seed} --steps ${steps} --verbose ` +
  "(then add it to packages/core/testdata/sim-counters-ratelimit-seeds.txt)";

describe("rate-limit ownership simulation", () => {
  it("regression seeds pass", () => {
    for (const seed of regressionSeeds) {
      const result = runRateLimitSimulation({ seed, steps });
      expect(result.ok, report(seed, result.failure)).toBe(true);
    }
  });

  it(`${seeds} random seeds: no window over its limit across takeovers and hand-backs; every key served again after healing`, () => {
    const failures: string[] = [];
    const totals = { admitted: 0, takeovers: 0, handBacks: 0, crashes: 0, partitions: 0 };
    for (let seed = 1; seed <= seeds && failures.length < 5; seed++) {
      const result = runRateLimitSimulation({ seed, steps });
      if (!result.ok) failures.push(report(seed, result.failure));
      for (const key of Object.keys(totals) as (keyof typeof totals)[]) totals[key] += result.stats[key];
    }
    expect(failures, failures.join("\n")).toEqual([]);
    for (const [key, value] of Object.entries(totals)) expect(value, key).toBeGreaterThan(0);
  }, 120_000);

  it(`${seeds} random seeds with per-node clock offsets below a bucket and clock steps: no window over its limit`, () => {
    const failures: string[] = [];
    let takeovers = 0;
    for (let seed = 1; seed <= seeds && failures.length < 5; seed++) {
      const result = runRateLimitSimulation({ seed, steps, clockOffsets: true });
      if (!result.ok) failures.push(`${report(seed, result.failure)} (with clock offsets)`);
      takeovers += result.stats.takeovers;
    }
    expect(failures, failures.join("\n")).toEqual([]);
    expect(takeovers).toBeGreaterThan(0);
  }, 120_000);

  it("mutation check: with clock offsets, restoring moved counts where they were filed lets a window exceed its limit", () => {
    let failed = 0;
    for (let seed = 1; seed <= seeds && failed === 0; seed++)
      if (!runRateLimitSimulation({ seed, steps, clockOffsets: true, unmovedRestores: true }).ok) failed++;
    expect(failed).toBeGreaterThan(0);
  }, 120_000);

  it(`${seeds} random seeds where a serving successor leaves a key's ranking for good (with and without clock offsets): no window over its limit`, () => {
    const failures: string[] = [];
    let removals = 0;
    for (let seed = 1; seed <= seeds && failures.length < 5; seed++) {
      for (const clockOffsets of [false, true]) {
        const result = runRateLimitSimulation({ seed, steps, removals: true, clockOffsets });
        if (!result.ok)
          failures.push(`${report(seed, result.failure)} (--removals${clockOffsets ? " --clock-offsets" : ""})`);
        removals += result.stats.removals;
      }
    }
    expect(failures, failures.join("\n")).toEqual([]);
    expect(removals).toBeGreaterThan(0);
  }, 240_000);

  it("seed 3 with removals: the admissions of a serving successor that leaves for good are kept by the third node's copy", () => {
    expect(runRateLimitSimulation({ seed: 3, steps, removals: true }).ok).toBe(true);
    // Mutation check: without the copy the new successor hands back nothing of them (376 of the
    // first 2,000 seeds go over the limit; seed 3 is the first).
    expect(runRateLimitSimulation({ seed: 3, steps, removals: true, noCopies: true }).ok).toBe(false);
  });

  it("is deterministic", () => {
    const run = (seed: number): string[] => {
      const lines: string[] = [];
      runRateLimitSimulation({ seed, steps: 300, trace: (line) => lines.push(line) });
      return lines;
    };
    expect(run(99)).toEqual(run(99));
    expect(run(99).length).toBeGreaterThan(0);
  });
});
