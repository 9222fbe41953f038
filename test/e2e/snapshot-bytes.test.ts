// A bulk import is a few large Raft entries. On a real process (what `npm start` runs; needs
// `tsc -b`): with KEYRAFT_SNAPSHOT_EVERY_BYTES below the import's size, the node snapshots during
// the import although the entry count stays far below KEYRAFT_SNAPSHOT_EVERY, compacts its log
// (on disk and so in the memory image LevelStorage loads), and a restart loads the snapshot
// instead of re-applying the import. The same run with the byte trigger off is the control: its
// restart re-applies every import entry.
import { createHash } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LevelStorage } from "@keyraft/raft";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { killAll, startNode, type NodeProcess } from "./node-process.js";

const rootKey = "e2e_root_snapshot_bytes_0123456789";
const importCalls = 24;
const keysPerCall = 200;
/** Each call's entry is tens of kB: the budget is crossed every few entries. */
const snapshotEveryBytes = 128 * 1024;
const nodeEnv = (snapshotBytes: number) => ({
  KEYRAFT_ROOT_KEY: rootKey,
  KEYRAFT_SNAPSHOT_EVERY: "10000",
  KEYRAFT_SNAPSHOT_EVERY_BYTES: String(snapshotBytes),
  KEYRAFT_RAFT_KEEP_BYTES: "0",
});

let root = "";
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "keyraft-snapshot-bytes-"));
});
afterAll(async () => {
  killAll();
  await rm(root, { recursive: true, force: true });
});

async function call(node: NodeProcess, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const response = await fetch(`${node.baseUrl}${path}`, {
    method: body === undefined ? "GET" : "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${rootKey}` },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, body: await response.json() };
}

const plaintextOf = (i: number) => `bulk_key_${String(i).padStart(6, "0")}`;

function importedKey(apiId: string, i: number): Record<string, unknown> {
  const plaintext = plaintextOf(i);
  return {
    apiId,
    hash: { value: createHash("sha256").update(plaintext).digest("base64"), variant: "sha256_base64" },
    start: plaintext.slice(0, 8),
    name: `bulk-${i}`,
    remaining: 1000,
    ratelimit: { limit: 100, duration: 60_000 },
    meta: { plan: i % 2 === 0 ? "pro" : "free", seq: i },
  };
}

interface RunResult {
  before: { snapshotIndex: number; lastIndex: number };
  /** firstIndex and snapshot index of the Raft log on disk after the node stopped. */
  onDisk: { firstIndex: number; lastIndex: number; snapshotIndex: number };
  entriesAppliedOnRestart: number;
  appliedIndexAfterRestart: number;
}

/** Imports importCalls calls one after the other (an entry each), stops, inspects the log, restarts. */
async function importStopRestart(dataDir: string, snapshotBytes: number): Promise<RunResult> {
  const node = await startNode(dataDir, nodeEnv(snapshotBytes));
  const api = await call(node, "/v1/apis.createApi", { name: "bulk" });
  expect(api.status).toBe(200);
  const apiId = api.body.apiId as string;
  for (let c = 0; c < importCalls; c++) {
    const batch = Array.from({ length: keysPerCall }, (_, k) => importedKey(apiId, c * keysPerCall + k));
    const answer = await call(node, "/v1/migrations.createKeys", batch);
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  }
  const status = await call(node, "/v1/cluster.status");
  expect(status.status).toBe(200);
  const before = { snapshotIndex: status.body.snapshotIndex as number, lastIndex: status.body.lastIndex as number };
  node.child.kill("SIGTERM");
  expect(await node.exited).toBe(0);

  const storage = await LevelStorage.open({ path: join(dataDir, "raft") });
  const onDisk = {
    firstIndex: storage.firstIndex(),
    lastIndex: storage.lastIndex(),
    snapshotIndex: storage.snapshot().metadata.index,
  };
  await storage.close();

  const restarted = await startNode(dataDir, nodeEnv(snapshotBytes));
  // The state is back: the first and the last imported key verify.
  for (const i of [0, importCalls * keysPerCall - 1]) {
    const verified = await call(restarted, "/v1/keys.verifyKey", { key: plaintextOf(i), apiId });
    expect(verified.body.valid, `key ${i}: ${JSON.stringify(verified.body)}`).toBe(true);
  }
  // The node may still apply an entry of its own (a new term's empty entry) between two reads:
  // take the applied count between two equal applied indexes, so both figures are of one moment.
  let entriesAppliedOnRestart = -1;
  let appliedIndexAfterRestart = -1;
  for (let attempt = 0; attempt < 50; attempt++) {
    const indexBefore = (await call(restarted, "/v1/cluster.status")).body.appliedIndex as number;
    const metrics = await call(restarted, "/v1/cluster.metrics");
    expect(metrics.status).toBe(200);
    const indexAfter = (await call(restarted, "/v1/cluster.status")).body.appliedIndex as number;
    entriesAppliedOnRestart = metrics.body.raft.entriesApplied as number;
    appliedIndexAfterRestart = indexAfter;
    if (indexBefore === indexAfter) break;
  }
  restarted.child.kill("SIGTERM");
  expect(await restarted.exited).toBe(0);
  const result = { before, onDisk, entriesAppliedOnRestart, appliedIndexAfterRestart };
  console.log(`snapshot bytes ${snapshotBytes}: ${JSON.stringify(result)}`);
  return result;
}

describe("snapshots by bytes on a real node", () => {
  it("snapshots during a bulk import, compacts the log, and restarts from the snapshot", async () => {
    const run = await importStopRestart(join(root, "bytes"), snapshotEveryBytes);
    // Far below KEYRAFT_SNAPSHOT_EVERY, and still snapshotted.
    expect(run.before.lastIndex).toBeLessThan(100);
    expect(run.before.snapshotIndex).toBeGreaterThan(importCalls / 2);
    // Nothing kept behind the snapshot (KEYRAFT_RAFT_KEEP_BYTES=0): the log starts right after it.
    expect(run.onDisk.snapshotIndex).toBeGreaterThanOrEqual(run.before.snapshotIndex);
    expect(run.onDisk.firstIndex).toBe(run.onDisk.snapshotIndex + 1);
    // The restart re-applied only what followed the snapshot (and the entries it wrote itself),
    // not the import: a few entries, where the control re-applies all of them.
    expect(run.entriesAppliedOnRestart).toBe(run.appliedIndexAfterRestart - run.onDisk.snapshotIndex);
    expect(run.entriesAppliedOnRestart).toBeLessThan(importCalls / 2);
  }, 60_000);

  it("control: with the byte trigger off, the restart re-applies every import entry", async () => {
    const run = await importStopRestart(join(root, "entries"), 0);
    expect(run.before.snapshotIndex).toBe(0);
    expect(run.onDisk.firstIndex).toBe(1);
    expect(run.entriesAppliedOnRestart).toBeGreaterThanOrEqual(importCalls);
  }, 60_000);
});
