import { describe, expect, it } from "vitest";
import { TurnBudget } from "../src/cluster/turn-budget.js";

/** A generator whose every step advances a fake clock by `stepMs`, and which logs its steps. */
function* steps(count: number, clock: { nowMs: number }, stepMs: number, log: string[]): Generator<void, string> {
  for (let i = 0; i < count; i++) {
    clock.nowMs += stepMs;
    log.push(`step ${i}`);
    yield;
  }
  return "done";
}

describe("TurnBudget", () => {
  it("runs steps back to back until the budget is spent, then yields a turn", async () => {
    const clock = { nowMs: 0 };
    const log: string[] = [];
    const budget = new TurnBudget(
      1,
      () => clock.nowMs,
      async () => void log.push("turn"),
    );
    await expect(budget.run(steps(6, clock, 0.4, log))).resolves.toBe("done");
    // 0.4 ms per step: the third step reaches 1.2 ms >= 1 ms, so a turn follows every third step.
    expect(log).toEqual(["step 0", "step 1", "step 2", "turn", "step 3", "step 4", "step 5", "turn"]);
  });

  it("yields after every step with a budget of 0, and after every step longer than the budget", async () => {
    for (const [budgetMs, stepMs] of [
      [0, 0],
      [1, 5],
    ] as const) {
      const clock = { nowMs: 0 };
      const log: string[] = [];
      const budget = new TurnBudget(
        budgetMs,
        () => clock.nowMs,
        async () => void log.push("turn"),
      );
      await budget.run(steps(3, clock, stepMs, log));
      expect(log).toEqual(["step 0", "turn", "step 1", "turn", "step 2", "turn"]);
    }
  });

  it("pause yields only once the budget is spent, and a new turn starts a new budget", async () => {
    const clock = { nowMs: 100 };
    let turns = 0;
    const budget = new TurnBudget(
      2,
      () => clock.nowMs,
      async () => void turns++,
    );
    await budget.pause();
    expect(turns).toBe(0);
    clock.nowMs += 2;
    expect(budget.spent).toBe(true);
    await budget.pause();
    expect(turns).toBe(1);
    expect(budget.spent).toBe(false);
  });

  it("refuses a negative budget", () => {
    expect(() => new TurnBudget(-1, () => 0)).toThrow(/budgetMs/);
  });
});
