import { describe, expect, it } from "vitest";
import { certainWindowMax, certainWindowPeak, creditViolations } from "../../cluster/faults/src/checks.js";

describe("fault harness checks", () => {
  it("certainWindowMax counts only admissions certainly inside one window", () => {
    expect(certainWindowMax([], 1000)).toBe(0);
    const tight = Array.from({ length: 5 }, (_, i) => ({ callMs: i * 10, returnMs: i * 10 + 5 }));
    expect(certainWindowMax(tight, 1000)).toBe(5);
    // Spread over more than a window: at most those within 1000 ms of each other.
    const spread = Array.from({ length: 10 }, (_, i) => ({ callMs: i * 300, returnMs: i * 300 + 1 }));
    expect(certainWindowMax(spread, 1000)).toBe(4);
    // Where: the first window that reaches the maximum starts at the first call.
    expect(certainWindowPeak(spread, 1000)).toEqual({ count: 4, fromMs: 0 });
    expect(certainWindowPeak([], 1000)).toEqual({ count: 0, fromMs: null });
    // A slow answer (long interval) may have been decided outside the window: not counted there.
    expect(
      certainWindowMax(
        [
          { callMs: 0, returnMs: 1 },
          { callMs: 5, returnMs: 5000 },
        ],
        1000,
      ),
    ).toBe(1);
  });

  it("creditViolations flags overspending, also through the final replicated balance", () => {
    expect(creditViolations([{ keyId: "a", supplied: 10, admittedCost: 10, finalRemaining: 0 }])).toEqual([]);
    expect(creditViolations([{ keyId: "a", supplied: 10, admittedCost: 11, finalRemaining: 0 }])).toHaveLength(2);
    expect(creditViolations([{ keyId: "a", supplied: 10, admittedCost: 8, finalRemaining: 3 }])).toEqual([
      "a: admitted 8 + remaining 3 > supplied 10",
    ]);
  });
});
