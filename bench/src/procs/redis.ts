// Starts a throw-away redis-server (no persistence) for the rate-limiter baseline, if installed.
import { spawnSync } from "node:child_process";
import { connect } from "node:net";
import { repoRoot } from "../paths.js";
import { freePort } from "@keyraft/raft/testing";
import { startProcess, type StartedProcess } from "./child.js";

export const redisInstallHint =
  "redis-server is not installed, so the Redis rate-limiter baseline is skipped (reported as null). " +
  "Install it with `apt-get install redis-server` (Debian/Ubuntu) or `brew install redis` (macOS).";

export function redisServerInstalled(): boolean {
  const probe = spawnSync("redis-server", ["--version"], { stdio: "ignore" });
  return probe.error === undefined && probe.status === 0;
}

export async function startRedis(): Promise<{ port: number; process: StartedProcess }> {
  const port = await freePort();
  const started = await startProcess({
    name: "redis-server",
    command: "redis-server",
    // No RDB snapshots, no AOF: the baseline measures the limiter, not Redis persistence.
    args: [
      "--port",
      String(port),
      "--bind",
      "127.0.0.1",
      "--save",
      "",
      "--appendonly",
      "no",
      "--protected-mode",
      "no",
      "--loglevel",
      "warning",
    ],
    cwd: repoRoot,
    env: {},
    ready: () => redisPing(port),
  });
  return { port, process: started };
}

function redisPing(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    const finish = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1_000, () => finish(false));
    socket.on("error", () => finish(false));
    socket.on("connect", () => socket.write("PING\r\n"));
    socket.on("data", (data) => finish(data.toString("utf8").startsWith("+PONG")));
  });
}
