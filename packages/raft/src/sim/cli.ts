// Runs the deterministic simulator over many seeds:
//   npm run test:sim -- --seeds 10000 [--from N] [--seed N] [--steps M] [--verbose]
// On failure it prints the seed and the command that replays it, and exits 1.
import { runSimulation, type SimResult } from "./simulation.js";

interface CliOptions {
  seeds: number;
  from: number;
  seed: number | null;
  steps: number;
  verbose: boolean;
}

function parseArgs(argv: readonly string[]): CliOptions {
  const options: CliOptions = { seeds: 1000, from: 1, seed: null, steps: 300, verbose: false };
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
    else throw new Error(`unknown flag ${flag}`);
  }
  return options;
}

function replayCommand(result: SimResult, steps: number): string {
  return `npm run test:sim -- --seed ${result.seed} --steps ${steps} --verbose`;
}

function main(): number {
  const options = parseArgs(process.argv.slice(2));
  const seeds =
    options.seed === null ? Array.from({ length: options.seeds }, (_, i) => options.from + i) : [options.seed];
  const startedMs = performance.now();
  let failures = 0;
  const totals = {
    terms: 0,
    appliedMax: 0,
    crashes: 0,
    crashesLosingSentEntries: 0,
    partitions: 0,
    confChanges: 0,
    snapshotsTaken: 0,
    readsChecked: 0,
    messagesSent: 0,
  };
  let livenessStepsMax = 0;
  let slowestSeed = 0;
  for (const [i, seed] of seeds.entries()) {
    const trace = options.verbose ? (line: string) => console.log(line) : undefined;
    const result = runSimulation(
      trace === undefined ? { seed, steps: options.steps } : { seed, steps: options.steps, trace },
    );
    if (options.verbose || seeds.length === 1) console.log(JSON.stringify(result.stats));
    for (const key of Object.keys(totals) as (keyof typeof totals)[]) totals[key] += result.stats[key];
    if (result.ok && result.stats.livenessSteps > livenessStepsMax) {
      livenessStepsMax = result.stats.livenessSteps;
      slowestSeed = seed;
    }
    if (!result.ok) {
      failures++;
      console.log(`FAIL seed ${seed}: ${result.failure}`);
      console.log(`replay: ${replayCommand(result, options.steps)}`);
      if (failures >= 10) break;
    }
    if ((i + 1) % 500 === 0)
      console.log(
        `${i + 1}/${seeds.length} seeds, ${failures} failed, ${Math.round(performance.now() - startedMs)} ms`,
      );
  }
  console.log(
    `totals ${JSON.stringify(totals)}; slowest recovery after healing: ${livenessStepsMax} steps (seed ${slowestSeed})`,
  );
  console.log(
    `${seeds.length} seeds x ${options.steps} steps: ${failures === 0 ? "ok" : `${failures} FAILED`} in ${Math.round(performance.now() - startedMs)} ms`,
  );
  return failures === 0 ? 0 : 1;
}

process.exitCode = main();
