// Runs the deterministic simulator over many seeds:
//   npm run test:sim -- --seeds 10000 [--from N] [--seed N] [--steps M] [--verbose] [--driver]
// On failure it prints the seed and the command that replays it, and exits 1.
import { parseArgs } from "node:util";
import { runDriverSimulation } from "./driver-sim.js";
import { runSimulation } from "./simulation.js";

const usage = `usage: npm run test:sim -- [flags]

Runs the deterministic Raft simulator over many seeds (with --driver, the driver simulation:
the real RaftNode over a fake clock, network and disk).

flags:
  --seeds N      how many seeds, from --from on (default 1000)
  --from N       first seed (default 1)
  --seed N       run this one seed only
  --steps N      steps of the fault phase (default 300)
  --verbose      print the trace and the stats of every seed
  --driver       run the driver simulation instead of the core simulator
  --help         this text`;

interface CliOptions {
  seeds: number;
  from: number;
  seed: number | null;
  steps: number;
  verbose: boolean;
  driver: boolean;
}

/** The options, or "help"; throws with a message for the user on a bad flag. */
function readOptions(argv: string[]): CliOptions | "help" {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    allowPositionals: false,
    options: {
      seeds: { type: "string" },
      from: { type: "string" },
      seed: { type: "string" },
      steps: { type: "string" },
      verbose: { type: "boolean" },
      driver: { type: "boolean" },
      help: { type: "boolean" },
    },
  });
  if (values.help === true) return "help";
  const count = (name: string, raw: string | undefined, fallback: number): number => {
    if (raw === undefined) return fallback;
    const parsed = Number(raw);
    if (raw === "" || !Number.isInteger(parsed) || parsed < 0)
      throw new Error(`--${name} needs a non-negative integer`);
    return parsed;
  };
  return {
    seeds: count("seeds", values.seeds, 1000),
    from: count("from", values.from, 1),
    seed: values.seed === undefined ? null : count("seed", values.seed, 0),
    steps: count("steps", values.steps, 300),
    verbose: values.verbose === true,
    driver: values.driver === true,
  };
}

function replayCommand(seed: number, options: CliOptions): string {
  return `npm run test:sim -- ${options.driver ? "--driver " : ""}--seed ${seed} --steps ${options.steps} --verbose`;
}

/** The driver simulation over the seeds: its own totals (it has no liveness-step figure). */
async function runDriver(seeds: number[], options: CliOptions): Promise<number> {
  const startedMs = performance.now();
  let failures = 0;
  const totals: Record<string, number> = {};
  for (const [i, seed] of seeds.entries()) {
    const trace = options.verbose ? (line: string) => console.log(line) : undefined;
    const result = await runDriverSimulation(
      trace === undefined ? { seed, steps: options.steps } : { seed, steps: options.steps, trace },
    );
    if (options.verbose || seeds.length === 1) console.log(JSON.stringify(result.stats));
    for (const [key, value] of Object.entries(result.stats)) totals[key] = (totals[key] ?? 0) + value;
    if (!result.ok) {
      failures++;
      console.log(`FAIL seed ${seed}: ${result.failure}`);
      console.log(`replay: ${replayCommand(seed, options)}`);
      if (failures >= 10) break;
    }
    if ((i + 1) % 500 === 0)
      console.log(
        `${i + 1}/${seeds.length} seeds, ${failures} failed, ${Math.round(performance.now() - startedMs)} ms`,
      );
  }
  console.log(`totals ${JSON.stringify(totals)}`);
  console.log(
    `driver simulation, ${seeds.length} seeds x ${options.steps} steps: ${failures === 0 ? "ok" : `${failures} FAILED`} in ${Math.round(performance.now() - startedMs)} ms`,
  );
  return failures === 0 ? 0 : 1;
}

async function main(): Promise<number> {
  let options: CliOptions | "help";
  try {
    options = readOptions(process.argv.slice(2));
  } catch (error) {
    // One line and exit 2 on a bad flag, like every command-line tool of the repository.
    const message = error instanceof Error ? error.message : String(error);
    console.error(`test:sim: ${message.split("\n")[0]} (see --help)`);
    return 2;
  }
  if (options === "help") {
    console.log(usage);
    return 0;
  }
  const seeds =
    options.seed === null ? Array.from({ length: options.seeds }, (_, i) => options.from + i) : [options.seed];
  if (options.driver) return runDriver(seeds, options);
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
      console.log(`replay: ${replayCommand(seed, options)}`);
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

process.exitCode = await main();
