// Real keyraft processes forming a cluster on loopback: free ports, temp data dirs, and a
// registry so afterAll can kill everything that is still running.
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { freePort } from "@keyraft/raft/testing";
import { mainJs, repoRoot } from "../e2e/node-process.js";

export const clusterSecret = "cluster-test-secret-0123456789abcdef";
export const rootKey = "root_cluster_test_key_0123456789";

export interface ClusterMember {
  id: string;
  httpPort: number;
  raftPort: number;
  dataDir: string;
  /** Extra environment; a key set to undefined is removed (e.g. KEYRAFT_ROOT_KEY). */
  env: Record<string, string | undefined>;
  child: ChildProcess | null;
  exited: Promise<number | NodeJS.Signals> | null;
  output: () => string;
  baseUrl: string;
}

const running = new Set<ChildProcess>();

export function killAllMembers(): void {
  for (const child of running) child.kill("SIGKILL");
  running.clear();
}

export async function planMembers(ids: readonly string[], dataDirOf: (id: string) => string): Promise<ClusterMember[]> {
  const members: ClusterMember[] = [];
  for (const id of ids) {
    const httpPort = await freePort();
    const raftPort = await freePort();
    members.push({
      id,
      httpPort,
      raftPort,
      dataDir: dataDirOf(id),
      env: {},
      child: null,
      exited: null,
      output: () => "",
      baseUrl: `http://127.0.0.1:${httpPort}`,
    });
  }
  return members;
}

export function peersOf(members: readonly ClusterMember[]): string {
  return members.map((member) => `${member.id}=127.0.0.1:${member.raftPort}`).join(",");
}

/** Spawns a member (does not wait). `peers` is its KEYRAFT_PEERS. */
export function spawnMember(
  member: ClusterMember,
  peers: string,
  extraEnv: Record<string, string | undefined> = {},
): void {
  if (!existsSync(mainJs)) throw new Error(`${mainJs} is missing: run \`tsc -b\` first`);
  const merged: Record<string, string | undefined> = {
    PATH: process.env["PATH"] ?? "",
    PORT: String(member.httpPort),
    HOST: "127.0.0.1",
    KEYRAFT_DATA_DIR: member.dataDir,
    KEYRAFT_LOG_LEVEL: "info",
    KEYRAFT_NODE_ID: member.id,
    KEYRAFT_PEERS: peers,
    KEYRAFT_CLUSTER_SECRET: clusterSecret,
    KEYRAFT_ROOT_KEY: rootKey,
    ...member.env,
    ...extraEnv,
  };
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(merged)) if (value !== undefined) env[name] = value;
  const child = spawn(process.execPath, [mainJs], { cwd: repoRoot, env, stdio: ["ignore", "pipe", "pipe"] });
  running.add(child);
  let out = "";
  child.stdout?.on("data", (chunk) => (out = (out + String(chunk)).slice(-200_000)));
  child.stderr?.on("data", (chunk) => (out = (out + String(chunk)).slice(-200_000)));
  member.child = child;
  member.output = () => out;
  member.exited = new Promise((resolve) =>
    // "close", not "exit": it comes after the output pipes are drained, so output() holds the last lines.
    child.on("close", (code, signal) => {
      running.delete(child);
      resolve(signal ?? code ?? -1);
    }),
  );
}

export async function waitLive(member: ClusterMember, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let exited: number | NodeJS.Signals | null = null;
  void member.exited?.then((how) => (exited = how));
  while (Date.now() < deadline) {
    if (exited !== null) throw new Error(`${member.id} exited (${String(exited)}): ${member.output().slice(-3000)}`);
    try {
      const response = await fetch(`${member.baseUrl}/v1/liveness`);
      if (response.status === 200) return;
    } catch {
      // not listening yet
    }
    await sleep(50);
  }
  throw new Error(`${member.id} did not become live: ${member.output().slice(-3000)}`);
}

export async function kill(member: ClusterMember, signal: NodeJS.Signals = "SIGKILL"): Promise<void> {
  const child = member.child;
  if (child === null) return;
  child.kill(signal);
  await member.exited;
  member.child = null;
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export interface ClusterStatusBody {
  nodeId: string;
  role: string;
  term: number;
  leader: string | null;
  appliedIndex: number;
  commitIndex: number;
  snapshotIndex: number;
  stalenessMs: number;
  stale: boolean;
  voters: string[];
  learners: string[];
  peers: { id: string; lag: number | null; voter: boolean }[];
}

/** GET /v1/cluster.status of `member`, read with `key` (the harness's root key unless given). */
export async function status(member: ClusterMember, key: string = rootKey): Promise<ClusterStatusBody> {
  const response = await fetch(`${member.baseUrl}/v1/cluster.status`, {
    headers: { authorization: `Bearer ${key}` },
  });
  if (response.status !== 200) throw new Error(`${member.id} status ${response.status}`);
  return (await response.json()) as ClusterStatusBody;
}

/** The member every given member agrees leads (waits for agreement). */
export async function leaderOf(members: readonly ClusterMember[], timeoutMs = 15_000): Promise<ClusterMember> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const views = await Promise.all(members.map((member) => status(member).catch(() => null)));
    const leader = views[0]?.leader ?? null;
    if (leader !== null && views.every((view) => view?.leader === leader)) {
      const found = members.find((member) => member.id === leader);
      if (found !== undefined) return found;
    }
    await sleep(50);
  }
  throw new Error("the members did not agree on a leader in time");
}

export async function call(
  member: ClusterMember,
  path: string,
  body: unknown,
  auth = true,
): Promise<{ status: number; body: any; headers: Headers }> {
  const response = await fetch(`${member.baseUrl}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(auth ? { authorization: `Bearer ${rootKey}` } : {}) },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: await response.json(), headers: response.headers };
}

export async function verify(
  member: ClusterMember,
  key: string,
): Promise<{ status: number; body: any; headers: Headers }> {
  return call(member, "/v1/keys.verifyKey", { key }, false);
}

/** Polls until `check` passes (returns true) or the time is up. */
export async function eventually(check: () => Promise<boolean>, timeoutMs = 10_000, what = "condition"): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await sleep(25);
  }
  throw new Error(`${what} did not hold within ${timeoutMs} ms`);
}

/**
 * Waits until every member answers apis.getApi for `apiId`: read-your-writes holds on the node that
 * answered the write only, and a write sent to a follower is checked against its own replica.
 */
export async function untilEveryMemberHasApi(
  members: readonly ClusterMember[],
  apiId: string,
  timeoutMs = 10_000,
): Promise<void> {
  for (const member of members)
    await eventually(
      async () =>
        (
          await fetch(`${member.baseUrl}/v1/apis.getApi?apiId=${apiId}`, {
            headers: { authorization: `Bearer ${rootKey}` },
          })
        ).status === 200,
      timeoutMs,
      `${member.id} has the api`,
    );
}
