import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ProcessStartError } from "../src/errors.js";
import { startProcess, stopAll } from "../src/procs/child.js";
import { freePort } from "@keyraft/raft/testing";
import { getStatus } from "../src/http.js";

// Child processes are tiny `node -e` scripts: these tests check start, readiness and teardown,
// not load.
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe("child processes", () => {
  afterAll(async () => {
    await stopAll();
  });

  it("waits until ready, then stops with SIGTERM and runs the clean-up", async () => {
    const port = await freePort();
    const dir = await mkdtemp(join(tmpdir(), "keyraft-bench-child-"));
    const started = await startProcess({
      name: "http child",
      command: process.execPath,
      cwd: dir,
      env: { PORT: String(port) },
      args: [
        "-e",
        "require('node:http').createServer((q, s) => s.end('ok')).listen(Number(process.env.PORT), '127.0.0.1')",
      ],
      ready: async () => (await getStatus(`http://127.0.0.1:${port}`, "/")) === 200,
      afterStop: () => rm(dir, { recursive: true, force: true }),
    });
    expect(alive(started.pid)).toBe(true);
    await started.stop();
    expect(started.exited()).toBe(true);
    expect(existsSync(dir)).toBe(false);
    await started.stop(); // idempotent
  });

  it("reports a process that exits during start-up, with its last output", async () => {
    const failing = startProcess({
      name: "failing child",
      command: process.execPath,
      cwd: tmpdir(),
      env: {},
      args: ["-e", "console.error('boom: bad config'); process.exit(4)"],
      ready: async () => false,
    });
    await expect(failing).rejects.toThrow(ProcessStartError);
    await expect(failing).rejects.toThrow(/exited with code 4[\s\S]*boom: bad config/);
  });

  it("kills a process that ignores SIGTERM after the stop timeout", async () => {
    const port = await freePort();
    // Ready only once it serves, which it does after installing its SIGTERM handler.
    const started = await startProcess({
      name: "stubborn child",
      command: process.execPath,
      cwd: tmpdir(),
      env: { PORT: String(port) },
      stopTimeoutMs: 200,
      args: [
        "-e",
        "process.on('SIGTERM', () => {}); require('node:http').createServer((q, s) => s.end('ok')).listen(Number(process.env.PORT), '127.0.0.1')",
      ],
      ready: async () => (await getStatus(`http://127.0.0.1:${port}`, "/")) === 200,
    });
    const startMs = Date.now();
    await started.stop();
    expect(started.exited()).toBe(true);
    expect(alive(started.pid)).toBe(false);
    expect(Date.now() - startMs).toBeGreaterThanOrEqual(150);
  });
});
