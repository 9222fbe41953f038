import { describe, expect, it } from "vitest";
import { measureCreditApply } from "../src/credit-apply.js";

// The credit-apply measurement at a tiny size: every creditBatch it applies must succeed (it throws
// otherwise), and each round reports a time. Never how fast.
describe("credit-apply", () => {
  it("applies grant, settle and grant rounds of creditBatch commands to an imported state", () => {
    const rounds = measureCreditApply(2_000);
    expect(rounds.map((round) => round.round)).toEqual(["grant", "settle", "grant again"]);
    // Every key has a million credits: every grant is granted, and every lease settles.
    const items = 2_000 * 32;
    expect(rounds.map((round) => round.outcomes)).toEqual([{ granted: items }, { settled: items }, { granted: items }]);
    for (const round of rounds) {
      expect(round.microsPerItem).toBeGreaterThan(0);
      expect(round.batchMsMax).toBeGreaterThan(0);
    }
  });
});
