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
      let wipes = 0;
      let refusedStarts = 0;
      let rollbacks = 0;
      let rollbacksRefused = 0;
      let heldDelivered = 0;
      const clusterSizes = new Set<number>();
      for (let seed = firstSeed; seed < firstSeed + seedCount; seed++) {
        const result = await runDriverSimulation({ seed, steps });
        readsChecked += result.stats.readsChecked;
        crashes += result.stats.crashes;
        wipes += result.stats.wipes;
        refusedStarts += result.stats.refusedStarts;
        rollbacks += result.stats.rollbacks;
        rollbacksRefused += result.stats.rollbacksRefused;
        heldDelivered += result.stats.heldDelivered;
        clusterSizes.add(result.stats.voters);
        if (!result.ok) failed.push(`seed ${seed}: ${result.failure}`);
      }
      expect(failed).toEqual([]);
      expect(readsChecked).toBeGreaterThan(seedCount);
      expect(crashes).toBeGreaterThan(seedCount / 2);
      // Wiped data directories happened, and their nodes were refused at start.
      expect(wipes).toBeGreaterThan(0);
      expect(refusedStarts).toBeGreaterThan(0);
      // So did data directories rolled back to an older copy, and they were refused.
      expect(rollbacks).toBeGreaterThan(0);
      expect(rollbacksRefused).toBeGreaterThan(0);
      // One- and two-voter clusters are in the budget, and messages held past partitions and
      // crashes were delivered later (to restarted processes too).
      expect([...clusterSizes].sort()).toEqual([1, 2, 3, 4, 5]);
      expect(heldDelivered).toBeGreaterThan(0);
    },
  );

  it("a wiped member is refused at start and the cluster stays safe; without identity checks it is not", async () => {
    // Seeds found by running the simulation without identity checks: a wiped member came back with
    // an empty log that its leader took for the log it had acknowledged (a follower told to commit
    // entries it no longer holds: acknowledged writes gone from a copy the quorum counted).
    for (const [seed, violation] of [
      [28, /commit 42 beyond last index 8/],
      [62, /commit 24 beyond last index 8/],
    ] as const) {
      const checked = await runDriverSimulation({ seed, steps: 300 });
      expect(checked.ok, `seed ${seed}: ${checked.failure}`).toBe(true);
      expect(checked.stats.wipes, `seed ${seed}`).toBe(1);
      expect(checked.stats.refusedStarts, `seed ${seed}`).toBeGreaterThan(0);
      const unchecked = await runDriverSimulation({ seed, steps: 300, identityChecks: false });
      expect(unchecked.ok, `seed ${seed} without identity checks`).toBe(false);
      expect(unchecked.failure).toMatch(violation);
    }
  });

  it("a member restarted on an older copy of its data directory is refused and the cluster stays safe; without durable state in the handshake it is not", async () => {
    // Seeds found by running the simulation with nodes that state no durable state (as a node of an
    // earlier release): seed 56's rolled-back follower is told by its leader to commit entries it
    // acknowledged before its copy was restored; seed 2134's copy, counted for a committed entry it no
    // longer holds, elects a leader without it; seed 2615's applies a different entry at an index.
    for (const [seed, violation] of [
      [56, /commit 55 beyond last index 46/],
      [2134, /leader completeness: leader n1 \(term 3\) lacks committed entry 41/],
      [2615, /state-machine safety: n1 applied a different entry at 55/],
    ] as const) {
      const checked = await runDriverSimulation({ seed, steps: 300 });
      expect(checked.ok, `seed ${seed}: ${checked.failure}`).toBe(true);
      expect(checked.stats.rollbacks, `seed ${seed}`).toBe(1);
      expect(checked.stats.rollbacksRefused, `seed ${seed}`).toBeGreaterThan(0);
      const unchecked = await runDriverSimulation({ seed, steps: 300, rollbackChecks: false });
      expect(unchecked.ok, `seed ${seed} without durable state in the handshake`).toBe(false);
      expect(unchecked.failure).toMatch(violation);
    }
  });

  it("a wiped founder founds only with every founding peer's word, and one that never took part comes back as itself", async () => {
    // Found by 100,000-seed campaigns, when a founder with a new data directory founded after its
    // probe timed out:
    // - 3060462: n1 led term 2 with n2 and was wiped; the new n1 met only n3 (n2 cut off), which had
    //   never met it, and the two elected n3 without an entry n1 and n2 had committed;
    // - 2097381: n1 met n3 in its founding probe and was wiped before it took part; n3 refused the
    //   new n1 for good, n1 founded with n2, and n3 never caught up.
    // Now a new data directory takes part only once every founding peer accepted it, and a peer lets
    // it replace an incarnation that never sent it a Raft message.
    const safety = await runDriverSimulation({ seed: 3060462, steps: 300 });
    expect(safety.ok, safety.failure).toBe(true);
    expect(safety.stats.wipes).toBe(1);
    expect(safety.stats.refusedStarts).toBeGreaterThan(0);
    const liveness = await runDriverSimulation({ seed: 2097381, steps: 300 });
    expect(liveness.ok, liveness.failure).toBe(true);
    expect(liveness.stats.wipes).toBe(1);
    expect(liveness.stats.refusedStarts).toBe(0);
  });

  it("is deterministic: the same seed gives the same run", async () => {
    const a = await runDriverSimulation({ seed: 7, steps: 200 });
    const b = await runDriverSimulation({ seed: 7, steps: 200 });
    expect(a).toEqual(b);
    expect(a.stats.appliedMax).toBeGreaterThan(0);
  });
});
