// What a scenario loads: the --target deployments, or a node the harness starts itself.
import type { BenchOptions } from "../args.js";
import { defaultNodeEntry } from "../paths.js";
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

export class NotAvailableError extends Error {
  override name = "NotAvailableError";
}

export async function openDeployment(options: BenchOptions, log: (line: string) => void): Promise<Deployment> {
  if (options.targets.length > 0) {
    if (options.rootKey === null) {
      throw new NotAvailableError("--target needs a root key holding `*` to seed the deployment: pass --root-key KEY or set KEYRAFT_ROOT_KEY");
    }
    log(`loading ${options.targets.length} target(s): ${options.targets.join(", ")}`);
    return { targets: options.targets, rootKey: options.rootKey, local: false, cpuSeconds: () => null, stop: async () => {} };
  }
  if (options.cluster !== null) {
    throw new NotAvailableError(`--cluster ${options.cluster}: starting a local cluster is not yet available (it comes with the cluster issue); ` +
      "start the nodes yourself and pass them with --target URL,URL,...");
  }
  const entry = options.nodeEntry ?? defaultNodeEntry;
  log(`starting a keyraft node (${entry}) on a free port with a temporary data dir`);
  const node = await startLocalNode(entry);
  log(`node ready at ${node.url} (pid ${node.process.pid})`);
  return { targets: [node.url], rootKey: node.rootKey, local: true, cpuSeconds: node.cpuSeconds, stop: node.stop };
}
