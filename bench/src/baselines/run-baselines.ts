// The baselines of an invocation, each its own process on this machine, loaded with the same
// settings as the scenario: (a) plain Fastify, (b) Fastify + rate-limiter-flexible on a local Redis
// (skipped, with a message, when redis-server is not installed). They are started here and their
// phases run beside the scenario's (see runPhases).
import { join } from "node:path";
import type { BenchOptions } from "../args.js";
import { getStatus } from "../http.js";
import type { PhaseResult } from "../load/run-load.js";
import { benchDist, repoRoot } from "../paths.js";
import { startProcess, type StartedProcess } from "../procs/child.js";
import { processesCpuSeconds } from "../procs/cpu.js";
import { freePort } from "@keyraft/raft/testing";
import { redisInstallHint, redisServerInstalled, startRedis } from "../procs/redis.js";
import { requestSpec, type PhaseDefinition } from "../scenarios/phase.js";
import type { ScenarioContext } from "../scenarios/types.js";

export const fastifyLabel = "baseline fastify";
export const redisLimiterLabel = "baseline redis-limiter";

export interface BaselineResults {
  fastify: PhaseResult | null;
  redisLimiter: PhaseResult | null;
  notes: string[];
}

export interface RunningBaselines {
  phases: PhaseDefinition[];
  notes: string[];
  results(all: ReadonlyMap<string, PhaseResult>): BaselineResults;
  close(): Promise<void>;
}

export async function startBaselines(context: ScenarioContext): Promise<RunningBaselines> {
  const { options } = context;
  const notes: string[] = [];
  const processes: StartedProcess[] = [];
  const phases: PhaseDefinition[] = [];
  const close = async (): Promise<void> => {
    await Promise.all(processes.map((started) => started.stop()));
  };
  if (!options.baselines) notes.push("baselines skipped (--no-baselines)");
  try {
    if (options.baselines) {
      const fastify = await startServer("fastify baseline", "fastify-plain.js", {});
      processes.push(fastify.process);
      phases.push(baselinePhase(options, fastifyLabel, fastify.url, [fastify.process]));
      if (!redisServerInstalled()) {
        context.log(redisInstallHint);
        notes.push(redisInstallHint);
      } else {
        const redis = await startRedis();
        processes.push(redis.process);
        const limiter = await startServer("redis-limiter baseline", "fastify-redis.js", {
          REDIS_PORT: String(redis.port),
        });
        processes.push(limiter.process);
        phases.push(baselinePhase(options, redisLimiterLabel, limiter.url, [limiter.process, redis.process]));
      }
      context.log(
        `baselines ready: ${phases.map((phase) => `${phase.label} at ${phase.targets.join(", ")}`).join("; ")}`,
      );
    }
  } catch (error) {
    await close();
    throw error;
  }
  if (options.baselines && options.targets.length > 0) {
    notes.push("baselines ran on this machine while the targets are elsewhere: ratios compare different machines");
  }
  return {
    phases,
    notes,
    results: (all) => ({
      fastify: all.get(fastifyLabel) ?? null,
      redisLimiter: all.get(redisLimiterLabel) ?? null,
      notes,
    }),
    close,
  };
}

/**
 * The request of keyraft's plain verify phase, byte for byte in shape and size: `{"apiId":…,"key":…}`
 * with an api id as long as keyraft's (`api_` + 16) and keys as long as the seeded ones
 * (`bench_` + 22), drawn from --keys of them, so both parse the same amount of JSON.
 */
export const baselineApiId = "api_baseline00000000";
export function baselineKey(index: number): string {
  return `bench_baseline${index.toString(36).padStart(14, "0")}`;
}

function baselinePhase(
  options: BenchOptions,
  label: string,
  url: string,
  processes: readonly StartedProcess[],
): PhaseDefinition {
  const pool = Array.from({ length: options.keys }, (_, i) => baselineKey(i));
  const pids = processes.map((started) => started.pid);
  return {
    label,
    targets: [url],
    cpuSeconds: () => processesCpuSeconds(pids),
    requests: [
      requestSpec(options, {
        name: "baseline",
        path: "/v1/keys.verifyKey",
        bodyTemplate: `{"apiId":${JSON.stringify(baselineApiId)},"key":{{pick}}}`,
        pool,
        okMarker: '"valid":true',
      }),
    ],
  };
}

async function startServer(
  name: string,
  script: string,
  env: Record<string, string>,
): Promise<{ url: string; process: StartedProcess }> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const started = await startProcess({
    name,
    command: process.execPath,
    args: [join(benchDist, "baselines", script)],
    cwd: repoRoot,
    env: { ...env, PORT: String(port), HOST: "127.0.0.1" },
    ready: async () => (await getStatus(url, "/v1/liveness")) === 200,
  });
  return { url, process: started };
}
