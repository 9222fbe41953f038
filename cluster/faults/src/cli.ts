// `npm run test:faults -- [--seed N] [--duration ms] [--nodes N] [--ratelimit-bound-factor F] [--clock-skew-ms MS] [--membership-changes N] [--power-cuts N] [--snapshot-every N] [--snapshot-piece-bytes B]`:
// a long randomized fault campaign against real node processes. Prints the seed first, the faults
// as they strike, and last one JSON line with the report; exits 1 on any violation.
import { parseArgs } from "node:util";
import { defaultClockSkewMs, runCampaign } from "./campaign.js";
import { summaryTable } from "./summary.js";
import { clusterUnavailableReason, powerCutUnavailableReason } from "./processes.js";

const usage = `usage: npm run test:faults -- [flags]

A randomized fault campaign against real node processes; exits 1 on any violation.

flags:
  --seed N                      the campaign's seed (default: a random one, printed first)
  --duration MS                 how long the campaign runs (default 120000)
  --nodes N                     cluster size (default 3)
  --ratelimit-bound-factor F    how far over its limit a rate-limit window may go (default 1)
  --clock-skew-ms MS            each node's clock offset is drawn from [0, MS] (default 150)
  --membership-changes N        remove a voter and add it back N times during the run (default 0)
  --membership-fresh            each membership change adds a brand-new node (empty data dir), then removes another voter for good
  --power-cuts N                cut one node's power N times, dropping its unsynced writes (needs strace; default 0)
  --snapshot-every N            the nodes snapshot every N entries (KEYRAFT_SNAPSHOT_EVERY; default: the nodes' own)
  --snapshot-piece-bytes B      snapshots past B bytes are stored as piece files of B bytes
                                (KEYRAFT_RAFT_SNAPSHOT_PIECE_BYTES, at least 4096; default: the nodes' own)
  --help                        this text`;

interface CliOptions {
  seed: number;
  durationMs: number;
  nodes: number;
  factor: number;
  clockSkewMs: number;
  membershipChanges: number;
  snapshotEvery: number;
  snapshotPieceBytes: number;
  membershipFresh: boolean;
  powerCuts: number;
}

/** The options, or "help"; throws with a message for the user on a bad flag. */
function readOptions(argv: string[]): CliOptions | "help" {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    allowPositionals: false,
    options: {
      seed: { type: "string" },
      duration: { type: "string" },
      nodes: { type: "string" },
      "ratelimit-bound-factor": { type: "string" },
      "clock-skew-ms": { type: "string" },
      "membership-changes": { type: "string" },
      "membership-fresh": { type: "boolean" },
      "power-cuts": { type: "string" },
      "snapshot-every": { type: "string" },
      "snapshot-piece-bytes": { type: "string" },
      help: { type: "boolean" },
    },
  });
  if (values.help === true) return "help";
  const number = (name: string, raw: string | undefined, fallback: number): number => {
    if (raw === undefined) return fallback;
    const value = Number(raw);
    if (raw === "" || !Number.isFinite(value) || value < 0) throw new Error(`--${name} needs a non-negative number`);
    return value;
  };
  return {
    seed: Math.floor(number("seed", values.seed, Math.random() * 2 ** 31)),
    durationMs: Math.floor(number("duration", values.duration, 120_000)),
    nodes: Math.max(1, Math.floor(number("nodes", values.nodes, 3))),
    factor: number("ratelimit-bound-factor", values["ratelimit-bound-factor"], 0),
    clockSkewMs: Math.floor(number("clock-skew-ms", values["clock-skew-ms"], defaultClockSkewMs)),
    membershipChanges: Math.floor(number("membership-changes", values["membership-changes"], 0)),
    membershipFresh: values["membership-fresh"] === true,
    powerCuts: Math.floor(number("power-cuts", values["power-cuts"], 0)),
    snapshotEvery: Math.floor(number("snapshot-every", values["snapshot-every"], 0)),
    snapshotPieceBytes: Math.floor(number("snapshot-piece-bytes", values["snapshot-piece-bytes"], 0)),
  };
}

async function main(): Promise<number> {
  let options: CliOptions | "help";
  try {
    options = readOptions(process.argv.slice(2));
  } catch (error) {
    // One line and exit 2 on a bad flag, like every command-line tool of the repository.
    const message = error instanceof Error ? error.message : String(error);
    console.error(`test:faults: ${message.split("\n")[0]} (see --help)`);
    return 2;
  }
  if (options === "help") {
    console.log(usage);
    return 0;
  }
  const missing = clusterUnavailableReason() ?? (options.powerCuts > 0 ? powerCutUnavailableReason() : null);
  if (missing !== null) {
    console.error(`test:faults cannot run: ${missing}`);
    return 2;
  }
  // async:false limits are judged by their owner across the cluster (docs/counters.md, rate limits): the bound is the limit itself.
  const factor = options.factor > 0 ? options.factor : 1;
  console.log(
    `seed ${options.seed} (replay: npm run test:faults -- --seed ${options.seed} --duration ${options.durationMs} --nodes ${options.nodes} --clock-skew-ms ${options.clockSkewMs} --membership-changes ${options.membershipChanges}${options.membershipFresh ? " --membership-fresh" : ""} --power-cuts ${options.powerCuts}${options.snapshotEvery > 0 ? ` --snapshot-every ${options.snapshotEvery}` : ""}${options.snapshotPieceBytes > 0 ? ` --snapshot-piece-bytes ${options.snapshotPieceBytes}` : ""})`,
  );
  const report = await runCampaign({
    seed: options.seed,
    durationMs: options.durationMs,
    nodes: options.nodes,
    ratelimitBoundFactor: factor,
    clockSkewMs: options.clockSkewMs,
    membershipChanges: options.membershipChanges,
    membershipFresh: options.membershipFresh,
    powerCuts: options.powerCuts,
    ...(options.snapshotEvery > 0 ? { snapshotEvery: options.snapshotEvery } : {}),
    ...(options.snapshotPieceBytes > 0 ? { snapshotPieceBytes: options.snapshotPieceBytes } : {}),
    log: (line) => console.log(line),
  });
  console.log(summaryTable(report));
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
