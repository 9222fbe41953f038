import { existsSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseArgs } from "../src/args.js";
import { defaultNodeEntry, repoRoot } from "../src/paths.js";
import { runScaleScenario } from "../src/scenarios/scale.js";

// The scale scenario at a tiny size: real node processes (the built gateway, as `npm test` builds
// it first). Checks that every figure the summary promises is there and sane, never how fast.
const built = existsSync(join(repoRoot, defaultNodeEntry));

describe("scale --keys", () => {
  it("defaults to 1,000,000 keys for scale and to the usual size elsewhere", () => {
    expect(parseArgs(["scale"]).keys).toBe(1_000_000);
    expect(parseArgs(["scale", "--keys", "2000"]).keys).toBe(2000);
    expect(parseArgs(["verify"]).keys).toBe(10_000);
  });
});

describe.skipIf(!built)("scale scenario", () => {
  it("imports, restarts, joins a second node and reports every figure", { timeout: 120_000 }, async () => {
    const lines: string[] = [];
    const figures = await runScaleScenario({
      keys: 2000,
      verifySeconds: 1,
      log: (line) => lines.push(line),
      progress: () => {},
    });
    expect(Object.keys(figures).slice(0, 9)).toEqual([
      "keys",
      "importKeysPerSec",
      "rssMiB",
      "bytesPerKey",
      "restartMs",
      "joinMs",
      "joinAdminP99Ms",
      "maxLoopStallMs",
      "verifyRatioLargeToSmall",
    ]);
    expect(figures["keys"]).toBe(2000);
    for (const name of ["importKeysPerSec", "rssMiB", "restartMs", "joinMs", "joinAdminP99Ms"])
      expect(figures[name], name).toBeGreaterThan(0);
    expect(figures["maxLoopStallMs"]).toBeGreaterThanOrEqual(0);
    expect(figures["verifyRatioLargeToSmall"]).toBeGreaterThan(0);
    expect(Number.isFinite(figures["bytesPerKey"])).toBe(true);
    // The restarted node applied at least the entries it wrote itself, and read its own metrics.
    expect(figures["restartEntriesApplied"]).toBeGreaterThan(0);
    expect(lines.some((line) => line.includes("a second node joined"))).toBe(true);
    // The join lasts until the new node is a voter, which is after it first served.
    expect(figures["joinVoterMs"]).toBeGreaterThanOrEqual(figures["joinMs"]!);
    expect(Number.isInteger(figures["joinTermChanges"]) && figures["joinTermChanges"]! >= 0).toBe(true);
  });
});
