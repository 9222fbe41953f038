// The summary: the last line printed (one JSON object) and the head of the JSON report.
import type { ScenarioName } from "../args.js";
import type { PhaseResult } from "../load/run-load.js";
import type { BaselineResults } from "../baselines/run-baselines.js";
import type { ScenarioOutcome } from "../scenarios/types.js";

export interface BaselineFigure {
  rps: number;
  p99Ms: number;
}

export type Summary = { scenario: ScenarioName } & Record<string, unknown> & {
  baselines: { fastify: BaselineFigure | null; redisLimiter: BaselineFigure | null };
  ratios: { fastify: number | null; redisLimiter: number | null };
};

/** Figures that issue 2 fixes, in order, at the head of verify's summary. */
const verifyHead = ["verifyRps", "verifyRatelimitRps", "verifyCreditsRps"] as const;

export function buildSummary(scenario: ScenarioName, outcome: ScenarioOutcome, baselines: BaselineResults): Summary {
  const fastify = baselineFigure(baselines.fastify);
  const redisLimiter = baselineFigure(baselines.redisLimiter);
  const ratios = {
    fastify: ratio(outcome.throughputRps, fastify?.rps ?? null),
    redisLimiter: ratio(outcome.throughputRps, redisLimiter?.rps ?? null),
  };
  const tail = { baselines: { fastify, redisLimiter }, ratios };
  if (scenario !== "verify") return { scenario, ...outcome.figures, ...tail };
  const figures: Record<string, unknown> = { ...outcome.figures };
  const head: Record<string, unknown> = { scenario, baselineRps: fastify?.rps ?? null };
  for (const name of verifyHead) { head[name] = figures[name] ?? null; delete figures[name]; }
  head["ratio"] = ratios.fastify;
  for (const name of ["p50Ms", "p99Ms", "coreDecisionsPerSec"]) { head[name] = figures[name] ?? null; delete figures[name]; }
  return { ...(head as { scenario: ScenarioName }), ...figures, ...tail };
}

function baselineFigure(phase: PhaseResult | null): BaselineFigure | null {
  return phase === null ? null : { rps: phase.rps, p99Ms: phase.latency.p99Ms };
}

/** numerator / denominator to 3 decimals; null when either is unknown or the denominator is 0. */
export function ratio(numerator: number | null, denominator: number | null): number | null {
  if (numerator === null || denominator === null || denominator <= 0) return null;
  return Math.round((numerator / denominator) * 1000) / 1000;
}
