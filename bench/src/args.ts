// Parses `npm run bench -- <scenario> [flags]` into BenchOptions. Pure: no I/O, so it is unit tested.
import { parseArgs as parseFlags } from "node:util";
import { limits } from "./limits.js";

export const scenarioNames = ["verify", "ratelimit", "admin", "mixed", "raft", "cluster", "counters", "scale"] as const;
export type ScenarioName = (typeof scenarioNames)[number];
/** Scenarios that load a deployment (one node, --cluster N, or --target); the others start their own. */
export const clusterScenarios: ReadonlySet<ScenarioName> = new Set(["verify", "ratelimit", "admin", "mixed"]);
export type Distribution = "uniform" | "zipf";

export interface BenchOptions {
  scenario: ScenarioName;
  /** Base URLs to load (no trailing slash). Empty: the harness starts what it measures. */
  targets: readonly string[];
  /** Measured seconds per phase (warm-up not included). */
  durationS: number;
  /** Unmeasured seconds per phase before measuring (JIT, connection set-up). */
  warmupS: number;
  /** Interleaved rounds: every phase runs this many times (A B C, C B A, ...), each for duration/rounds. */
  rounds: number;
  /** Closed-loop concurrency: requests in flight at any time, spread over all targets. */
  connections: number;
  /** Keys the node holds for the run (split over the scenario's key groups). */
  keys: number;
  distribution: Distribution;
  /** Zipf exponent s (probability of rank k is proportional to 1/k^s). */
  zipfExponent: number;
  /** Nodes of a local cluster to start instead of a single node; null for a single node. */
  cluster: number | null;
  /** Load-generator worker threads. */
  workers: number;
  /** Root key for seeding a --target deployment (else env KEYRAFT_ROOT_KEY). */
  rootKey: string | null;
  /** Run the Fastify and Redis baselines beside the scenario. */
  baselines: boolean;
  /** Where reports go, relative to the repository root unless absolute. */
  reportDir: string;
  /** Script started as the node instead of packages/gateway/dist/main.js (development stubs). */
  nodeEntry: string | null;
  help: boolean;
}

export class ArgsError extends Error {
  override name = "ArgsError";
}

export const usage = `usage: npm run bench -- <scenario> [flags]

scenarios: ${scenarioNames.join(", ")}

flags:
  --target URL,URL,...       load these deployments instead of starting a node (needs a root key)
  --root-key KEY             root key for seeding a --target (default: env KEYRAFT_ROOT_KEY)
  --duration S               measured seconds per phase (default ${limits.durationSDefault})
  --warmup S                 unmeasured warm-up seconds per phase (default ${limits.warmupSDefault})
  --rounds N                 interleave all phases N times (A B C, C B A, ...), each for duration/N
                             (default ${limits.roundsDefault}, fewer when --duration is under ${limits.roundsDefault} s)
  --connections N            requests in flight, spread over all targets (default ${limits.connectionsDefault})
  --keys N                   keys the node holds (default ${limits.keysDefault}; scale: ${limits.scaleKeysDefault})
  --distribution D           uniform | zipf: how keys are chosen (default uniform)
  --zipf-exponent S          exponent of the zipf distribution (default ${limits.zipfExponentDefault})
  --cluster N                start a local N-node cluster instead of one node (verify, ratelimit, admin, mixed)
  --workers N                load-generator threads (default 1)
  --no-baselines             skip the Fastify and Redis baselines
  --report-dir DIR           where the JSON and HTML reports go (default bench/reports)
  --node-entry FILE          start FILE as the node instead of packages/gateway/dist/main.js
  --help                     this text`;

/** Every flag and whether it takes a value; node:util's parseArgs reads the tokens by it. */
const flagOptions = {
  target: { type: "string" },
  "root-key": { type: "string" },
  duration: { type: "string" },
  warmup: { type: "string" },
  rounds: { type: "string" },
  connections: { type: "string" },
  keys: { type: "string" },
  distribution: { type: "string" },
  "zipf-exponent": { type: "string" },
  cluster: { type: "string" },
  workers: { type: "string" },
  "no-baselines": { type: "boolean" },
  "report-dir": { type: "string" },
  "node-entry": { type: "string" },
  help: { type: "boolean" },
} as const satisfies Record<string, { type: "string" | "boolean" }>;

