// "Nothing acknowledged is lost": a real child process appends to the command log as fast as it
// can and is killed with SIGKILL mid-stream; every append whose promise had resolved before the
// kill must be in the log when it is reopened. Runs the compiled store (npm test builds first).
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { LevelCommandLog } from "../src/store/level-command-log.js";
import { openStoreDb } from "../src/store/level-db.js";
// @ts-expect-error plain JS fixture shared with the spawned child
import { FakeMachine } from "../../../test/e2e/fixtures/fake-machine.mjs";

const child = fileURLToPath(new URL("../../../test/e2e/fixtures/crash-appender.mjs", import.meta.url));
const dist = fileURLToPath(new URL("../dist/store/level-command-log.js", import.meta.url));
const dirs: string[] = [];
const children = new Set<ReturnType<typeof spawn>>();
afterAll(async () => {
  for (const running of children) running.kill("SIGKILL");
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

interface Ack {
  index: number;
  name: string;
  value: number;
}

/** Runs the appender until `acksWanted` acks arrived, then SIGKILLs it; returns the acks seen before the kill. */
async function runAndKill(dir: string, acksWanted: number): Promise<{ readyIndex: number; acks: Ack[] }> {
  const running = spawn(process.execPath, [child, dir, "50"], { stdio: ["ignore", "pipe", "pipe"] });
  children.add(running);
  let stderr = "";
  running.stderr.on("data", (chunk) => (stderr += String(chunk)));
  const exited = new Promise<NodeJS.Signals | number | null>((resolve) =>
    running.on("exit", (code, signal) => resolve(signal ?? code)),
  );
  const acks: Ack[] = [];
  let readyIndex = -1;
  let killed = false;
  for await (const line of createInterface({ input: running.stdout })) {
    if (killed) continue; // written after the kill was sent: not counted as acknowledged
    const [tag, a, b, c] = line.split(" ");
    if (tag === "ready") readyIndex = Number(a);
    if (tag === "ack") acks.push({ index: Number(a), name: b!, value: Number(c) });
    if (acks.length >= acksWanted) {
      running.kill("SIGKILL");
      killed = true;
    }
  }
  const how = await exited;
  children.delete(running);
  expect(how, `child ended by ${String(how)}; stderr: ${stderr}`).toBe("SIGKILL");
  return { readyIndex, acks };
}

describe("command log under SIGKILL", () => {
  it("keeps every acknowledged append across repeated kills", async () => {
    expect(existsSync(dist), "run `tsc -b` first (npm test does)").toBe(true);
    const dir = await mkdtemp(join(tmpdir(), "keyraft-crash-"));
    dirs.push(dir);
    let acknowledgedIndex = 0;
    const acknowledgedValue = new Map<string, number>();
    for (const acksWanted of [150, 420, 333]) {
      const { readyIndex, acks } = await runAndKill(dir, acksWanted);
      // The restart found at least everything acknowledged by the previous run.
      expect(readyIndex).toBeGreaterThanOrEqual(acknowledgedIndex);
      for (const ack of acks) {
        acknowledgedIndex = Math.max(acknowledgedIndex, ack.index);
        acknowledgedValue.set(ack.name, Math.max(acknowledgedValue.get(ack.name) ?? 0, ack.value));
      }
    }
    const db = await openStoreDb(dir);
    try {
      const machine = new FakeMachine() as { counters: Map<string, number>; applied: number };
      const log = await LevelCommandLog.open(db, machine as never, { onFatal: () => undefined });
      expect(log.appliedIndex()).toBeGreaterThanOrEqual(acknowledgedIndex);
      expect(machine.applied).toBe(log.appliedIndex());
      for (const [name, value] of acknowledgedValue) expect(machine.counters.get(name)).toBeGreaterThanOrEqual(value);
      // Every command adds 1: the counters account for exactly the applied log.
      expect([...machine.counters.values()].reduce((a, b) => a + b, 0)).toBe(log.appliedIndex());
    } finally {
      await db.close();
    }
  });
});
