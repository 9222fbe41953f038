// What a scenario loads: the --target deployments, or a node the harness starts itself.
import type { BenchOptions } from "../args.js";
import { existsSync } from "node:fs";
import { isAbsolute, join } from "node:path";
import { BenchError, NotAvailableError, ProcessStartError } from "../errors.js";
import { getStatus } from "../http.js";
import { defaultNodeEntry, repoRoot } from "../paths.js";
import { startLocalNode } from "../procs/keyraft-node.js";

export interface Deployment {
  targets: readonly string[];
  rootKey: string;
  /** True when the harness started it (on this machine). */
  local: boolean;
  /** CPU seconds used so far by its processes; null when they are not local. */
  cpuSeconds: () => number | null;
  stop: () => Promise<void>;
}

/** Fails fast, before any baseline runs, when the deployment cannot be opened. */
export async function checkDeployment(options: BenchOptions): Promise<void> {
  if (options.targets.length > 0) {
    if (options.rootKey === null) {
      throw new NotAvailableError("--target needs a root key holding `*` to seed the deployment: pass --root-key KEY or set KEYRAFT_ROOT_KEY");
    }
    for (const target of options.targets) await expectLive(target);
    return;
  }
  if (options.cluster !== null) {
    throw new NotAvailableError(`--cluster ${options.cluster}: running this scenario on a local cluster is not yet available; ` +
      "`npm run bench -- cluster` measures a local 3-node cluster, or start the nodes yourself and pass them with --target URL,URL,...");
  }
  const entry = options.nodeEntry ?? defaultNodeEntry;
  if (!existsSync(isAbsolute(entry) ? entry : join(repoRoot, entry))) {
    throw new ProcessStartError(`${entry} does not exist: build first (npx tsc -b), or pass --target URL`);
  }
}

export async function openDeployment(options: BenchOptions, log: (line: string) => void): Promise<Deployment> {
  await checkDeployment(options);
  if (options.targets.length > 0 && options.rootKey !== null) {
    log(`loading ${options.targets.length} target(s): ${options.targets.join(", ")}`);
    return { targets: options.targets, rootKey: options.rootKey, local: false, cpuSeconds: () => null, stop: async () => {} };
  }
  const entry = options.nodeEntry ?? defaultNodeEntry;
  log(`starting a keyraft node (${entry}) on a free port with a temporary data dir`);
  const node = await startLocalNode(entry);
  log(`node ready at ${node.url} (pid ${node.process.pid})`);
  return { targets: [node.url], rootKey: node.rootKey, local: true, cpuSeconds: node.cpuSeconds, stop: node.stop };
}

async function expectLive(target: string): Promise<void> {
  let status: number;
  try {
    status = await getStatus(target, "/v1/liveness");
  } catch (error) {
    throw new BenchError(`--target ${target} is not reachable: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (status !== 200) throw new BenchError(`--target ${target}: GET /v1/liveness answered HTTP ${status}, expected 200`);
}