/** Parses argv (without node and script). Throws ArgsError with a message meant for the user. */
export function parseArgs(
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>> = {},
): BenchOptions {
  const flags = new Map<string, string>();
  const positionals: string[] = [];
  // Not strict: an unknown flag, a missing value or "--keys -1" become tokens that are judged here.
  const { tokens } = parseFlags({
    args: [...argv],
    options: flagOptions,
    strict: false,
    allowPositionals: true,
    tokens: true,
  });
  for (const token of tokens) {
    if (token.kind === "positional") positionals.push(token.value);
    if (token.kind !== "option") continue;
    const kind = Object.hasOwn(flagOptions, token.name)
      ? flagOptions[token.name as keyof typeof flagOptions].type
      : undefined;
    if (kind === undefined) throw new ArgsError(`unknown flag ${token.rawName} (see --help)`);
    if (flags.has(token.name)) throw new ArgsError(`--${token.name} given twice`);
    if (kind === "boolean") {
      if (token.inlineValue === true) throw new ArgsError(`--${token.name} takes no value`);
      flags.set(token.name, "true");
      continue;
    }
    const value = token.value;
    if (value === undefined || value === "" || (token.inlineValue !== true && value.startsWith("--"))) {
      throw new ArgsError(`--${token.name} needs a value`);
    }
    flags.set(token.name, value);
  }
  const help = flags.has("help");
  if (positionals.length > 1) throw new ArgsError(`one scenario expected, got: ${positionals.join(" ")}`);
  const scenarioArg = positionals[0];
  if (scenarioArg === undefined && !help) throw new ArgsError(`missing scenario: one of ${scenarioNames.join(", ")}`);
  const scenario = scenarioArg ?? "verify";
  if (!isScenarioName(scenario))
    throw new ArgsError(`unknown scenario "${scenario}": one of ${scenarioNames.join(", ")}`);

  const distribution = flags.get("distribution") ?? "uniform";
  if (distribution !== "uniform" && distribution !== "zipf") {
    throw new ArgsError(`--distribution must be uniform or zipf, got "${distribution}"`);
  }
  const rootKey = flags.get("root-key") ?? env["KEYRAFT_ROOT_KEY"] ?? null;
  const targets = parseTargets(flags.get("target"));
  const options: BenchOptions = {
    scenario,
    targets,
    durationS: numberFlag(flags, "duration", limits.durationSDefault, 1, limits.durationSMax),
    warmupS: numberFlag(flags, "warmup", limits.warmupSDefault, 0, limits.durationSMax),
    rounds: 1, // set below: its default depends on --duration
    connections: intFlag(flags, "connections", limits.connectionsDefault, 1, limits.connectionsMax),
    keys: intFlag(
      flags,
      "keys",
      scenario === "scale" ? limits.scaleKeysDefault : limits.keysDefault,
      1,
      limits.keysMax,
    ),
    distribution,
    zipfExponent: numberFlag(flags, "zipf-exponent", limits.zipfExponentDefault, 0.01, 10),
    cluster: flags.has("cluster") ? intFlag(flags, "cluster", 3, 1, limits.clusterNodesMax) : null,
    workers: intFlag(flags, "workers", 1, 1, limits.workersMax),
    rootKey: rootKey === "" ? null : rootKey,
    baselines: !flags.has("no-baselines"),
    reportDir: flags.get("report-dir") ?? "bench/reports",
    nodeEntry: flags.get("node-entry") ?? null,
    help,
  };
  // Rounds by default, so that a shared machine's drift hits the scenario and the baselines
  // alike; as many as fit whole seconds of --duration.
  options.rounds = flags.has("rounds")
    ? intFlag(flags, "rounds", 1, 1, limits.roundsMax)
    : Math.max(1, Math.min(limits.roundsDefault, Math.floor(options.durationS)));
  if (options.targets.length > 0 && options.cluster !== null) {
    throw new ArgsError("--cluster starts a local cluster; it cannot be combined with --target");
  }
  if (options.cluster !== null && !clusterScenarios.has(options.scenario)) {
    throw new ArgsError(
      `--cluster runs ${[...clusterScenarios].join(", ")} on a local cluster; the ${options.scenario} scenario starts what it measures itself`,
    );
  }
  if (options.cluster !== null && options.nodeEntry !== null) {
    throw new ArgsError(
      "--node-entry starts a single local node; a --cluster runs packages/gateway/dist/main.js (or KEYRAFT_BENCH_MAIN_JS)",
    );
  }
  if (options.targets.length > 0 && options.nodeEntry !== null) {
    throw new ArgsError("--node-entry starts a local node; it cannot be combined with --target");
  }
  if (options.durationS / options.rounds < 1) {
    throw new ArgsError(
      `--duration ${options.durationS} over --rounds ${options.rounds} leaves under a second per round`,
    );
  }
  if (options.cluster !== null && options.connections < options.cluster) {
    throw new ArgsError(
      `--connections (${options.connections}) must be at least the number of --cluster nodes (${options.cluster}), so every node is loaded`,
    );
  }
  if (options.connections < options.targets.length) {
    throw new ArgsError(
      `--connections (${options.connections}) must be at least the number of targets (${options.targets.length})`,
    );
  }
  return options;
}

function isScenarioName(name: string): name is ScenarioName {
  return (scenarioNames as readonly string[]).includes(name);
}

function parseTargets(raw: string | undefined): string[] {
  if (raw === undefined) return [];
  const parts = raw
    .split(",")
    .map((part) => part.trim())
    .filter((part) => part !== "");
  if (parts.length === 0) throw new ArgsError("--target needs at least one URL");
  if (parts.length > limits.targetsMax) throw new ArgsError(`--target takes at most ${limits.targetsMax} URLs`);
  return parts.map((part) => {
    let url: URL;
    try {
      url = new URL(part);
    } catch {
      throw new ArgsError(`--target: "${part}" is not a URL (expected e.g. http://127.0.0.1:8080)`);
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") {
      throw new ArgsError(`--target: "${part}" must be http:// or https://`);
    }
    if (url.search !== "" || url.hash !== "")
      throw new ArgsError(`--target: "${part}" must not have a query or fragment`);
    return url.href.replace(/\/+$/, "");
  });
}

function numberFlag(flags: Map<string, string>, name: string, fallback: number, min: number, max: number): number {
  const raw = flags.get(name);
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!/^[0-9]*\.?[0-9]+$/.test(raw) || !Number.isFinite(value))
    throw new ArgsError(`--${name} must be a number, got "${raw}"`);
  if (value < min || value > max) throw new ArgsError(`--${name} must be between ${min} and ${max}, got ${raw}`);
  return value;
}

function intFlag(flags: Map<string, string>, name: string, fallback: number, min: number, max: number): number {
  const raw = flags.get(name);
  if (raw === undefined) return fallback;
  if (!/^[0-9]+$/.test(raw)) throw new ArgsError(`--${name} must be a whole number, got "${raw}"`);
  const value = Number(raw);
  if (value < min || value > max) throw new ArgsError(`--${name} must be between ${min} and ${max}, got ${raw}`);
  return value;
}
