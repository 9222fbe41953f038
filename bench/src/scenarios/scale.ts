// scale: how a node holds many keys (--keys N, default 1,000,000). One node founds a cluster on
// its own LevelDB data dir in a temporary directory; then, in order:
//   - 10,000 keys are imported through migrations.createKeys (1,000 per call, 4 calls in flight,
//     each key with credits, a rate limit and a small meta) and verifications are measured at
//     that size (closed loop);
//   - the rest up to N is imported the same way (importKeysPerSec counts every key of both);
//   - the node's RSS is read (rssMiB) and its growth since before the import divided by N
//     (bytesPerKey: RSS growth per key, which is what a machine has to provide);
//   - verifications are measured at N keys over all of them (verifyRatioLargeToSmall = that
//     throughput ÷ the one at 10,000 keys, same run, same closed loop);
//   - the node is killed (SIGKILL) and started again on its data dir: restartMs runs until it
//     answers a verification of an imported key;
//   - a second node joins (KEYRAFT_JOIN, cluster.addNode) while admin writes go on against the
//     first: joinMs runs until the new node answers a verification, joinVoterMs until it is a
//     voter (the writes go on until then), joinTermChanges counts the elections meanwhile,
//     joinAdminP99Ms is those writes' p99;
//   - maxLoopStallMs is the longest event-loop delay any node reported (GET /metrics,
//     nodejs_eventloop_lag_max_seconds, read every scrapeIntervalMs) during all of the above.
// runScaleScenario is what the harness calls; the bench test runs it at a tiny size.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "@keyraft/raft/testing";
import { checkBenchClusterBuild } from "./cluster.js";
import {
  closedLoop,
  findLeader,
  get,
  postToMember,
  quantile,
  round,
  sleep,
  startMember,
  stopMember,
  waitLive,
  type Member,
} from "./cluster.js";
import type { PreparedScenario, Scenario, ScenarioContext } from "./types.js";

/** Keys per migrations.createKeys call and calls in flight (how the issue's user imported). */
export const importBatchKeys = 1_000;
export const importCallsInFlight = 4;
/** The size verifications are compared against (or N when N is smaller). */
export const smallKeys = 10_000;
const verifyClients = 32;
/** Admin writers against the leader while a node joins. */
const joinAdminClients = 2;
const scrapeIntervalMs = 250;
/** How long a restart or a join may take before the run fails. */
const serveTimeoutMs = 300_000;
const secret = "bench-scale-secret-loopback-only-0123456789";

export interface ScaleOptions {
  keys: number;
  /** Seconds of each verification measurement. */
  verifySeconds: number;
  log: (line: string) => void;
  progress: (line: string) => void;
}

/** The plaintext of imported key `i` (derived, so the bench holds none of them). */
function secretOf(runId: string, i: number): string {
  return `scale_${runId}_${i}`;
}

function importedKey(apiId: string, runId: string, i: number): Record<string, unknown> {
  const plaintext = secretOf(runId, i);
  return {
    apiId,
    hash: { value: createHash("sha256").update(plaintext).digest("base64"), variant: "sha256_base64" },
    start: plaintext.slice(0, 10),
    name: `scale-${i}`,
    remaining: 1_000_000,
    ratelimit: { limit: 1_000, duration: 60_000 },
    meta: { plan: i % 2 === 0 ? "pro" : "free", seq: i },
  };
}

/**
 * The snapshot policy variables given to the bench are given to the nodes, to compare policies (by
 * default they snapshot every 10,000 entries or 64 MiB of entries; an import of a million keys is
 * about 1,000 entries of 300 kB). KEYRAFT_SNAPSHOT_EVERY_BYTES=0 is the policy by entries alone.
 */
const snapshotVariables = [
  "KEYRAFT_SNAPSHOT_EVERY",
  "KEYRAFT_SNAPSHOT_EVERY_BYTES",
  "KEYRAFT_RAFT_KEEP_BYTES",
] as const;

function snapshotEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of snapshotVariables) {
    const value = process.env[name];
    if (value !== undefined) env[name] = value;
  }
  return env;
}

/** Resident set size of a process in bytes (Linux /proc); null where it cannot be read. */
function rssBytes(pid: number | undefined): number | null {
  if (pid === undefined) return null;
  try {
    const line = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return line === null ? null : Number(line[1]) * 1024;
  } catch {
    return null;
  }
}

