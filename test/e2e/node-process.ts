// Starts keyraft as a real process, exactly as `npm start` runs it after the build
// (`node packages/gateway/dist/main.js`), on a free port and a given data dir.
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { freePort } from "@keyraft/raft/testing";

export const repoRoot = fileURLToPath(new URL("../../", import.meta.url));
export const mainJs = fileURLToPath(new URL("../../packages/gateway/dist/main.js", import.meta.url));

export interface NodeProcess {
  child: ChildProcess;
  baseUrl: string;
  port: number;
  stdout: () => string;
  stderr: () => string;
  /** Resolves with the exit code, or the signal name when killed by one. */
  exited: Promise<number | NodeJS.Signals>;
}

const running = new Set<ChildProcess>();

/** Kills every node still running (afterAll). */
export function killAll(): void {
  for (const child of running) child.kill("SIGKILL");
  running.clear();
}

export function spawnNode(env: Record<string, string>): {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<number | NodeJS.Signals>;
} {
  if (!existsSync(mainJs)) throw new Error(`${mainJs} is missing: run \`tsc -b\` first (npm test does)`);
  const child = spawn(process.execPath, [mainJs], {
    cwd: repoRoot,
    env: { PATH: process.env["PATH"] ?? "", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  running.add(child);
  let out = "";
  let err = "";
  child.stdout?.on("data", (chunk) => (out += String(chunk)));
  child.stderr?.on("data", (chunk) => (err += String(chunk)));
  const exited = new Promise<number | NodeJS.Signals>((resolve) =>
    // "close", not "exit": it comes after the output pipes are drained, so output() holds the last lines.
    child.on("close", (code, signal) => {
      running.delete(child);
      resolve(signal ?? code ?? -1);
    }),
  );
  return { child, stdout: () => out, stderr: () => err, exited };
}

/** Starts a node and waits until /v1/liveness answers 200. */
export async function startNode(dataDir: string, extraEnv: Record<string, string> = {}): Promise<NodeProcess> {
  const port = await freePort();
  const spawned = spawnNode({
    PORT: String(port),
    HOST: "127.0.0.1",
    KEYRAFT_DATA_DIR: dataDir,
    KEYRAFT_LOG_LEVEL: "info",
    ...extraEnv,
  });
  const baseUrl = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 20_000;
  let exitedEarly: number | NodeJS.Signals | null = null;
  void spawned.exited.then((how) => (exitedEarly = how));
  while (Date.now() < deadline) {
    if (exitedEarly !== null)
      throw new Error(
        `node exited (${String(exitedEarly)}) before it was live; stderr: ${spawned.stderr()} stdout: ${spawned.stdout()}`,
      );
    try {
      const response = await fetch(`${baseUrl}/v1/liveness`);
      if (response.status === 200) return { ...spawned, baseUrl, port };
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  spawned.child.kill("SIGKILL");
  throw new Error(`node did not become live in time; stderr: ${spawned.stderr()}`);
}
