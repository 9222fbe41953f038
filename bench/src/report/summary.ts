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
    /**
     * Ratios of requests per CPU-second of the process under test. On a small machine the load
     * generator shares the CPUs, which pulls plain throughput ratios toward 1; these do not.
     * Null when CPU use is unknown (remote targets).
     */
    perCoreRatios: { fastify: number | null; redisLimiter: number | null };
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
  const perCore = (phase: PhaseResult | null): number | null =>
    ratio(
      perCoreRps(outcome.throughputRps, outcome.throughputCpuCores),
      phase === null ? null : perCoreRps(phase.rps, phase.targetCpuCores),
    );
  const perCoreRatios = { fastify: perCore(baselines.fastify), redisLimiter: perCore(baselines.redisLimiter) };
  const tail = { perCoreRatios, baselines: { fastify, redisLimiter }, ratios };
  if (scenario !== "verify") return { scenario, ...outcome.figures, ...tail };
  const figures: Record<string, unknown> = { ...outcome.figures };
  const head: Record<string, unknown> = { scenario, baselineRps: fastify?.rps ?? null };
  for (const name of verifyHead) {
    head[name] = figures[name] ?? null;
    delete figures[name];
  }
  head["ratio"] = ratios.fastify;
  // Verification with a rate limit against the Fastify + rate-limiter-flexible + Redis route.
  const ratelimitRps = head["verifyRatelimitRps"];
  figures["verifyRatelimitRatioToRedis"] = ratio(
    typeof ratelimitRps === "number" ? ratelimitRps : null,
    redisLimiter?.rps ?? null,
  );
  for (const name of ["p50Ms", "p99Ms", "coreDecisionsPerSec"]) {
    head[name] = figures[name] ?? null;
    delete figures[name];
  }
  return { ...(head as { scenario: ScenarioName }), ...figures, ...tail };
}

function baselineFigure(phase: PhaseResult | null): BaselineFigure | null {
  return phase === null ? null : { rps: phase.rps, p99Ms: phase.latency.p99Ms };
}

function perCoreRps(rps: number | null, cores: number | null): number | null {
  return rps === null || cores === null || cores <= 0 ? null : rps / cores;
}

/** numerator / denominator to 3 decimals; null when either is unknown or the denominator is 0. */
export function ratio(numerator: number | null, denominator: number | null): number | null {
  if (numerator === null || denominator === null || denominator <= 0) return null;
  return Math.round((numerator / denominator) * 1000) / 1000;
}