/** The largest event-loop delay each node reported, by the phase it was reported in. */
class LoopStallMonitor {
  readonly maxMsByPhase = new Map<string, number>();
  /** The node that reported each phase's largest delay, and when (ms since the monitor started). */
  readonly worstByPhase = new Map<string, { id: string; atMs: number }>();
  private readonly startMs = performance.now();
  phase = "start";
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly members: () => readonly Member[]) {}

  start(): void {
    this.timer = setInterval(() => void this.scrape(), scrapeIntervalMs);
  }

  /** One last read of every node (what accumulated since the previous one), then no more. */
  async stop(): Promise<void> {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    await this.scrape();
  }

  /**
   * Reads every node once more for the phase ending, then starts `phase`. A node's figure is the
   * largest delay since its previous read, so without this read what a phase accumulated at its
   * end (a restarted node's start, read first once it answers) would count for the next one.
   */
  async enter(phase: string): Promise<void> {
    await this.scrape();
    this.phase = phase;
  }

  /** The phase's largest delay, -1 when no node could be read during it. */
  maxMsOf(phase: string): number {
    return this.maxMsByPhase.get(phase) ?? -1;
  }

  get maxMs(): number {
    return Math.max(0, ...this.maxMsByPhase.values());
  }

  private async scrape(): Promise<void> {
    const phase = this.phase;
    await Promise.all(
      this.members()
        .filter((member) => !member.exited)
        .map(async (member) => {
          const delayMs = await metricsLoopDelayMs(member).catch(() => null);
          if (delayMs === null || delayMs <= (this.maxMsByPhase.get(phase) ?? -1)) return;
          this.maxMsByPhase.set(phase, delayMs);
          this.worstByPhase.set(phase, { id: member.id, atMs: performance.now() - this.startMs });
        }),
    );
  }
}

