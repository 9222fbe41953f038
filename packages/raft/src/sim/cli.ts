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

/** A campaign stops after this many failed seeds: each is a replay command to run on its own. */
const failuresMax = 10;
/** A progress line every this many seeds, so a long campaign shows it is moving. */
const progressEverySeeds = 500;

/** The failures and the progress of one campaign over its seeds. */
class SeedRun {
  failures = 0;
  private readonly startedMs = performance.now();

  constructor(
    private readonly seedCount: number,
    private readonly options: CliOptions,
  ) {}

  /** Records the outcome of the done-th seed (failure null when it passed); false once the campaign should stop. */
  record(done: number, seed: number, failure: string | null): boolean {
    if (failure !== null) {
      this.failures++;
      console.log(`FAIL seed ${seed}: ${failure}`);
      console.log(`replay: ${replayCommand(seed, this.options)}`);
    }
    if (done % progressEverySeeds === 0)
      console.log(`${done}/${this.seedCount} seeds, ${this.failures} failed, ${this.elapsedMs()} ms`);
    return this.failures < failuresMax;
  }

  /** The closing line: seeds, steps, the verdict and the time. */
  summary(title: string): string {
    const verdict = this.failures === 0 ? "ok" : `${this.failures} FAILED`;
    return `${title}${this.seedCount} seeds x ${this.options.steps} steps: ${verdict} in ${this.elapsedMs()} ms`;
  }

  elapsedMs(): number {
    return Math.round(performance.now() - this.startedMs);
  }
}

/** The driver simulation over the seeds: its own totals (it has no liveness-step figure). */
async function runDriver(seeds: number[], options: CliOptions): Promise<number> {
  const run = new SeedRun(seeds.length, options);
  const totals: Record<string, number> = {};
  for (const [i, seed] of seeds.entries()) {
    const trace = options.verbose ? (line: string) => console.log(line) : undefined;
    const result = await runDriverSimulation(
      trace === undefined ? { seed, steps: options.steps } : { seed, steps: options.steps, trace },
    );
    if (options.verbose || seeds.length === 1) console.log(JSON.stringify(result.stats));
    for (const [key, value] of Object.entries(result.stats)) totals[key] = (totals[key] ?? 0) + value;
    if (!run.record(i + 1, seed, result.ok ? null : (result.failure ?? "failed"))) break;
  }
  console.log(`totals ${JSON.stringify(totals)}`);
  console.log(run.summary("driver simulation, "));
  return run.failures === 0 ? 0 : 1;
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
  const run = new SeedRun(seeds.length, options);
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
    if (!run.record(i + 1, seed, result.ok ? null : (result.failure ?? "failed"))) break;
  }
  console.log(
    `totals ${JSON.stringify(totals)}; slowest recovery after healing: ${livenessStepsMax} steps (seed ${slowestSeed})`,
  );
  console.log(run.summary(""));
  return run.failures === 0 ? 0 : 1;
}

process.exitCode = await main();
