// cluster: three keyraft node processes on loopback (Raft on LevelDB with fsync, HTTP on
// Fastify). Measures, in order:
//   - verification throughput with closed-loop clients spread over all three nodes;
//   - admin write throughput (createKey, closed loop, spread over all nodes: followers forward)
//     and its p50/p99 latency;
//   - propagation: for every entry written during a moderate write phase (2 writers per node),
//     applied on the last node minus applied on the leader (≈ committed there), from each node's
//     apply times (one machine, one clock); the same over the saturated admin phase is logged;
//   - failed verifications on the survivors while the leader is killed (kill -9) under load.
// runClusterScenario is what the harness calls; run directly (`node bench/dist/scenarios/cluster.js
// [durationS]`) it prints the summary JSON as its last line.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { existsSync, readFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { freePort } from "@keyraft/raft/testing";
import { Pool } from "undici";
import { requestSpec, resultOf } from "./phase.js";
import type { PreparedScenario, Scenario, ScenarioContext } from "./types.js";

const ids = ["n1", "n2", "n3"];
const rootKey = "root_bench_cluster_key_0123456789";
const secret = "bench-cluster-secret-loopback-only-0123456789";
/** KEYRAFT_BENCH_MAIN_JS: another build of the node (an A/B comparison of two commits in one session). */
const mainJs =
  process.env["KEYRAFT_BENCH_MAIN_JS"] ??
  fileURLToPath(new URL("../../../packages/gateway/dist/main.js", import.meta.url));
const verifyConcurrencyPerNode = 32;
const adminConcurrency = 96;
const keysSeeded = 200;
const failoverVerifyMs = 4000;
/** Writers per node while propagation is measured: enough to see batching, far from saturation. */
const propagationClientsPerNode = 2;

export interface Member {
  id: string;
  httpPort: number;
  raftPort: number;
  child: ChildProcess;
  pool: Pool;
  exited: boolean;
}

/** A running bench cluster, seeded with an api and keysSeeded keys (no credits, no limits). */
export interface BenchCluster {
  members: Member[];
  leader: Member;
  apiId: string;
  keys: string[];
  /** Every node's HTTP base URL (verification load goes to all of them). */
  targets: string[];
  /** The root key (holding `*`) every member was started with (the harness seeds with it). */
  rootKey: string;
  stop(): Promise<void>;
}

/** How long a member may take to stop on SIGTERM before it is killed. */
const memberStopTimeoutMs = 5000;

export async function stopMember(member: Member): Promise<void> {
  if (member.exited) return;
  const exited = new Promise<void>((resolve) => member.child.once("exit", () => resolve()));
  member.child.kill("SIGTERM");
  const timer = setTimeout(() => member.child.kill("SIGKILL"), memberStopTimeoutMs);
  await exited;
  clearTimeout(timer);
}