/** The values of the named unlabelled series of a node's GET /metrics (null for a series it lacks). */
async function metricsValues(member: Member, names: readonly string[]): Promise<(number | null)[]> {
  const response = await member.pool.request({ method: "GET", path: "/metrics", headersTimeout: 10_000 });
  const text = await response.body.text();
  return names.map((name) => {
    const match = new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.eE+-]+)$`, "m").exec(text);
    return match === null ? null : Number(match[1]);
  });
}

/** nodejs_eventloop_lag_max_seconds of GET /metrics (prom-client resets it at every read), in ms. */
async function metricsLoopDelayMs(member: Member): Promise<number | null> {
  const [seconds] = await metricsValues(member, ["nodejs_eventloop_lag_max_seconds"]);
  return seconds === null || seconds === undefined ? null : seconds * 1000;
}

async function verifiesValid(member: Member, key: string): Promise<boolean> {
  const answer = await postToMember(member, "/v1/keys.verifyKey", { key }, false);
  return answer.status === 200 && answer.body.valid === true;
}

/** Polls until `member` answers a verification of `key` as valid; the ms it took from `sinceMs`. */
async function untilServes(member: Member, key: string, sinceMs: number): Promise<number> {
  while (performance.now() - sinceMs < serveTimeoutMs) {
    if (member.exited) throw new Error(`${member.id} exited`);
    if (await verifiesValid(member, key).catch(() => false)) return performance.now() - sinceMs;
    await sleep(20);
  }
  throw new Error(`${member.id} did not answer a verification within ${serveTimeoutMs} ms`);
}

/** Until `id` is a voter in `member`'s cluster.status: ms since `sinceMs`. */
async function untilVoter(member: Member, id: string, sinceMs: number): Promise<number> {
  while (performance.now() - sinceMs < serveTimeoutMs) {
    const view = (await get(member, "/v1/cluster.status").catch(() => null)) as {
      peers?: { id: string; voter: boolean }[];
    } | null;
    if (view?.peers?.some((peer) => peer.id === id && peer.voter) === true) return performance.now() - sinceMs;
    await sleep(50);
  }
  throw new Error(`${id} was not a voter within ${serveTimeoutMs} ms`);
}

/** Imports keys [from, to) through migrations.createKeys, importCallsInFlight calls at a time. */
async function importRange(
  member: Member,
  apiId: string,
  runId: string,
  from: number,
  to: number,
  progress: (done: number) => void,
): Promise<void> {
  let next = from;
  const worker = async (): Promise<void> => {
    while (next < to) {
      const start = next;
      const end = Math.min(to, start + importBatchKeys);
      next = end;
      const batch: Record<string, unknown>[] = [];
      for (let i = start; i < end; i++) batch.push(importedKey(apiId, runId, i));
      const answer = await postToMember(member, "/v1/migrations.createKeys", batch, true);
      if (answer.status !== 200)
        throw new Error(`migrations.createKeys answered ${answer.status}: ${JSON.stringify(answer.body)}`);
      progress(end);
    }
  };
  await Promise.all(Array.from({ length: importCallsInFlight }, () => worker()));
}

async function verifyRps(member: Member, runId: string, keyCount: number, seconds: number): Promise<number> {
  const run = await closedLoop([member], verifyClients, seconds * 1000, (target) =>
    verifiesValid(target, secretOf(runId, Math.floor(Math.random() * keyCount))),
  );
  if (run.failed > 0) throw new Error(`${run.failed} verifications failed (of ${run.ok + run.failed})`);
  return run.ok / (run.elapsedMs / 1000);
}

export async function runScaleScenario(options: ScaleOptions): Promise<Record<string, number>> {
  const { keys, log, progress } = options;
  const root = await mkdtemp(join(tmpdir(), "keyraft-bench-scale-"));
  const members: Member[] = [];
  const monitor = new LoopStallMonitor(() => members);
  const runId = Math.random().toString(36).slice(2, 10);
  try {
    const ports = {
      http1: await freePort(),
      raft1: await freePort(),
      http2: await freePort(),
      raft2: await freePort(),
    };
    const founderPeers = `n1=127.0.0.1:${ports.raft1}`;
    const startFounder = (): Member =>
      startMember("n1", ports.http1, ports.raft1, founderPeers, join(root, "n1"), snapshotEnv());
    let node = startFounder();
    members.push(node);
    await waitLive(node);
    await findLeader([node]);
    monitor.start();
    const apiId = (await postToMember(node, "/v1/apis.createApi", { name: "bench-scale" }, true)).body.apiId as string;
    await sleep(1000);
    const rssBefore = rssBytes(node.child.pid);

    await monitor.enter("import");
    const small = Math.min(smallKeys, keys);
    // importMs: the time spent importing so far; batchStartMs: when the running import began.
    let importMs = 0;
    let batchStartMs = performance.now();
    let lastLineMs = 0;
    const importProgress = (done: number): void => {
      if (performance.now() - lastLineMs < 1000 && done < keys) return;
      lastLineMs = performance.now();
      const rss = rssBytes(node.child.pid);
      progress(
        `scale: imported ${done} of ${keys} keys, ${Math.round(done / ((importMs + performance.now() - batchStartMs) / 1000))} keys/s` +
          (rss === null ? "" : `, node RSS ${Math.round(rss / 1048576)} MiB`),
      );
    };
    await importRange(node, apiId, runId, 0, small, importProgress);
    importMs += performance.now() - batchStartMs;
    await monitor.enter("verify small");
    // A first, unmeasured run warms the JIT, so the two measured runs compare sizes alone.
    await verifyRps(node, runId, small, options.verifySeconds);
    const smallRps = await verifyRps(node, runId, small, options.verifySeconds);
    log(`scale: ${Math.round(smallRps)} verifications/s at ${small} keys`);

    await monitor.enter("import");
    batchStartMs = performance.now();
    await importRange(node, apiId, runId, small, keys, importProgress);
    importMs += performance.now() - batchStartMs;
    const importKeysPerSec = keys / (importMs / 1000);
    log(`scale: imported ${keys} keys in ${Math.round(importMs)} ms: ${Math.round(importKeysPerSec)} keys/s`);
    // A moment for the snapshot the import triggered and for the collector, then the size.
    await monitor.enter("idle");
    await sleep(3000);
    const rssAfter = rssBytes(node.child.pid);
    // What the RSS holds: V8's heap in use (live and not yet collected) and memory outside it (buffers).
    const [heapUsedBytes, externalBytes] = await metricsValues(node, [
      "nodejs_heap_size_used_bytes",
      "nodejs_external_memory_bytes",
    ]);
    const rssMiB = rssAfter === null ? -1 : rssAfter / 1048576;
    const bytesPerKey = rssAfter === null || rssBefore === null ? -1 : (rssAfter - rssBefore) / keys;
    log(
      `scale: node RSS ${Math.round(rssMiB)} MiB with ${keys} keys: ${Math.round(bytesPerKey)} bytes per key (RSS growth)`,
    );

    await monitor.enter("verify large");
    // The keys verified at the small size again: the state's size alone, without what a key's
    // first verification costs (its credit lease, its counters), which the figure over all keys has.
    const warmRps = await verifyRps(node, runId, small, options.verifySeconds);
    const largeRps = await verifyRps(node, runId, keys, options.verifySeconds);
    const verifyRatioLargeToSmall = largeRps / smallRps;
    log(
      `scale: ${Math.round(largeRps)} verifications/s at ${keys} keys: ${verifyRatioLargeToSmall.toFixed(3)} of the figure at ${small}; ` +
        `the ${small} keys verified before: ${Math.round(warmRps)}/s (${(warmRps / smallRps).toFixed(3)})`,
    );

    await monitor.enter("restart");
    // What a restart has to re-apply: the entries after the latest snapshot (the import's, unless
    // a snapshot by entries or by bytes covered them).
    const beforeRestart = (await get(node, "/v1/cluster.status")) as { lastIndex: number; snapshotIndex: number };
    node.child.kill("SIGKILL");
    await stopMember(node);
    const restartStartMs = performance.now();
    node = startFounder();
    members[0] = node;
    const restartMs = await untilServes(node, secretOf(runId, keys - 1), restartStartMs);
    // The restarted node's delays since its start: the restart's, read before the join begins.
    await monitor.enter("after restart");
    log(`scale: restart (kill -9, start on the data dir) answered a verification after ${Math.round(restartMs)} ms`);
    const [restartEntriesApplied] = await metricsValues(node, ["keyraft_raft_entries_applied_total"]);
    log(
      `scale: before the kill the log ended at ${beforeRestart.lastIndex}, the snapshot at ${beforeRestart.snapshotIndex}; ` +
        `the restart applied ${restartEntriesApplied ?? "?"} entries`,
    );
    const rssRestarted = rssBytes(node.child.pid);

    await monitor.enter("join");
    await findLeader([node]);
    const joinPeers = `${founderPeers},n2=127.0.0.1:${ports.raft2}`;
    const joiner = startMember("n2", ports.http2, ports.raft2, joinPeers, join(root, "n2"), {
      ...snapshotEnv(),
      KEYRAFT_JOIN: "true",
    });
    members.push(joiner);
    const termBeforeJoin = ((await get(node, "/v1/cluster.status")) as { term: number }).term;
    const joinStartMs = performance.now();
    const stopWrites = { stop: false };
    const writes = adminWritesUntil(node, apiId, stopWrites);
    let joinMs: number;
    let joinVoterMs: number;
    try {
      const added = await postToMember(
        node,
        "/v1/cluster.addNode",
        { nodeId: "n2", address: `127.0.0.1:${ports.raft2}` },
        true,
      );
      if (added.status !== 200)
        throw new Error(`cluster.addNode answered ${added.status}: ${JSON.stringify(added.body)}`);
      joinMs = await untilServes(joiner, secretOf(runId, keys - 1), joinStartMs);
      // The writes go on until the new node is a voter: its promotion is part of the join.
      joinVoterMs = await untilVoter(node, "n2", joinStartMs);
    } finally {
      stopWrites.stop = true;
    }
    const writeRun = await writes;
    const termAfterJoin = ((await get(node, "/v1/cluster.status")) as { term: number }).term;
    log(
      `scale: a second node joined and answered a verification after ${Math.round(joinMs)} ms, ` +
        `a voter after ${Math.round(joinVoterMs)} ms; ${writeRun.ok} admin writes meanwhile ` +
        `(${writeRun.failed} failed), p99 ${writeRun.p99Ms.toFixed(1)} ms; terms ${termBeforeJoin} -> ${termAfterJoin}`,
    );
    await monitor.stop();
    const stalls = [...monitor.maxMsByPhase]
      .map(([phase, ms]) => {
        const worst = monitor.worstByPhase.get(phase);
        return `${phase} ${Math.round(ms)} ms${worst === undefined ? "" : ` (${worst.id}, read at ${(worst.atMs / 1000).toFixed(1)} s)`}`;
      })
      .join(", ");
    log(`scale: longest event-loop delay per phase: ${stalls}`);
    return {
      keys,
      importKeysPerSec: round(importKeysPerSec),
      rssMiB: round(rssMiB, 1),
      bytesPerKey: round(bytesPerKey),
      restartMs: round(restartMs),
      joinMs: round(joinMs),
      joinAdminP99Ms: round(writeRun.p99Ms, 2),
      maxLoopStallMs: round(monitor.maxMs, 1),
      verifyRatioLargeToSmall: round(verifyRatioLargeToSmall, 3),
      verifyRpsSmall: round(smallRps),
      verifyRpsLarge: round(largeRps),
      verifyRatioWarmKeys: round(warmRps / smallRps, 3),
      heapUsedMiB: heapUsedBytes === null || heapUsedBytes === undefined ? -1 : round(heapUsedBytes / 1048576, 1),
      externalMiB: externalBytes === null || externalBytes === undefined ? -1 : round(externalBytes / 1048576, 1),
      rssMiBAfterRestart: rssRestarted === null ? -1 : round(rssRestarted / 1048576, 1),
      restartEntriesApplied: restartEntriesApplied ?? -1,
      joinVoterMs: round(joinVoterMs),
      joinTermChanges: termAfterJoin - termBeforeJoin,
      joinAdminWrites: writeRun.ok,
      joinAdminWritesFailed: writeRun.failed,
      maxLoopStallMsImport: round(monitor.maxMsOf("import"), 1),
      maxLoopStallMsRestart: round(monitor.maxMsOf("restart"), 1),
      maxLoopStallMsJoin: round(monitor.maxMsOf("join"), 1),
    };
  } finally {
    await monitor.stop();
    await Promise.all(members.map((member) => stopMember(member)));
    for (const member of members) await member.pool.close().catch(() => undefined);
    await rm(root, { recursive: true, force: true });
  }
}

/**
 * createKey against `member` from joinAdminClients clients until `until.stop`: the p99 of the
 * writes that succeeded and how many failed (a write that times out during the join is a figure).
 */
async function adminWritesUntil(
  member: Member,
  apiId: string,
  until: { stop: boolean },
): Promise<{ ok: number; failed: number; p99Ms: number }> {
  const latenciesMs: number[] = [];
  let failed = 0;
  const client = async (): Promise<void> => {
    while (!until.stop) {
      const sentMs = performance.now();
      const answer = await postToMember(member, "/v1/keys.createKey", { apiId }, true).catch(() => null);
      if (answer?.status === 200) latenciesMs.push(performance.now() - sentMs);
      else failed++;
    }
  };
  await Promise.all(Array.from({ length: joinAdminClients }, () => client()));
  latenciesMs.sort((x, y) => x - y);
  return { ok: latenciesMs.length, failed, p99Ms: quantile(latenciesMs, 0.99) };
}

export const scaleScenario: Scenario = {
  description:
    "one node with --keys keys (default 1,000,000) imported through migrations.createKeys: import rate, RSS, restart, a join, loop stalls",
  check: checkBenchClusterBuild,
  prepare: async (context: ScenarioContext): Promise<PreparedScenario> => ({
    phases: [],
    close: async () => {},
    finish: async () => {
      const figures = await runScaleScenario({
        keys: context.options.keys,
        verifySeconds: Math.min(context.options.durationS, 10),
        log: context.log,
        progress: context.progress,
      });
      return {
        figures,
        throughputRps: null,
        throughputCpuCores: null,
        phases: [],
        notes: [
          "scale: bytesPerKey is the node's RSS growth over the import divided by the keys (RSS from /proc)",
          "scale: maxLoopStallMs is the largest nodejs_eventloop_lag_max_seconds any node reported during the run",
          "scale: the join is a second node added to the one holding the keys, with 2 admin writers on the leader",
        ],
      };
    },
  }),
};
