// The lint rule of the core: src/core is pure (no I/O, no clock, no global randomness).
import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

const coreDir = new URL("../src/core/", import.meta.url);
const files = readdirSync(coreDir).filter((f) => f.endsWith(".ts"));

const forbidden: [RegExp, string][] = [
  [/from\s+["']node:/, "node:* import"],
  [/from\s+["'](ws|level|classic-level|msgpackr|pino)["']/, "I/O library import"],
  [/from\s+["']\.\.\/(?!core\/)/, "import from outside src/core"],
  [/\bDate\.now\s*\(/, "wall clock"],
  [/\bnew Date\s*\(/, "wall clock"],
  [/\bperformance\.now\s*\(/, "wall clock"],
  [/\bMath\.random\s*\(/, "global randomness"],
  [/\b(setTimeout|setInterval|setImmediate|queueMicrotask)\s*\(/, "timer"],
  [/\bprocess\./, "process global"],
  [/\bexport \*/, "export *"],
];

describe("src/core purity", () => {
  it("has files to check", () => {
    expect(files).toContain("raft.ts");
  });
  for (const file of files) {
    it(file, () => {
      const source = readFileSync(new URL(file, coreDir), "utf8").replace(/^\s*\/\/.*$/gm, "");
      const violations = forbidden.filter(([pattern]) => pattern.test(source)).map(([, what]) => what);
      expect(violations).toEqual([]);
    });
  }
});
