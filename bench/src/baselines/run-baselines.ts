// Runs the baselines of an invocation, one at a time, each as its own process on this machine and
// under the same load settings as the scenario: (a) plain Fastify, (b) Fastify + rate-limiter-flexible
// on a local Redis (skipped, with a message, when redis-server is not installed).
import { join } from "node:path";
import type { BenchOptions } from "../args.js";
import { getStatus } from "../http.js";
import type { PhaseResult } from "../load/run-load.js";
import { benchDist, repoRoot } from "../paths.js";
import { startProcess, type StartedProcess } from "../procs/child.js";
import { processesCpuSeconds } from "../procs/cpu.js";
import { freePort } from "../procs/free-port.js";
import { redisInstallHint, redisServerInstalled, startRedis } from "../procs/redis.js";
import { requestSpec, runPhase } from "../scenarios/phase.js";
import type { ScenarioContext } from "../scenarios/types.js";

export interface BaselineResults {
  fastify: PhaseResult | null;
  redisLimiter: PhaseResult | null;
  notes: string[];
}

export async function runBaselines(context: ScenarioContext): Promise<BaselineResults> {
  const { options } = context;
  if (!options.baselines) return { fastify: null, redisLimiter: null, notes: ["baselines skipped (--no-baselines)"] };
  const notes: string[] = [];
  const fastify = await withServer("fastify baseline", "fastify-plain.js", {}, [], (url, pids) =>
    runPhase(context, "baseline fastify", [url], [baselineSpec(options)], () => processesCpuSeconds(pids)));
  let redisLimiter: PhaseResult | null = null;
  if (!redisServerInstalled()) {
    context.log(redisInstallHint);
    notes.push(redisInstallHint);
  } else {
    const redis = await startRedis();
    try {
      redisLimiter = await withServer("redis-limiter baseline", "fastify-redis.js", { REDIS_PORT: String(redis.port) }, [redis.process],
        (url, pids) => runPhase(context, "baseline redis-limiter", [url], [baselineSpec(options)], () => processesCpuSeconds(pids)));
    } finally {
      await redis.process.stop();
    }
  }
  if (options.targets.length > 0) {
    notes.push("baselines ran on this machine while the targets are elsewhere: ratios compare different machines");
  }
  return { fastify, redisLimiter, notes };
}

/** The same request shape as verify: a JSON body with a key drawn from --keys identifiers. */
function baselineSpec(options: BenchOptions) {
  const pool = Array.from({ length: options.keys }, (_, i) => `bench_baseline_${i.toString(36)}`);
  return requestSpec(options, {
    name: "baseline", path: "/v1/keys.verifyKey", bodyTemplate: `{"key":{{pick}}}`, pool, okMarker: '"valid":true',
  });
}

async function withServer<T>(
  name: string, script: string, env: Record<string, string>, helpers: readonly StartedProcess[],
  body: (url: string, pids: number[]) => Promise<T>,
): Promise<T> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const server = await startProcess({
    name, command: process.execPath, args: [join(benchDist, "baselines", script)], cwd: repoRoot,
    env: { ...env, PORT: String(port), HOST: "127.0.0.1" },
    ready: async () => (await getStatus(url, "/v1/liveness")) === 200,
  });
  try {
    return await body(url, [server.pid, ...helpers.map((helper) => helper.pid)]);
  } finally {
    await server.stop();
  }
}
