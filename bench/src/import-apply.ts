// What applying migrations.createKeys entries costs as the key state grows: `node
// bench/dist/import-apply.js [keys]` (default 1,000,000). Imports of 1,000 keys each, built as the
// scale scenario builds them (scale-memory.ts fillState: credits, a rate limit, a small meta),
// are applied in process one after another, and each apply is timed: a node applies such an entry
// in one piece on its only thread, so the longest one is a stall of its event loop. Prints the
// median, the 99th percentile and the longest applies with the keys held then; the last line is
// JSON. Timings vary with the machine: compare runs of one session.
import { pathToFileURL } from "node:url";
import { batchKeys, fillState } from "./scale-memory.js";

const keysDefault = 1_000_000;
/** Longest applies listed. */
const longestListed = 5;

export interface ImportApplyFigures {
  keys: number;
  importApplyMsP50: number;
  importApplyMsP99: number;
  importApplyMsMax: number;
  /** Keys held when the longest apply began. */
  importApplyMsMaxAtKeys: number;
  longest: { atKeys: number; ms: number }[];
}

export function measureImportApply(keyCount: number): ImportApplyFigures {
  const applies: { atKeys: number; ms: number }[] = [];
  fillState(keyCount, (atKeys, ms) => applies.push({ atKeys, ms }));
  const sorted = applies.map((apply) => apply.ms).sort((a, b) => a - b);
  const quantile = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
  const longest = [...applies].sort((a, b) => b.ms - a.ms).slice(0, longestListed);
  return {
    keys: keyCount,
    importApplyMsP50: round(quantile(0.5)),
    importApplyMsP99: round(quantile(0.99)),
    importApplyMsMax: round(longest[0]!.ms),
    importApplyMsMaxAtKeys: longest[0]!.atKeys,
    longest: longest.map(({ atKeys, ms }) => ({ atKeys, ms: round(ms) })),
  };
}

function round(ms: number): number {
  return Math.round(ms * 100) / 100;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const keyCount = Number(process.argv[2] ?? keysDefault);
  if (!Number.isSafeInteger(keyCount) || keyCount < batchKeys)
    throw new Error(`keys: a whole number of at least ${batchKeys}`);
  process.stdout.write(`imports of ${batchKeys} keys applied up to ${keyCount} keys (node ${process.version}):\n`);
  const figures = measureImportApply(keyCount);
  process.stdout.write(
    `  per import: median ${figures.importApplyMsP50} ms, p99 ${figures.importApplyMsP99} ms, ` +
      `longest ${figures.importApplyMsMax} ms (at ${figures.importApplyMsMaxAtKeys} keys)\n` +
      `  longest: ${figures.longest.map((apply) => `${apply.ms} ms at ${apply.atKeys}`).join(", ")}\n`,
  );
  const { longest: _longest, ...json } = figures;
  process.stdout.write(`${JSON.stringify(json)}\n`);
}
