// Builds request specs and runs one load phase against a deployment with the run's options.
import type { BenchOptions } from "../args.js";
import type { RequestSpec } from "../load/plan.js";
import { runLoad, type PhaseResult } from "../load/run-load.js";
import type { ScenarioContext } from "./types.js";

/** Fixed so that two runs with the same flags choose the same keys in the same order. */
export const runSeed = 0x6b657972;

export interface SpecInput {
  name: string;
  path: string;
  bodyTemplate: string;
  pool: readonly string[];
  weight?: number;
  /** Send the root key (admin endpoints). */
  rootKey?: string;
  okMarker?: string;
}

export function requestSpec(options: BenchOptions, input: SpecInput): RequestSpec {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (input.rootKey !== undefined) headers["authorization"] = `Bearer ${input.rootKey}`;
  return {
    name: input.name,
    weight: input.weight ?? 1,
    method: "POST",
    path: input.path,
    headers,
    bodyTemplate: input.bodyTemplate,
    pool: input.pool,
    distribution: options.distribution,
    zipfExponent: options.zipfExponent,
    okMarker: input.okMarker ?? null,
  };
}

export async function runPhase(
  context: ScenarioContext, label: string, targets: readonly string[], requests: readonly RequestSpec[],
  targetCpuSeconds: () => number | null,
): Promise<PhaseResult> {
  const { options } = context;
  context.log(`phase ${label}: ${options.connections} connections, ${options.warmupS}s warm-up + ${options.durationS}s over ${targets.length} target(s)`);
  const result = await runLoad({
    label, targets, connections: options.connections, warmupMs: options.warmupS * 1000,
    durationMs: options.durationS * 1000, requests, seed: runSeed,
  }, options.workers, { progress: context.progress, targetCpuSeconds });
  context.log(`phase ${label}: ${result.rps} rps, p50 ${result.latency.p50Ms} ms, p99 ${result.latency.p99Ms} ms, errors ${result.errors}`);
  return result;
}
