// Starts one keyraft node as a child process on a free port with a temporary data dir and a
// generated root key, and removes all of it again on stop.
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { isAbsolute, join } from "node:path";
import { ProcessStartError } from "../errors.js";
import { getStatus } from "../http.js";
import { repoRoot } from "../paths.js";
import { processCpuSeconds } from "./cpu.js";
import { freePort } from "@keyraft/raft/testing";
import { startProcess, type StartedProcess } from "./child.js";

export interface LocalNode {
  url: string;
  rootKey: string;
  process: StartedProcess;
  cpuSeconds(): number | null;
  stop(): Promise<void>;
}

/**
 * KEYRAFT_BENCH_NODE_ARGS: extra Node flags for the nodes the harness starts (profiling:
 * "--cpu-prof --cpu-prof-dir=/tmp/prof"; the profile is written when the node stops).
 */
export function nodeArgsFromEnv(env: NodeJS.ProcessEnv = process.env): string[] {
  return (env["KEYRAFT_BENCH_NODE_ARGS"] ?? "").split(" ").filter((arg) => arg !== "");
}

export async function startLocalNode(entry: string): Promise<LocalNode> {
  const script = isAbsolute(entry) ? entry : join(repoRoot, entry);
  if (!existsSync(script)) {
    throw new ProcessStartError(`${entry} does not exist: build the gateway first (npx tsc -b), or pass --target URL`);
  }
  const port = await freePort();
  const dataDir = await mkdtemp(join(tmpdir(), "keyraft-bench-"));
  const rootKey = `bench_root_${randomBytes(24).toString("hex")}`;
  const url = `http://127.0.0.1:${port}`;
  let started: StartedProcess;
  try {
    started = await startProcess({
      name: "keyraft node",
      command: process.execPath,
      args: [...nodeArgsFromEnv(), script],
      cwd: repoRoot,
      env: {
        PORT: String(port),
        HOST: "127.0.0.1",
        KEYRAFT_DATA_DIR: dataDir,
        KEYRAFT_ROOT_KEY: rootKey,
        KEYRAFT_LOG_LEVEL: "warn",
      },
      ready: async () => (await getStatus(url, "/v1/liveness")) === 200,
      afterStop: () => rm(dataDir, { recursive: true, force: true }),
    });
  } catch (error) {
    await rm(dataDir, { recursive: true, force: true });
    throw error;
  }
  return {
    url,
    rootKey,
    process: started,
    cpuSeconds: () => processCpuSeconds(started.pid),
    stop: () => started.stop(),
  };
}
