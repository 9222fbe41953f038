// The driver simulation: the real RaftNode with a fake clock, a fake transport and storage whose
// writes complete when the simulation says and whose unsynced writes a crash loses. DRIVER_SIM_SEEDS
// sets the seed count (the CI budget is small; long campaigns run the same code with more seeds).
import { describe, expect, it } from "vitest";
import { runDriverSimulation } from "../src/sim/driver-sim.js";

const seedCount = Number(process.env["DRIVER_SIM_SEEDS"] ?? 60);
const steps = Number(process.env["DRIVER_SIM_STEPS"] ?? 300);
const firstSeed = Number(process.env["DRIVER_SIM_FROM"] ?? 1);

describe("driver simulation (RaftNode under a fake clock, network and disk)", () => {
  it(
    `${seedCount} seeds x ${steps} steps keep every safety property, answer reads linearizably and converge`,
    { timeout: 600_000 },
    async () => {
      const failed: string[] = [];
      let readsChecked = 0;
      let crashes = 0;
      for (let seed = firstSeed; seed < firstSeed + seedCount; seed++) {
        const result = await runDriverSimulation({ seed, steps });
        readsChecked += result.stats.readsChecked;
        crashes += result.stats.crashes;
        if (!result.ok) failed.push(`seed ${seed}: ${result.failure}`);
      }
      expect(failed).toEqual([]);
      expect(readsChecked).toBeGreaterThan(seedCount);
      expect(crashes).toBeGreaterThan(seedCount / 2);
    },
  );

  it("is deterministic: the same seed gives the same run", async () => {
    const a = await runDriverSimulation({ seed: 7, steps: 200 });
    const b = await runDriverSimulation({ seed: 7, steps: 200 });
    expect(a).toEqual(b);
    expect(a.stats.appliedMax).toBeGreaterThan(0);
  });
});
