// Import graphs of TypeScript sources: the relative imports of a file, and the first circle in a
// graph. Shared by the import-circle tests (test/import-graph.test.ts and the gateway's own).
import { dirname, resolve } from "node:path";

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
