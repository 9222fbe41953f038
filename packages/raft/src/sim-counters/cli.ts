// Runs the credit-lease simulation (or, with --ratelimit, the rate-limit ownership simulation) over many seeds:
//   npm run test:sim-counters -- [--ratelimit] --seeds 10000 [--from N] [--seed N] [--steps M] [--verbose]
// On failure it prints the seed and the command that replays it, and exits 1.
import { runRateLimitSimulation } from "./ratelimit-simulation.js";
import { runCounterSimulation } from "./simulation.js";

function parseArgs(argv: readonly string[]): {
  seeds: number;
  from: number;
  seed: number | null;
  steps: number;
  verbose: boolean;
  ratelimit: boolean;
} {
  const options = { seeds: 1000, from: 1, seed: null as number | null, steps: 400, verbose: false, ratelimit: false };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const value = (): number => {
      const raw = argv[++i];
      const parsed = Number(raw);
      if (raw === undefined || !Number.isInteger(parsed) || parsed < 0)
        throw new Error(`${flag} needs a non-negative integer`);
      return parsed;
    };
    if (flag === "--seeds") options.seeds = value();
    else if (flag === "--from") options.from = value();
    else if (flag === "--seed") options.seed = value();
    else if (flag === "--steps") options.steps = value();
    else if (flag === "--verbose") options.verbose = true;
    else if (flag === "--ratelimit") options.ratelimit = true;
    else throw new Error(`unknown flag ${flag}`);
  }
  return options;
}

function main(): number {
  const options = parseArgs(process.argv.slice(2));
  if (options.ratelimit) return mainRateLimit(options);
  const seeds =
    options.seed === null ? Array.from({ length: options.seeds }, (_, i) => options.from + i) : [options.seed];
  const startedMs = performance.now();
  const totals = {
    verifications: 0,
    admittedLocal: 0,
    admittedForwarded: 0,
    noLease: 0,
    noLeaseWithCredits: 0,
    grants: 0,
    settles: 0,
    expires: 0,
    crashes: 0,
    partitions: 0,
    resets: 0,
  };
  let failures = 0;
  for (const seed of seeds) {
    const trace = options.verbose ? (line: string) => console.log(line) : undefined;
    const result = runCounterSimulation(
      trace === undefined ? { seed, steps: options.steps } : { seed, steps: options.steps, trace },
    );
    if (seeds.length === 1) console.log(JSON.stringify(result.stats));
    for (const key of Object.keys(totals) as (keyof typeof totals)[]) totals[key] += result.stats[key];
    if (!result.ok) {
      failures++;
      console.log(`FAIL seed ${seed}: ${result.failure ?? ""}`);
      console.log(`replay: npm run test:sim-counters -- --seed ${seed} --steps ${options.steps} --verbose`);
      console.log(`then add ${seed} to packages/raft/testdata/sim-counters-seeds.txt`);
      if (failures >= 10) break;
    }
  }
  const seconds = (performance.now() - startedMs) / 1000;
  console.log(
    `${seeds.length} seeds x ${options.steps} steps in ${seconds.toFixed(1)} s, ${failures} failed; totals ${JSON.stringify(totals)}`,
  );
  return failures === 0 ? 0 : 1;
}

function mainRateLimit(options: {
  seeds: number;
  from: number;
  seed: number | null;
  steps: number;
  verbose: boolean;
}): number {
  const seeds =
    options.seed === null ? Array.from({ length: options.seeds }, (_, i) => options.from + i) : [options.seed];
  const startedMs = performance.now();
  const totals = {
    requests: 0,
    admitted: 0,
    refusedUnavailable: 0,
    takeovers: 0,
    handBacks: 0,
    crashes: 0,
    partitions: 0,
  };
  let failures = 0;
  for (const seed of seeds) {
    const trace = options.verbose ? (line: string) => console.log(line) : undefined;
    const result = runRateLimitSimulation(
      trace === undefined ? { seed, steps: options.steps } : { seed, steps: options.steps, trace },
    );
    for (const key of Object.keys(totals) as (keyof typeof totals)[]) totals[key] += result.stats[key];
    if (!result.ok) {
      failures++;
      console.log(`FAIL seed ${seed}: ${result.failure ?? ""}`);
      console.log(`replay: npm run test:sim-counters -- --ratelimit --seed ${seed} --steps ${options.steps} --verbose`);
      if (failures >= 10) break;
    }
  }
  const seconds = (performance.now() - startedMs) / 1000;
  console.log(
    `rate limits: ${seeds.length} seeds x ${options.steps} steps in ${seconds.toFixed(1)} s, ${failures} failed; totals ${JSON.stringify(totals)}`,
  );
  return failures === 0 ? 0 : 1;
}

process.exitCode = main();
