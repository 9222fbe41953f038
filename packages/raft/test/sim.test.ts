import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { SafetyChecker, SafetyViolation } from "../src/sim/checker.js";
import { runSimulation } from "../src/sim/simulation.js";
import { SimStorage } from "../src/sim/sim-storage.js";
import { entry } from "./scenario-helpers.js";

const seedCount = Number(process.env["SIM_SEEDS"] ?? 2000);
const steps = Number(process.env["SIM_STEPS"] ?? 300);

function failures(seeds: Iterable<[number, number]>): string[] {
  const failed: string[] = [];
  for (const [seed, seedSteps] of seeds) {
    const result = runSimulation({ seed, steps: seedSteps });
    if (!result.ok)
      failed.push(
        `seed ${seed} (${seedSteps} steps): ${result.failure}\n  replay: npm run test:sim -- --seed ${seed} --steps ${seedSteps} --verbose`,
      );
  }
  return failed;
}

describe("deterministic simulator", () => {
  it("replays every regression seed in testdata/sim-seeds.txt", () => {
    const text = readFileSync(new URL("../testdata/sim-seeds.txt", import.meta.url), "utf8");
    const seeds = text
      .split("\n")
      .map((line) => line.replace(/#.*/, "").trim())
      .filter((line) => line !== "")
      .map((line) => line.split(/\s+/).map(Number) as [number, number]);
    expect(seeds.length).toBeGreaterThan(0);
    expect(failures(seeds)).toEqual([]);
  });

  it(
    `${seedCount} random seeds x ${steps} steps keep every safety property and converge after healing`,
    { timeout: 300_000 },
    () => {
      const seeds = Array.from({ length: seedCount }, (_, i): [number, number] => [1_000_000 + i, steps]);
      expect(failures(seeds)).toEqual([]);
    },
  );

  it("is deterministic: the same seed gives the same run", () => {
    const a = runSimulation({ seed: 77, steps: 400 });
    const b = runSimulation({ seed: 77, steps: 400 });
    expect(a).toEqual(b);
    expect(a.stats.appliedMax).toBeGreaterThan(0);
    expect(runSimulation({ seed: 78, steps: 400 }).stats).not.toEqual(a.stats);
  });

  it("exercises the faults it claims to (over a sample of seeds)", () => {
    const totals = {
      crashes: 0,
      partitions: 0,
      confChanges: 0,
      snapshotsTaken: 0,
      readsChecked: 0,
      terms: 0,
      messagesDropped: 0,
      pauses: 0,
      messagesHeld: 0,
    };
    for (let seed = 1; seed <= 100; seed++) {
      const { stats } = runSimulation({ seed, steps: 300 });
      for (const key of Object.keys(totals) as (keyof typeof totals)[]) totals[key] += stats[key];
    }
    for (const value of Object.values(totals)) expect(value).toBeGreaterThan(50);
  });

  it("runs one- and two-voter clusters, slow byte-bounded links, and waits for every member to catch up", () => {
    const voters = new Set<number>();
    let slowLinks = 0;
    let catchUpSteps = 0;
    for (let seed = 1; seed <= 100; seed++) {
      const result = runSimulation({ seed, steps: 300 });
      expect(result.ok, `seed ${seed}: ${result.failure}`).toBe(true);
      voters.add(result.stats.voters);
      if (result.stats.slowLinks) slowLinks++;
      catchUpSteps += result.stats.catchUpSteps;
    }
    expect([...voters].sort()).toEqual([1, 2, 3, 4, 5]);
    expect(slowLinks).toBeGreaterThan(5);
    expect(catchUpSteps).toBeGreaterThan(0); // some members were behind when the leader committed
  });

  it("crashes leaders between sending their appends and finishing their own write (over a sample of seeds)", () => {
    let lost = 0;
    for (let seed = 1; seed <= 100; seed++) lost += runSimulation({ seed, steps: 300 }).stats.crashesLosingSentEntries;
    expect(lost).toBeGreaterThan(20);
  });
});

describe("SimStorage", () => {
  it("a crash loses writes that were not synced, and keeps synced ones", () => {
    const storage = new SimStorage();
    storage.appendSync([entry(1, 1)], { term: 1, vote: "a", commit: 0 }, true);
    storage.appendSync([], { term: 1, vote: "a", commit: 1 }, false);
    expect(storage.initialState().hardState.commit).toBe(1);
    storage.crash();
    expect(storage.initialState().hardState).toEqual({ term: 1, vote: "a", commit: 0 });
    expect(storage.lastIndex()).toBe(1);
  });

  it("a later synced write makes earlier unsynced ones durable (one file, in order)", () => {
    const storage = new SimStorage();
    storage.appendSync([], { term: 2, vote: "", commit: 0 }, false);
    storage.appendSync([entry(2, 1)], null, true);
    storage.crash();
    expect(storage.initialState().hardState.term).toBe(2);
  });
});

describe("SafetyChecker", () => {
  // The checkers must be able to fail: feed them histories that break each property.
  it("flags two leaders in one term", () => {
    const checker = new SafetyChecker();
    const storage = new SimStorage();
    checker.observeLeader("a", 3, storage);
    expect(() => checker.observeLeader("b", 3, storage)).toThrow(SafetyViolation);
  });

  it("flags different entries applied at one index, and a diverging state", () => {
    const checker = new SafetyChecker();
    checker.observeApplied("a", entry(1, 1, "x"), 10);
    expect(() => checker.observeApplied("b", entry(1, 1, "y"), 10)).toThrow(/state-machine safety/);
    expect(() => checker.observeApplied("b", entry(1, 1, "x"), 11)).toThrow(/state differs/);
  });

  it("checks completeness for a leader of the newest term, not for one elected late in an older term", () => {
    const checker = new SafetyChecker();
    checker.observeApplied("a", entry(5, 1, "x"), 10);
    checker.observeLeader(
      "b",
      7,
      (() => {
        const storage = new SimStorage();
        storage.appendSync([entry(5, 1, "x")], null, true);
        return storage;
      })(),
    );
    expect(() => checker.observeLeader("c", 6, new SimStorage())).not.toThrow(); // votes held since term 6
    expect(() => checker.observeLeader("c", 8, new SimStorage())).toThrow(/leader completeness/);
  });

  it("flags a leader missing a committed entry", () => {
    const checker = new SafetyChecker();
    checker.observeApplied("a", entry(1, 1, "x"), 10);
    expect(() => checker.observeLeader("b", 2, new SimStorage())).toThrow(/leader completeness/);
  });

  it("flags log-matching violations and stale reads", () => {
    const checker = new SafetyChecker();
    const storage = new SimStorage();
    storage.appendSync([entry(1, 1, "x")], null, true);
    checker.observePersisted("a", [entry(1, 1, "x")], storage);
    expect(() => checker.observePersisted("b", [entry(1, 1, "z")], storage)).toThrow(/log matching/);
    expect(() => checker.observeRead("a", 4, 5)).toThrow(/linearizable read/);
  });
});