export async function startBenchCluster(
  log: (line: string) => void,
  memberIds: readonly string[] = ids,
  keysToSeed = keysSeeded,
): Promise<BenchCluster> {
  const root = await mkdtemp(join(tmpdir(), "keyraft-bench-cluster-"));
  const members: Member[] = [];
  // SIGTERM first (a node stops cleanly, and writes its CPU profile under KEYRAFT_BENCH_NODE_ARGS),
  // SIGKILL for any still running after memberStopTimeoutMs.
  const stop = async () => {
    await Promise.all(members.map((member) => stopMember(member)));
    for (const member of members) await member.pool.close().catch(() => undefined);
    await rm(root, { recursive: true, force: true });
  };
  try {
    const ports = await Promise.all(memberIds.map(async () => ({ http: await freePort(), raft: await freePort() })));
    const peers = memberIds.map((id, i) => `${id}=127.0.0.1:${ports[i]?.raft}`).join(",");
    for (const [i, id] of memberIds.entries()) {
      const port = ports[i] as { http: number; raft: number };
      members.push(startMember(id, port.http, port.raft, peers, join(root, id)));
    }
    await Promise.all(members.map((member) => waitLive(member)));
    const leader = await findLeader(members);
    log(`cluster: ${members.length} node(s) up, leader ${leader.id}`);
    const apiId = (await postToMember(leader, "/v1/apis.createApi", { name: "bench" }, true)).body.apiId as string;
    const keys: string[] = [];
    for (let i = 0; i < keysToSeed; i++)
      keys.push((await postToMember(leader, "/v1/keys.createKey", { apiId }, true)).body.key as string);
    await waitApplied(members, (await status(leader)).appliedIndex);
    return {
      members,
      leader,
      apiId,
      keys,
      targets: members.map((member) => `http://127.0.0.1:${member.httpPort}`),
      rootKey,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** Admin writes, propagation and the leader kill (the cluster is left with two nodes). */
export async function measureWritesAndFailover(
  cluster: BenchCluster,
  durationMs: number,
  log: (line: string) => void,
): Promise<Record<string, number>> {
  const { members, leader, apiId, keys } = cluster;
  log(`cluster: admin writes for ${durationMs} ms (${adminConcurrency} clients over all nodes)`);
  const firstIndex = (await status(leader)).appliedIndex + 1;
  const cpuBefore = cpuSnapshot(members);
  const adminRun = await closedLoop(
    members,
    adminConcurrency / members.length,
    durationMs,
    async (member) => (await postToMember(member, "/v1/keys.createKey", { apiId }, true)).status === 200,
  );
  const cpu = cpuSince(cpuBefore, members, adminRun.ok, adminRun.elapsedMs, leader.id);
  const lastIndex = (await status(leader)).appliedIndex;
  const adminWritesPerSec = adminRun.ok / (adminRun.elapsedMs / 1000);
  log(
    `cluster: ${Math.round(adminWritesPerSec)} admin writes/s, p50 ${adminRun.p50Ms.toFixed(2)} ms, ` +
      `p99 ${adminRun.p99Ms.toFixed(2)} ms (${adminRun.failed} failed), ${lastIndex - firstIndex + 1} Raft entries`,
  );
  if (cpu !== null) log(`cluster: CPU during the admin phase: ${cpu.line}`);
  await waitApplied(members, lastIndex);
  const saturated = await propagationMs(members, leader, firstIndex, lastIndex);
  log(
    `cluster: propagation at saturation over ${saturated.count} entries: p50 ${saturated.p50Ms.toFixed(2)} ms, p99 ${saturated.p99Ms.toFixed(2)} ms`,
  );

  // Propagation proper (not queueing behind a saturated CPU): a moderate write load.
  const propagationFrom = (await status(leader)).appliedIndex + 1;
  await closedLoop(
    members,
    propagationClientsPerNode,
    Math.min(durationMs, 3000),
    async (member) => (await postToMember(member, "/v1/keys.createKey", { apiId }, true)).status === 200,
  );
  const propagationTo = (await status(leader)).appliedIndex;
  await waitApplied(members, propagationTo);
  const propagation = await propagationMs(members, leader, propagationFrom, propagationTo);
  log(
    `cluster: propagation at ${propagationClientsPerNode * members.length} writers over ${propagation.count} entries: ` +
      `p50 ${propagation.p50Ms.toFixed(2)} ms, p99 ${propagation.p99Ms.toFixed(2)} ms`,
  );

  log(`cluster: kill -9 of the leader ${leader.id} under verification load on the survivors`);
  const survivors = members.filter((member) => member !== leader);
  const failoverRun = closedLoop(survivors, verifyConcurrencyPerNode, failoverVerifyMs, (member, n) =>
    verifyOk(member, keys[n % keys.length] as string),
  );
  await sleep(500);
  leader.child.kill("SIGKILL");
  const failed = await failoverRun;
  const newLeader = await findLeader(survivors);
  log(`cluster: ${failed.ok} verifications during the failover, ${failed.failed} failed; new leader ${newLeader.id}`);
  return {
    adminWritesPerSec: round(adminWritesPerSec),
    adminP50Ms: round(adminRun.p50Ms, 2),
    adminP99Ms: round(adminRun.p99Ms, 2),
    propagationP50Ms: round(propagation.p50Ms, 2),
    propagationP99Ms: round(propagation.p99Ms, 2),
    failedVerificationsDuringFailover: failed.failed,
    adminWritesPerRaftEntry: round(adminRun.ok / Math.max(1, lastIndex - firstIndex + 1), 1),
    ...(cpu === null
      ? {}
      : {
          adminCpuUsPerWrite: cpu.totalUsPerWrite,
          ...(cpu.leaderUsPerWrite === null ? {} : { adminLeaderCpuUsPerWrite: cpu.leaderUsPerWrite }),
        }),
  };
}

/**
 * Same-run baseline of the admin figure: a one-member cluster (same code path, no replication)
 * under the same closed loop, so the three-node figure can be read as a ratio on a shared machine.
 */
export async function measureSingleNodeAdmin(
  durationMs: number,
  log: (line: string) => void,
): Promise<{ writesPerSec: number; cpuUsPerWrite: number | null }> {
  const single = await startBenchCluster(log, ["s1"], 0);
  try {
    const cpuBefore = cpuSnapshot(single.members);
    const run = await closedLoop(
      single.members,
      adminConcurrency,
      durationMs,
      async (member) =>
        (await postToMember(member, "/v1/keys.createKey", { apiId: single.apiId }, true)).status === 200,
    );
    const cpu = cpuSince(cpuBefore, single.members, run.ok, run.elapsedMs);
    const writesPerSec = run.ok / (run.elapsedMs / 1000);
    log(
      `baseline one-member cluster: ${Math.round(writesPerSec)} admin writes/s, p50 ${run.p50Ms.toFixed(2)} ms, ` +
        `p99 ${run.p99Ms.toFixed(2)} ms (${run.failed} failed)${cpu === null ? "" : `; CPU ${cpu.line}`}`,
    );
    return { writesPerSec: round(writesPerSec), cpuUsPerWrite: cpu?.totalUsPerWrite ?? null };
  } finally {
    await single.stop();
  }
}

interface CpuSnapshot {
  membersMs: (number | null)[];
  self: NodeJS.CpuUsage;
}

/** CPU time of a process (user + system, ms) from /proc; null where /proc is not there. */
function processCpuMs(pid: number | undefined): number | null {
  if (pid === undefined) return null;
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
    const ticks = Number(fields[11]) + Number(fields[12]);
    return Number.isFinite(ticks) ? ticks * (1000 / clockTicksPerSecond) : null;
  } catch {
    return null;
  }
}

/** USER_HZ: 100 on every Linux this runs on. */
const clockTicksPerSecond = 100;

function cpuSnapshot(members: readonly Member[]): CpuSnapshot {
  return { membersMs: members.map((member) => processCpuMs(member.child.pid)), self: process.cpuUsage() };
}

/** Cores used and CPU microseconds per write of every node and of this process (the load generator). */
function cpuSince(
  before: CpuSnapshot,
  members: readonly Member[],
  writes: number,
  elapsedMs: number,
  leaderId?: string,
): { line: string; totalUsPerWrite: number; leaderUsPerWrite: number | null } | null {
  if (writes === 0 || before.membersMs.some((ms) => ms === null)) return null;
  const parts: string[] = [];
  let totalMs = 0;
  let leaderUsPerWrite: number | null = null;
  members.forEach((member, i) => {
    const nowMs = processCpuMs(member.child.pid);
    const spentMs = nowMs === null ? 0 : nowMs - (before.membersMs[i] as number);
    totalMs += spentMs;
    const usPerWrite = (spentMs * 1000) / writes;
    parts.push(
      `${member.id}${member.id === leaderId ? " (leader)" : ""} ${(spentMs / elapsedMs).toFixed(2)} cores ${Math.round(usPerWrite)} us/write`,
    );
    if (member.id === leaderId) leaderUsPerWrite = Math.round(usPerWrite);
  });
  const self = process.cpuUsage(before.self);
  const generatorMs = (self.user + self.system) / 1000;
  parts.push(
    `load generator ${(generatorMs / elapsedMs).toFixed(2)} cores ${Math.round((generatorMs * 1000) / writes)} us/write`,
  );
  const totalUsPerWrite = Math.round(((totalMs + generatorMs) * 1000) / writes);
  parts.push(
    `total ${totalUsPerWrite} us/write (${((totalMs + generatorMs) / elapsedMs).toFixed(2)} of ${availableParallelism()} cores)`,
  );
  return { line: parts.join(", "), totalUsPerWrite, leaderUsPerWrite };
}

/** Everything in this process (verification load from an in-process closed loop). */
export async function runClusterScenario(opts: {
  durationS?: number;
  log: (line: string) => void;
}): Promise<Record<string, number>> {
  const durationMs = Math.round((opts.durationS ?? 5) * 1000);
  const cluster = await startBenchCluster(opts.log);
  try {
    opts.log(`cluster: verifications for ${durationMs} ms (${verifyConcurrencyPerNode} clients per node)`);
    const verifyRun = await closedLoop(cluster.members, verifyConcurrencyPerNode, durationMs, (member, n) =>
      verifyOk(member, cluster.keys[n % cluster.keys.length] as string),
    );
    const verifyRps = verifyRun.ok / (verifyRun.elapsedMs / 1000);
    opts.log(`cluster: ${Math.round(verifyRps)} verifications/s (${verifyRun.failed} failed)`);
    const rest = await measureWritesAndFailover(cluster, durationMs, opts.log);
    await cluster.stop();
    return { verifyRps: round(verifyRps), ...rest, ...(await singleNodeFigures(durationMs, rest, opts.log)) };
  } finally {
    await cluster.stop();
  }
}

/** The one-member baseline and the ratio of the three-node admin figure to it. */
async function singleNodeFigures(
  durationMs: number,
  rest: Record<string, number>,
  log: (line: string) => void,
): Promise<Record<string, number>> {
  const single = await measureSingleNodeAdmin(durationMs, log);
  const ratio = single.writesPerSec > 0 ? round((rest["adminWritesPerSec"] ?? 0) / single.writesPerSec, 3) : 0;
  log(`cluster: three-node admin writes / one-member admin writes in the same run: ${ratio}`);
  return {
    adminWritesPerSecOneMember: single.writesPerSec,
    adminRatioToOneMember: ratio,
    ...(single.cpuUsPerWrite === null ? {} : { adminCpuUsPerWriteOneMember: single.cpuUsPerWrite }),
  };
}

export function startMember(
  id: string,
  httpPort: number,
  raftPort: number,
  peers: string,
  dataDir: string,
  extraEnv: Readonly<Record<string, string>> = {},
): Member {
  // KEYRAFT_BENCH_NODE_ARGS: extra node flags for the members (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof").
  const nodeArgs = (process.env["KEYRAFT_BENCH_NODE_ARGS"] ?? "").split(" ").filter((arg) => arg !== "");
  // KEYRAFT_BENCH_NODE_LOG_LEVEL: the members' log level (default warn, written nowhere); when set,
  // their logs (stdout) go to the bench's stderr, so the bench's own stdout stays its JSON lines.
  const logLevel = process.env["KEYRAFT_BENCH_NODE_LOG_LEVEL"];
  const child = spawn(process.execPath, [...nodeArgs, mainJs], {
    env: {
      PATH: process.env["PATH"] ?? "",
      PORT: String(httpPort),
      HOST: "127.0.0.1",
      KEYRAFT_DATA_DIR: dataDir,
      KEYRAFT_LOG_LEVEL: logLevel ?? "warn",
      KEYRAFT_NODE_ID: id,
      KEYRAFT_PEERS: peers,
      KEYRAFT_CLUSTER_SECRET: secret,
      KEYRAFT_ROOT_KEY: rootKey,
      KEYRAFT_WRITE_QUEUE_MAX: "100000",
      ...extraEnv,
    },
    stdio: ["ignore", logLevel === undefined ? "ignore" : 2, "inherit"],
  });
  const member: Member = {
    id,
    httpPort,
    raftPort,
    child,
    pool: new Pool(`http://127.0.0.1:${httpPort}`, { connections: 64, pipelining: 1 }),
    exited: false,
  };
  child.on("exit", () => (member.exited = true));
  return member;
}

export interface LoopResult {
  ok: number;
  failed: number;
  elapsedMs: number;
  p50Ms: number;
  p99Ms: number;
}

/** `perMember` clients per member, each sending the next request when the last one answered. */
export async function closedLoop(
  members: readonly Member[],
  perMember: number,
  durationMs: number,
  request: (member: Member, n: number) => Promise<boolean>,
): Promise<LoopResult> {
  const latencies: number[] = [];
  let ok = 0;
  let failed = 0;
  const startMs = performance.now();
  const endMs = startMs + durationMs;
  const clients: Promise<void>[] = [];
  for (const member of members) {
    for (let c = 0; c < perMember; c++) {
      clients.push(
        (async () => {
          for (let n = c; performance.now() < endMs; n += perMember) {
            const sentMs = performance.now();
            const success = await request(member, n).catch(() => false);
            if (success) {
              ok++;
              latencies.push(performance.now() - sentMs);
            } else failed++;
          }
        })(),
      );
    }
  }
  await Promise.all(clients);
  latencies.sort((a, b) => a - b);
  return {
    ok,
    failed,
    elapsedMs: performance.now() - startMs,
    p50Ms: quantile(latencies, 0.5),
    p99Ms: quantile(latencies, 0.99),
  };
}

async function verifyOk(member: Member, key: string): Promise<boolean> {
  const answer = await postToMember(member, "/v1/keys.verifyKey", { key }, false);
  return answer.status === 200 && answer.body.valid === true;
}

/** A POST to one member, as JSON; `auth` sends the cluster's root key. */
export async function postToMember(
  member: Member,
  path: string,
  body: unknown,
  auth: boolean,
): Promise<{ status: number; body: any }> {
  const response = await member.pool.request({
    method: "POST",
    path,
    headers: { "content-type": "application/json", ...(auth ? { authorization: `Bearer ${rootKey}` } : {}) },
    body: JSON.stringify(body),
    headersTimeout: 10_000,
    bodyTimeout: 10_000,
  });
  return { status: response.statusCode, body: await response.body.json() };
}

export async function get(member: Member, path: string): Promise<any> {
  const response = await member.pool.request({
    method: "GET",
    path,
    headers: { authorization: `Bearer ${rootKey}` },
    headersTimeout: 5000,
  });
  return response.body.json();
}

export async function status(member: Member): Promise<{ role: string; leader: string | null; appliedIndex: number }> {
  return get(member, "/v1/cluster.status");
}

async function propagationMs(
  members: readonly Member[],
  leader: Member,
  from: number,
  to: number,
): Promise<{ count: number; p50Ms: number; p99Ms: number }> {
  const byNode = await Promise.all(
    members.map(async (member) => {
      const times = new Map<number, number>();
      for (let start = from; start <= to; start += 60_000) {
        const answer = (await get(
          member,
          `/v1/cluster.applyTimes?from=${start}&to=${Math.min(to, start + 59_999)}`,
        )) as { times: [number, number][] };
        for (const [index, atMs] of answer.times) times.set(index, atMs);
      }
      return { member, times };
    }),
  );
  const leaderTimes = byNode.find((node) => node.member === leader)?.times ?? new Map<number, number>();
  const delays: number[] = [];
  for (let index = from; index <= to; index++) {
    const committedMs = leaderTimes.get(index);
    if (committedMs === undefined) continue;
    let lastMs = committedMs;
    let everywhere = true;
    for (const node of byNode) {
      const atMs = node.times.get(index);
      if (atMs === undefined) everywhere = false;
      else lastMs = Math.max(lastMs, atMs);
    }
    if (everywhere) delays.push(lastMs - committedMs);
  }
  delays.sort((a, b) => a - b);
  return { count: delays.length, p50Ms: quantile(delays, 0.5), p99Ms: quantile(delays, 0.99) };
}

export async function waitApplied(members: readonly Member[], index: number): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    const views = await Promise.all(members.map((member) => status(member)));
    if (views.every((view) => view.appliedIndex >= index)) return;
    await sleep(20);
  }
  throw new Error(`not every node applied ${index} within 30 s`);
}

