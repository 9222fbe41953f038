// The lint rule of core: every file under src/ is pure (no I/O, no clock, no global randomness, no
// dependency), as packages/raft/test/core-purity.test.ts keeps raft's src/core. The shells (the
// gateway, the simulations' command line in packages/core/cli) own the clock, the randomness and
// the I/O, and pass time in as `nowMs`.
import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

const srcDir = new URL("../src/", import.meta.url);
const files = (readdirSync(srcDir, { recursive: true }) as string[]).filter((file) => file.endsWith(".ts")).sort();

const forbidden: [RegExp, string][] = [
  [/from\s+["']node:/, "node:* import"],
  [/from\s+["'][^./]/, "package import (core depends on nothing)"],
  [/\bimport\s*\(/, "dynamic import"],
  [/\brequire\s*\(/, "require"],
  [/\bDate\.now\s*\(/, "wall clock"],
  [/\bnew Date\s*\(\s*\)/, "wall clock"],
  [/(?<![.\w])Date\s*\(\s*\)/, "wall clock"],
  [/\bperformance\.now\s*\(/, "wall clock"],
  [/\bMath\.random\s*\(/, "global randomness"],
  [/\bcrypto\.(getRandomValues|randomUUID|randomBytes)\b/, "global randomness"],
  [/\b(setTimeout|setInterval|setImmediate|queueMicrotask)\s*\(/, "timer"],
  [/\bprocess\./, "process global"],
  [/\bconsole\./, "console output"],
  [/\b(fetch|Buffer)\b\s*[.(]/, "I/O global"],
  [/\bexport \*/, "export *"],
];

/** The names of the rules a source text breaks; line comments are not code. */
function violations(source: string): string[] {
  const code = source.replace(/^\s*\/\/.*$/gm, "");
  return forbidden.filter(([pattern]) => pattern.test(code)).map(([, what]) => what);
}

describe("core purity", () => {
  it("has files to check, in every folder", () => {
    expect(files).toContain("index.ts");
    expect(files).toContain("verify/decide.ts");
    expect(files).toContain("sim-counters/simulation.ts");
  });

  it("catches each kind of violation", () => {
    const bad = [
      'import { readFileSync } from "node:fs";',
      'import { pack } from "msgpackr";',
      "const t = Date.now();",
      "const t = new Date();",
      "const r = Math.random();",
      "setTimeout(() => {}, 1);",
      "process.exitCode = 1;",
      'console.log("x");',
      'export * from "./x.js";',
    ];
    for (const line of bad) expect(violations(line), line).not.toEqual([]);
    // Calendar arithmetic on a given instant is pure.
    expect(violations("const at = new Date(atMs); const m = Date.UTC(2026, 0, 1);")).toEqual([]);
    expect(violations('import { assert } from "../assert.js";')).toEqual([]);
  });

  for (const file of files) {
    it(file, () => {
      expect(violations(readFileSync(new URL(file, srcDir), "utf8"))).toEqual([]);
    });
  }
});
