import { describe, expect, it } from "vitest";
import { measureImportApply } from "../src/import-apply.js";

// The import-apply measurement at a small size: every import it applies must succeed (it throws
// otherwise), and the figures describe the applies it timed. Never how fast.
describe("import-apply", () => {
  it("applies imports of 1,000 keys and reports their median, p99 and longest with the keys held then", () => {
    const figures = measureImportApply(5_000);
    expect(figures.keys).toBe(5_000);
    expect(figures.importApplyMsP50).toBeGreaterThan(0);
    expect(figures.importApplyMsP50).toBeLessThanOrEqual(figures.importApplyMsP99);
    expect(figures.importApplyMsP99).toBeLessThanOrEqual(figures.importApplyMsMax);
    expect(figures.longest).toHaveLength(5);
    expect(figures.longest[0]).toEqual({ atKeys: figures.importApplyMsMaxAtKeys, ms: figures.importApplyMsMax });
    expect(figures.longest.map((apply) => apply.atKeys).sort((a, b) => a - b)).toEqual([0, 1_000, 2_000, 3_000, 4_000]);
  });
});