export async function findLeader(members: readonly Member[]): Promise<Member> {
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    const views = await Promise.all(members.map((member) => status(member).catch(() => null)));
    const leader = views[0]?.leader ?? null;
    const found = members.find((member) => member.id === leader);
    if (found !== undefined && views.every((view) => view?.leader === leader)) return found;
    await sleep(50);
  }
  throw new Error("no agreed leader within 20 s");
}

export async function waitLive(member: Member): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (member.exited) throw new Error(`${member.id} exited during start`);
    try {
      const response = await member.pool.request({ method: "GET", path: "/v1/liveness", headersTimeout: 1000 });
      await response.body.dump();
      if (response.statusCode === 200) return;
    } catch {
      // not listening yet
    }
    await sleep(50);
  }
  throw new Error(`${member.id} did not become live within 30 s`);
}

export function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
}

export function round(value: number, digits = 0): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// Run directly: the summary JSON is the last line of stdout.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const durationS = process.argv[2] === undefined ? 5 : Number(process.argv[2]);
  const figures = await runClusterScenario({ durationS, log: (line) => process.stderr.write(`${line}\n`) });
  process.stdout.write(`${JSON.stringify({ scenario: "cluster", ...figures })}\n`);
}

/** Both scenarios that start a bench cluster (cluster, counters) need the node's build. */
export async function checkBenchClusterBuild(): Promise<void> {
  if (!existsSync(mainJs)) throw new Error(`${mainJs} is missing: run \`npm run build\` first`);
}

