// `npm run test:faults -- [--seed N] [--duration ms] [--nodes N] [--ratelimit-bound-factor F]`:
// a long randomized fault campaign against real node processes. Prints the seed first, the faults
// as they strike, and last one JSON line with the report; exits 1 on any violation.
import { runCampaign } from "./campaign.js";
import { clusterUnavailableReason } from "./processes.js";

function parseArgs(argv: readonly string[]): { seed: number; durationMs: number; nodes: number; factor: number } {
  const options = { seed: Math.floor(Math.random() * 2 ** 31), durationMs: 120_000, nodes: 3, factor: 0 };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const raw = argv[++i];
    const value = Number(raw);
    if (raw === undefined || !Number.isFinite(value) || value < 0)
      throw new Error(`${flag} needs a non-negative number`);
    if (flag === "--seed") options.seed = Math.floor(value);
    else if (flag === "--duration") options.durationMs = Math.floor(value);
    else if (flag === "--nodes") options.nodes = Math.max(1, Math.floor(value));
    else if (flag === "--ratelimit-bound-factor") options.factor = value;
    else throw new Error(`unknown flag ${flag}`);
  }
  return options;
}

async function main(): Promise<number> {
  const options = parseArgs(process.argv.slice(2));
  const missing = clusterUnavailableReason();
  if (missing !== null) {
    console.error(`test:faults cannot run: ${missing}`);
    return 2;
  }
  // async:false limits are judged by their owner across the cluster (docs/counters.md §2): the bound is the limit itself.
  const factor = options.factor > 0 ? options.factor : 1;
  console.log(
    `seed ${options.seed} (replay: npm run test:faults -- --seed ${options.seed} --duration ${options.durationMs} --nodes ${options.nodes})`,
  );
  const report = await runCampaign({
    seed: options.seed,
    durationMs: options.durationMs,
    nodes: options.nodes,
    ratelimitBoundFactor: factor,
    log: (line) => console.log(line),
  });
  for (const v of report.violations) console.log(`VIOLATION: ${v}`);
  console.log(JSON.stringify(report));
  return report.violations.length === 0 ? 0 : 1;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  },
);
