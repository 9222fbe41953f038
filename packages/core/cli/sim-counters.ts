// Runs the credit-lease simulation (or, with --ratelimit, the rate-limit ownership simulation, or
// with --async the async-limit shares simulation) over many seeds:
//   npm run test:sim-counters -- [--storage-goes-back | --ratelimit [--clock-offsets] [--removals] | --async] --seeds 10000 [--from N] [--seed N] [--steps M] [--verbose]
// On failure it prints the seed and the command that replays it, and exits 1.
// The simulations are pure (packages/core/src/sim-counters); this entry is the only part that
// touches process and console, so it is its own TypeScript project with Node's types, outside the
// src/ that core's compiler settings and packages/core/test/purity.test.ts keep free of I/O.
import { parseArgs } from "node:util";
import {
  runAsyncSimulation,
  runCounterSimulation,
  runRateLimitSimulation,
  type AsyncSimStats,
  type CounterSimStats,
  type RateLimitSimStats,
} from "@keyraft/core/sim-counters";

const usage = `usage: npm run test:sim-counters -- [flags]

Runs the credit-lease simulation (or the rate-limit ownership one) over many seeds.

flags:
  --seeds N      how many seeds, from --from on (default 1000)
  --from N       first seed (default 1)
  --seed N       run this one seed only
  --steps N      steps of the fault phase (default 400)
  --verbose      print the trace of every step
  --ratelimit    run the rate-limit ownership simulation instead
  --clock-offsets  with --ratelimit: per-node clock offsets below a bucket, and clock steps
  --removals     with --ratelimit: a serving successor may leave a key's ranking for good (removed, its counts gone)
  --async        run the async-limit shares simulation instead (a step is 10 simulated ms)
  --storage-goes-back  credit leases: journals wiped at some restarts (the node must refuse to start)
  --help         this text`;

interface CliOptions {
  seeds: number;
  from: number;
  seed: number | null;
  steps: number;
  verbose: boolean;
  ratelimit: boolean;
  clockOffsets: boolean;
  removals: boolean;
  storageGoesBack: boolean;
  async: boolean;
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
      ratelimit: { type: "boolean" },
      "clock-offsets": { type: "boolean" },
      removals: { type: "boolean" },
      "storage-goes-back": { type: "boolean" },
      async: { type: "boolean" },
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
    steps: count("steps", values.steps, 400),
    verbose: values.verbose === true,
    ratelimit: values.ratelimit === true,
    clockOffsets: values["clock-offsets"] === true,
    removals: values.removals === true,
    storageGoesBack: values["storage-goes-back"] === true,
    async: values.async === true,
  };
}

function main(): number {
  let options: CliOptions | "help";
  try {
    options = readOptions(process.argv.slice(2));
  } catch (error) {
    // One line and exit 2 on a bad flag, like every command-line tool of the repository.
    const message = error instanceof Error ? error.message : String(error);
    console.error(`test:sim-counters: ${message.split("\n")[0]} (see --help)`);
    return 2;
  }
  if (options === "help") {
    console.log(usage);
    return 0;
  }
  if (options.async) {
    return runSeeds<AsyncSimStats>(options, {
      run: (seed, trace) => runAsyncSimulation(withTrace({ seed, durationMs: options.steps * 10 }, trace)),
      summed: ["requests", "admitted", "admittedBeyondFloor", "refusedByShare"],
      replayFlags: "--async ",
      seedsFile: null,
      printStatsOfOneSeed: true,
      summaryPrefix: "async limits: ",
    });
  }
  if (options.ratelimit) {
    return runSeeds<RateLimitSimStats>(options, {
      run: (seed, trace) =>
        runRateLimitSimulation(
          withTrace(
            { seed, steps: options.steps, clockOffsets: options.clockOffsets, removals: options.removals },
            trace,
          ),
        ),
      summed: [
        "requests",
        "admitted",
        "refusedUnavailable",
        "takeovers",
        "handBacks",
        "crashes",
        "partitions",
        "removals",
      ],
      replayFlags: `--ratelimit ${options.clockOffsets ? "--clock-offsets " : ""}${options.removals ? "--removals " : ""}`,
      seedsFile: null,
      printStatsOfOneSeed: false,
      summaryPrefix: "rate limits: ",
    });
  }
  return runSeeds<CounterSimStats>(options, {
    run: (seed, trace) =>
      runCounterSimulation(withTrace({ seed, steps: options.steps, storageGoesBack: options.storageGoesBack }, trace)),
    summed: [
      "verifications",
      "admittedLocal",
      "admittedForwarded",
      "noLease",
      "noLeaseWithCredits",
      "grants",
      "settles",
      "expires",
      "crashes",
      "partitions",
      "resets",
      "refusedStarts",
    ],
    replayFlags: options.storageGoesBack ? "--storage-goes-back " : "",
    seedsFile: "packages/core/testdata/sim-counters-seeds.txt",
    printStatsOfOneSeed: true,
    summaryPrefix: "",
  });
}

type Trace = (line: string) => void;

/** The options with `trace` only when there is one (the options type has it optional, not undefined). */
function withTrace<T extends object>(options: T, trace: Trace | undefined): T & { trace?: Trace } {
  return trace === undefined ? options : { ...options, trace };
}

interface SeedRun<Stats extends Record<keyof Stats, number>> {
  run: (seed: number, trace: Trace | undefined) => { ok: boolean; failure?: string | undefined; stats: Stats };
  /** The stats summed over the seeds, in the order the summary prints them. */
  summed: readonly (keyof Stats)[];
  /** Flags of the replay command before --seed. */
  replayFlags: string;
  /** Where a failing seed is added for the regression test; null: not said. */
  seedsFile: string | null;
  printStatsOfOneSeed: boolean;
  summaryPrefix: string;
}

/** Runs one simulation over the seeds; prints each failure with its replay command; 0 when all pass. */
function runSeeds<Stats extends Record<keyof Stats, number>>(options: CliOptions, sim: SeedRun<Stats>): number {
  const seeds =
    options.seed === null ? Array.from({ length: options.seeds }, (_, i) => options.from + i) : [options.seed];
  const startedMs = performance.now();
  const totals: Partial<Record<keyof Stats, number>> = {};
  for (const key of sim.summed) totals[key] = 0;
  let failures = 0;
  for (const seed of seeds) {
    const trace = options.verbose ? (line: string) => console.log(line) : undefined;
    const result = sim.run(seed, trace);
    if (sim.printStatsOfOneSeed && seeds.length === 1) console.log(JSON.stringify(result.stats));
    for (const key of sim.summed) totals[key] = (totals[key] ?? 0) + result.stats[key];
    if (!result.ok) {
      failures++;
      console.log(`FAIL seed ${seed}: ${result.failure ?? ""}`);
      console.log(
        `replay: npm run test:sim-counters -- ${sim.replayFlags}--seed ${seed} --steps ${options.steps} --verbose`,
      );
      if (sim.seedsFile !== null) console.log(`then add ${seed} to ${sim.seedsFile}`);
      if (failures >= 10) break;
    }
  }
  const seconds = (performance.now() - startedMs) / 1000;
  console.log(
    `${sim.summaryPrefix}${seeds.length} seeds x ${options.steps} steps in ${seconds.toFixed(1)} s, ${failures} failed; ` +
      `totals ${JSON.stringify(totals)}`,
  );
  return failures === 0 ? 0 : 1;
}

process.exitCode = main();
