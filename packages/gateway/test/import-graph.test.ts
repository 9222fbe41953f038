// The gateway's sources import each other without a circle: the composition root (app.ts) is
// imported by nothing but the package doors, and no module reaches itself through its imports
// (type-only imports included, since they too tie the files' meanings together).
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { findCycle, localImports } from "../../../test/import-graph-lib.js";

const srcDir = fileURLToPath(new URL("../src/", import.meta.url));

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith(".ts") ? [path] : [];
  });
}

describe("gateway import graph", () => {
  const files = sourceFiles(srcDir);
  const graph = new Map(files.map((file) => [file, localImports(file, readFileSync(file, "utf8"))]));

  it("reads every source file and resolves every import to one", () => {
    expect(files.length).toBeGreaterThan(50);
    const known = new Set(files);
    const unresolved = [...graph].flatMap(([file, imports]) =>
      imports.filter((target) => !known.has(target)).map((target) => `${file} -> ${target}`),
    );
    expect(unresolved).toEqual([]);
  });

  it("has no circle", () => {
    const cycle = findCycle(graph);
    expect(cycle?.map((file) => relative(srcDir, file)) ?? null).toBeNull();
  });

  it("nothing but the package doors imports the composition root", () => {
    const doors = new Set(["index.ts", "main.ts"].map((name) => join(srcDir, name)));
    const importers = [...graph]
      .filter(([file, imports]) => !doors.has(file) && imports.includes(join(srcDir, "app.ts")))
      .map(([file]) => relative(srcDir, file));
    expect(importers).toEqual([]);
  });

  it("sets the request id header in one place (the onRequest hook of http/lifecycle.ts)", () => {
    const setters = files
      .filter((file) => /\.header\(\s*requestIdHeader/.test(readFileSync(file, "utf8")))
      .map((file) => relative(srcDir, file));
    expect(setters).toEqual([join("http", "lifecycle.ts")]);
  });

  it("the cycle finder finds a circle (self-check)", () => {
    const circle = new Map([
      ["a", ["b"]],
      ["b", ["c"]],
      ["c", ["a"]],
      ["d", ["a"]],
    ]);
    expect(findCycle(circle)).toEqual(["a", "b", "c", "a"]);
    expect(
      findCycle(
        new Map([
          ["a", ["b"]],
          ["b", []],
        ]),
      ),
    ).toBeNull();
  });
});
