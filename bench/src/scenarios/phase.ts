// Phases: what to load (a definition), and running a set of them, in one or more interleaved
// rounds, so that slow drifts of a shared machine hit every phase alike.
import type { BenchOptions } from "../args.js";
import type { RequestSpec } from "../load/plan.js";
import { phaseResult, runLoadOnce, type LoadRun, type PhaseResult } from "../load/run-load.js";
import type { PhaseDefinition, ScenarioContext } from "./types.js";

export type { PhaseDefinition } from "./types.js";

/** Fixed so that two runs with the same flags draw the same sequence of keys. */
export const runSeed = 0x6b657972;
/** Warm-up of every round after the first (connections are new, the JIT is already warm). */
const laterRoundWarmupSMax = 1;

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

/**
 * Runs every definition `options.rounds` times, interleaved (A B C, C B A, ...), each run getting
 * an equal share of --duration, and merges each definition's runs into one result.
 */
export async function runPhases(
  context: ScenarioContext,
  definitions: readonly PhaseDefinition[],
): Promise<Map<string, PhaseResult>> {
  const { options } = context;
  const runs = new Map<string, LoadRun[]>(definitions.map((definition) => [definition.label, []]));
  if (runs.size !== definitions.length) throw new Error("phase labels must be unique");
  for (let round = 0; round < options.rounds; round++) {
    for (const definition of roundOrder(definitions, round)) {
      const roundLabel =
        options.rounds === 1 ? definition.label : `${definition.label} (round ${round + 1}/${options.rounds})`;
      const warmupS = round === 0 ? options.warmupS : Math.min(options.warmupS, laterRoundWarmupSMax);
      const durationS = options.durationS / options.rounds;
      context.log(
        `phase ${roundLabel}: ${options.connections} connections, ${warmupS}s warm-up + ${durationS}s over ${definition.targets.length} target(s)`,
      );
      await definition.around?.before();
      const run = await runLoadOnce(
        {
          label: roundLabel,
          targets: definition.targets,
          connections: options.connections,
          warmupMs: warmupS * 1000,
          durationMs: durationS * 1000,
          requests: definition.requests,
          seed: (runSeed + round) >>> 0,
        },
        options.workers,
        { progress: context.progress, targetCpuSeconds: definition.cpuSeconds },
      );
      await definition.around?.after();
      runs.get(definition.label)?.push(run);
    }
  }
  const results = new Map<string, PhaseResult>();
  for (const [label, phaseRuns] of runs) {
    const result = phaseResult(label, phaseRuns);
    context.log(
      `phase ${label}: ${result.rps} rps, p50 ${result.latency.p50Ms} ms, p99 ${result.latency.p99Ms} ms, errors ${result.errors}`,
    );
    results.set(label, result);
  }
  return results;
}

/**
 * The order of the phases in a round: as given in odd rounds (the first one: the scenario's
 * phases first, so what seeding left behind costs keyraft), reversed in even ones (A B C, C B A,
 * A B C, ...). A machine whose speed drifts steadily then slows the first and the last phase of
 * the list alike, over an even number of rounds exactly, where a fixed order would favour one.
 */
export function roundOrder<T>(definitions: readonly T[], round: number): readonly T[] {
  return round % 2 === 0 ? definitions : [...definitions].reverse();
}

/** The result of a phase that must have run (a programmer error otherwise). */
export function resultOf(results: ReadonlyMap<string, PhaseResult>, label: string): PhaseResult {
  const result = results.get(label);
  if (result === undefined) throw new Error(`no result for phase ${label}`);
  return result;
}