/**
 * The scenario as the harness runs it (`npm run bench -- cluster`): the verification load is a
 * harness phase over all three nodes (its workers), the rest is measured here.
 */
export const clusterScenario: Scenario = {
  description: "three-node cluster on loopback: verifications over all nodes, admin writes, propagation, a leader kill",
  check: checkBenchClusterBuild,
  prepare: async (context: ScenarioContext): Promise<PreparedScenario> => {
    const cluster = await startBenchCluster(context.log);
    const verifyPhase = "cluster verify";
    return {
      phases: [
        {
          label: verifyPhase,
          targets: cluster.targets,
          cpuSeconds: () => null,
          requests: [
            requestSpec(context.options, {
              name: "verifyKey",
              path: "/v1/keys.verifyKey",
              bodyTemplate: '{"key":{{pick}}}',
              pool: cluster.keys,
              okMarker: '"valid":true',
            }),
          ],
        },
      ],
      close: () => cluster.stop(),
      finish: async (results) => {
        const verify = resultOf(results, verifyPhase);
        const durationMs = Math.round(context.options.durationS * 1000);
        const rest = await measureWritesAndFailover(cluster, durationMs, context.log);
        await cluster.stop(); // the one-member baseline runs alone
        const figures = {
          verifyRps: round(verify.rps),
          ...rest,
          ...(await singleNodeFigures(durationMs, rest, context.log)),
        };
        return {
          figures,
          // Verification throughput is what the baselines (single node, other engines) compare against.
          throughputRps: figures.verifyRps,
          throughputCpuCores: null,
          phases: [verify],
          notes: [
            "cluster: three node processes and the load generator share this machine's cores",
            "cluster: admin p50/p99 are closed-loop latencies at saturation (96 clients); " +
              "propagation is measured at 2 writers per node (the saturated figure is in the log)",
            "cluster: adminWritesPerSecOneMember is a one-member cluster under the same admin closed loop in the same run " +
              "(same code path, no replication); adminRatioToOneMember = three-node / one-member",
            "cluster: adminCpuUsPerWrite = CPU time of the three nodes and the load generator per acknowledged write " +
              "(from /proc); with every core busy, throughput ≈ cores / that",
          ],
        };
      },
    };
  },
};
