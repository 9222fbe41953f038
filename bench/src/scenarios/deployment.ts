// What a scenario loads: the --target deployments, a node the harness starts itself, or with
// --cluster N a local N-node cluster (started by startBenchCluster, the one implementation of
// starting a bench cluster, shared with the cluster and counters scenarios).
import type { BenchOptions } from "../args.js";
import { existsSync } from "node:fs";
import { isAbsolute, join } from "node:path";
import { BenchError, NotAvailableError, ProcessStartError } from "../errors.js";
import { getStatus } from "../http.js";
import { defaultNodeEntry, repoRoot } from "../paths.js";
import { stopWithAll } from "../procs/child.js";
import { waitConverged } from "../procs/converge.js";
import { processesCpuSeconds } from "../procs/cpu.js";
import { startLocalNode } from "../procs/keyraft-node.js";
import { startBenchCluster } from "./cluster.js";

export interface Deployment {
  /** Seeding goes to the first one (a cluster's leader when the harness started it); load goes to all. */
  targets: readonly string[];
  rootKey: string;
  /** True when the harness started it (on this machine). */
  local: boolean;
  /** CPU seconds used so far by its processes; null when they are not local. */
  cpuSeconds: () => number | null;
  /**
   * Waits until what was written so far (the seed) is visible on every target: with several
   * targets, until every node applied what the cluster had committed. Call after seeding.
   */
  settle: (log: (line: string) => void) => Promise<void>;
  stop: () => Promise<void>;
}

/** Node ids of a local cluster of `size` members. */
export function clusterMemberIds(size: number): string[] {
  return Array.from({ length: size }, (_, i) => `n${i + 1}`);
}

/** Fails fast, before any baseline runs, when the deployment cannot be opened. */
export async function checkDeployment(options: BenchOptions): Promise<void> {
  if (options.targets.length > 0) {
    if (options.rootKey === null) {
      throw new NotAvailableError(
        "--target needs a root key holding `*` to seed the deployment: pass --root-key KEY or set KEYRAFT_ROOT_KEY",
      );
    }
    for (const target of options.targets) await expectLive(target);
    return;
  }
  const entry = options.cluster !== null ? clusterNodeEntry() : (options.nodeEntry ?? defaultNodeEntry);
  if (!existsSync(isAbsolute(entry) ? entry : join(repoRoot, entry))) {
    throw new ProcessStartError(`${entry} does not exist: build first (npx tsc -b), or pass --target URL`);
  }
}

/** The node a local cluster runs (startBenchCluster's choice: KEYRAFT_BENCH_MAIN_JS, else the built gateway). */
function clusterNodeEntry(): string {
  return process.env["KEYRAFT_BENCH_MAIN_JS"] ?? defaultNodeEntry;
}

export async function openDeployment(options: BenchOptions, log: (line: string) => void): Promise<Deployment> {
  await checkDeployment(options);
  if (options.targets.length > 0 && options.rootKey !== null) {
    log(`loading ${options.targets.length} target(s): ${options.targets.join(", ")}`);
    return {
      targets: options.targets,
      rootKey: options.rootKey,
      local: false,
      cpuSeconds: () => null,
      settle: settleTargets(options.targets, options.rootKey),
      stop: async () => {},
    };
  }
  if (options.cluster !== null) return openLocalCluster(options.cluster, log);
  const entry = options.nodeEntry ?? defaultNodeEntry;
  log(`starting a keyraft node (${entry}) on a free port with a temporary data dir`);
  const node = await startLocalNode(entry);
  log(`node ready at ${node.url} (pid ${node.process.pid})`);
  return {
    targets: [node.url],
    rootKey: node.rootKey,
    local: true,
    cpuSeconds: node.cpuSeconds,
    settle: async () => {},
    stop: node.stop,
  };
}

async function openLocalCluster(size: number, log: (line: string) => void): Promise<Deployment> {
  log(`starting a local ${size}-node keyraft cluster (${clusterNodeEntry()}) on free ports with temporary data dirs`);
  let cluster: Awaited<ReturnType<typeof startBenchCluster>>;
  try {
    cluster = await startBenchCluster(log, clusterMemberIds(size), 0);
  } catch (error) {
    throw new ProcessStartError(
      `the local cluster did not start: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  const leaderUrl = `http://127.0.0.1:${cluster.leader.httpPort}`;
  // The leader first: seeding goes there (no forwarding hop); the load goes to every member.
  const targets = [leaderUrl, ...cluster.targets.filter((url) => url !== leaderUrl)];
  const withdraw = stopWithAll(cluster.stop); // Ctrl-C and fatal errors stop the members too
  const stop = async (): Promise<void> => {
    await cluster.stop();
    withdraw();
  };
  const pids = cluster.members.map((member) => member.child.pid ?? -1);
  const memberLines = cluster.members.map(
    (member) => `${member.id} at http://127.0.0.1:${member.httpPort} (pid ${member.child.pid ?? "?"})`,
  );
  log(`cluster ready: ${memberLines.join(", ")}; leader ${cluster.leader.id}`);
  return {
    targets,
    rootKey: cluster.rootKey,
    local: true,
    cpuSeconds: () => processesCpuSeconds(pids),
    settle: settleTargets(targets, cluster.rootKey),
    stop,
  };
}

/** With several targets, waits until each applied what the cluster committed (skipped, with a line, for nodes that do not say). */
function settleTargets(targets: readonly string[], rootKey: string): (log: (line: string) => void) => Promise<void> {
  return async (log) => {
    if (targets.length < 2) return;
    const index = await waitConverged(targets, rootKey);
    if (index === null) log("targets do not all serve GET /v1/cluster.status: not waiting for the seed to replicate");
    else log(`seed visible on all ${targets.length} nodes (each applied index ${index})`);
  };
}

async function expectLive(target: string): Promise<void> {
  let status: number;
  try {
    status = await getStatus(target, "/v1/liveness");
  } catch (error) {
    throw new BenchError(
      `--target ${target} is not reachable: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  if (status !== 200)
    throw new BenchError(`--target ${target}: GET /v1/liveness answered HTTP ${status}, expected 200`);
}
