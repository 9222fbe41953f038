// The terminal table of a report: one row per phase, then the summary figures and ratios.
import type { PhaseResult } from "../load/run-load.js";
import type { Report } from "./model.js";

const columns = [
  "phase",
  "rps",
  "± %",
  "p50 ms",
  "p90 ms",
  "p99 ms",
  "p99.9 ms",
  "max ms",
  "errors",
  "ok %",
  "target cpu",
  "gen cpu",
];

export function phaseRow(phase: PhaseResult): string[] {
  // ok %: among the request kinds that have an ok marker only (e.g. verifications in "mixed").
  const withMarker = Object.values(phase.perRequest).filter((request) => request.marked !== null);
  const marked = withMarker.reduce((sum, request) => sum + (request.marked ?? 0), 0);
  const markedOf = withMarker.reduce((sum, request) => sum + request.completed, 0);
  return [
    phase.label,
    Math.round(phase.rps).toLocaleString("en-US"),
    phase.rpsVariationPct.toFixed(0),
    phase.latency.p50Ms.toFixed(2),
    phase.latency.p90Ms.toFixed(2),
    phase.latency.p99Ms.toFixed(2),
    phase.latency.p999Ms.toFixed(2),
    phase.latency.maxMs.toFixed(2),
    String(phase.errors),
    markedOf === 0 ? "-" : ((marked / markedOf) * 100).toFixed(1),
    phase.targetCpuCores === null ? "-" : phase.targetCpuCores.toFixed(2),
    phase.generatorCpuCores.toFixed(2),
  ];
}

export { columns as tableColumns };

export function renderTable(report: Report): string {
  const rows = [columns, ...report.phases.map(phaseRow)];
  const widths = columns.map((_, c) => Math.max(...rows.map((row) => (row[c] ?? "").length)));
  const line = (row: string[]): string =>
    row.map((cell, c) => (c === 0 ? cell.padEnd(widths[c] ?? 0) : cell.padStart(widths[c] ?? 0))).join("  ");
  const rule = widths.map((width) => "-".repeat(width)).join("  ");
  const out = [line(columns), rule, ...rows.slice(1).map(line), ""];
  const { baselines, ratios, perCoreRatios, ...figures } = report.summary;
  const pairs: Array<[string, string]> = Object.entries(figures).map(([name, value]) => [name, formatValue(value)]);
  pairs.push(["ratio to fastify", formatValue(ratios.fastify)]);
  pairs.push([
    "ratio to redis limiter",
    `${formatValue(ratios.redisLimiter)}${baselines.redisLimiter === null ? " (no baseline)" : ""}`,
  ]);
  pairs.push(["per-core ratio to fastify", formatValue(perCoreRatios.fastify)]);
  pairs.push(["per-core ratio to redis", formatValue(perCoreRatios.redisLimiter)]);
  const labelWidth = Math.max(...pairs.map(([name]) => name.length));
  for (const [name, value] of pairs) out.push(`${name.padEnd(labelWidth)}  ${value}`);
  for (const note of report.notes) out.push(`note: ${note}`);
  return out.join("\n");
}

function formatValue(value: unknown): string {
  if (value === null || value === undefined) return "-";
  if (typeof value === "number") return value.toLocaleString("en-US", { maximumFractionDigits: 3 });
  return typeof value === "string" ? value : JSON.stringify(value);
}
