// No package's sources import each other in a circle (the gateway has its own, stricter test in
// packages/gateway/test/import-graph.test.ts).
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { findCycle, localImports } from "./import-graph-lib.js";

const root = fileURLToPath(new URL("../", import.meta.url));

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith(".ts") ? [path] : [];
  });
}

describe.each(["packages/core/src", "packages/raft/src", "packages/gateway/src", "bench/src"])("%s", (dir) => {
  it("has no import circle", () => {
    const files = sourceFiles(join(root, dir));
    expect(files.length).toBeGreaterThan(10);
    const graph = new Map(files.map((file) => [file, localImports(file, readFileSync(file, "utf8"))]));
    const cycle = findCycle(graph);
    expect(cycle?.map((file) => relative(root, file)) ?? null).toBeNull();
  });
});
