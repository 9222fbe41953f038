// The gateway's sources import each other without a circle: the composition root (app.ts) is
// imported by nothing but the package doors, and no module reaches itself through its imports
// (type-only imports included, since they too tie the files' meanings together).
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const srcDir = fileURLToPath(new URL("../src/", import.meta.url));

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith(".ts") ? [path] : [];
  });
}

/** The relative imports and re-exports of a source file, resolved to source paths. */
export function localImports(file: string, source: string): string[] {
  const specifiers = [
    ...source.matchAll(/^\s*(?:import|export)\s[^;]*?\sfrom\s+["'](\.{1,2}\/[^"']+)["']/gms),
    ...source.matchAll(/^\s*import\s+["'](\.{1,2}\/[^"']+)["']/gm),
    ...source.matchAll(/\bimport\(\s*["'](\.{1,2}\/[^"']+)["']\s*\)/g),
  ].map((match) => match[1]!);
  return specifiers.map((specifier) => resolve(dirname(file), specifier.replace(/\.js$/, ".ts")));
}

/** The first circle found in `graph` (as a list of files, first = last), or null. */
export function findCycle(graph: ReadonlyMap<string, readonly string[]>): string[] | null {
  const state = new Map<string, "open" | "done">();
  const stack: string[] = [];
  const visit = (file: string): string[] | null => {
    const seen = state.get(file);
    if (seen === "done") return null;
    if (seen === "open") return [...stack.slice(stack.indexOf(file)), file];
    state.set(file, "open");
    stack.push(file);
    for (const next of graph.get(file) ?? []) {
      const cycle = visit(next);
      if (cycle !== null) return cycle;
    }
    stack.pop();
    state.set(file, "done");
    return null;
  };
  for (const file of graph.keys()) {
    const cycle = visit(file);
    if (cycle !== null) return cycle;
  }
  return null;
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
