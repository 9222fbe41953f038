// raft: three RaftNode processes on loopback (LevelDB with fsync, ws), each with its own event
// loop. Measures commits/s with 1 and 64 closed-loop proposers (run inside the leader process, so
// no control-channel hop is counted), commit latency with 1 proposer, failover time over 10
// trials (leader kill -9 until a new leader commits), and the machine's ceiling: synced LevelDB
// batch writes per second from one process, one write at a time.

import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LevelStorage, type NodeMetrics, type NodeStatus } from "@keyraft/raft";
import { NodeProcess, type LoadResult, type LoopDelay, type NodeProcessConfig } from "@keyraft/raft/testing";

const ids = ["n1", "n2", "n3"];
const tickMs = 20;
const electionTicks = 10;
const failoverTrials = 10;
const payloadBytes = 100;
const secret = "raft benchmark cluster secret (local only)";
const pollMs = 2;

export async function runRaftScenario(opts: {
  durationS?: number;
  log: (line: string) => void;
}): Promise<Record<string, number>> {
  const durationMs = Math.round((opts.durationS ?? 5) * 1000);
  const root = await mkdtemp(join(tmpdir(), "keyraft-bench-raft-"));
  const cluster = new BenchCluster(root);
  try {
    opts.log(`raft: synced LevelDB ceiling (one process, one write at a time) for ${Math.min(durationMs, 3000)} ms`);
    const levelSyncedCeilingPerSec = await levelCeiling(join(root, "ceiling"), Math.min(durationMs, 3000));
    opts.log(`raft: starting ${ids.length} node processes (tick ${tickMs} ms, election ${electionTicks} ticks)`);
    await cluster.start();
    const one = await cluster.load(1, durationMs);
    opts.log(
      `raft: 1 proposer: ${Math.round(one.commits / (one.durationMs / 1000))} commits/s, ` +
        `p50 ${one.p50Ms.toFixed(2)} ms, p99 ${one.p99Ms.toFixed(2)} ms (errors ${one.errors}${describeErrors(one)}); ` +
        `${describeLeader(one)}; ${one.followers}`,
    );
    const many = await cluster.load(64, durationMs);
    opts.log(
      `raft: 64 proposers: ${Math.round(many.commits / (many.durationMs / 1000))} commits/s, ` +
        `p50 ${many.p50Ms.toFixed(2)} ms (errors ${many.errors}${describeErrors(many)}); ` +
        `${describeLeader(many)}; ${many.followers}`,
    );
    if (process.env["KEYRAFT_RAFT_BENCH_PROFILE"] !== undefined) {
      await cluster.stopGracefully(); // profiles are written on a clean exit; failover trials (kill -9) are skipped
      throw new Error("raft bench: profiling run (KEYRAFT_RAFT_BENCH_PROFILE) stops after the load phases");
    }
    const failoversMs: number[] = [];
    for (let trial = 0; trial < failoverTrials; trial++) {
      failoversMs.push(await cluster.failover());
      opts.log(`raft: failover trial ${trial + 1}/${failoverTrials}: ${failoversMs[trial]?.toFixed(0)} ms`);
    }
    return {
      commitsPerSec1: round(one.commits / (one.durationMs / 1000)),
      commitsPerSec64: round(many.commits / (many.durationMs / 1000)),
      p50CommitMs1: round(one.p50Ms, 3),
      p99CommitMs1: round(one.p99Ms, 3),
      failoverMedianMs: round(median(failoversMs)),
      electionTimeoutMs: tickMs * electionTicks,
      levelSyncedCeilingPerSec: round(levelSyncedCeilingPerSec),
    };
  } finally {
    await cluster.destroy();
    await rm(root, { recursive: true, force: true });
  }
}

async function levelCeiling(path: string, durationMs: number): Promise<number> {
  const storage = await LevelStorage.open({ path });
  try {
    const data = new Uint8Array(payloadBytes);
    const startMs = performance.now();
    let writes = 0;
    while (performance.now() - startMs < durationMs) {
      writes++;
      await storage.append(
        [{ index: writes, term: 1, type: "normal", data }],
        { term: 1, vote: "", commit: writes },
        true,
      );
    }
    return writes / ((performance.now() - startMs) / 1000);
  } finally {
    await storage.close();
  }
}

class BenchCluster {
  private readonly processes = new Map<string, NodeProcess>();
  private readonly ports = new Map<string, number>();

  constructor(private readonly root: string) {}

  async start(): Promise<void> {
    await Promise.all(ids.map((id) => this.spawn(id, 0)));
    const peers = this.peerUrls();
    await Promise.all([...this.processes.values()].map((p) => p.request({ op: "peers", peers })));
  }

  async load(concurrency: number, durationMs: number): Promise<LoadResult & { followers: string }> {
    const leader = await this.leader();
    const running = [...this.processes.values()].filter((p) => p.running);
    const followers = running.filter((p) => p !== leader);
    const before = await Promise.all(followers.map((p) => p.request<NodeMetrics>({ op: "metrics" })));
    await Promise.all(running.map((p) => p.request<LoopDelay>({ op: "loopDelay" }))); // starts the window
    const result = await leader.request<LoadResult>(
      { op: "load", concurrency, durationMs, payloadBytes },
      durationMs + 30_000,
    );
    const delays = await Promise.all(running.map((p) => p.request<LoopDelay>({ op: "loopDelay" })));
    const after = await Promise.all(followers.map((p) => p.request<NodeMetrics>({ op: "metrics" })));
    const loop = running
      .map((p, i) => `${p.id} p50 ${delays[i]?.p50Ms.toFixed(2)} ms p99 ${delays[i]?.p99Ms.toFixed(2)} ms`)
      .join(", ");
    return {
      ...result,
      followers: `${followers.map((p, i) => describeFollower(p.id, before[i], after[i])).join("; ")}; event-loop delay: ${loop}`,
    };
  }

  /** Kills the leader; returns ms until a surviving node commits a proposal as the new leader. Restarts the victim after. */
  async failover(): Promise<number> {
    const victim = await this.leader();
    await this.caughtUp();
    await new Promise((resolve) => setTimeout(resolve, Math.random() * tickMs * 2)); // kill at a random heartbeat phase
    const killedAtMs = performance.now();
    await victim.kill("SIGKILL");
    const survivors = [...this.processes.values()].filter((p) => p.running);
    let committedAtMs = 0;
    while (committedAtMs === 0) {
      const attempts = survivors.map((p) =>
        p.request({ op: "propose", data: "failover" }, 5000).then(
          () => performance.now(),
          () => 0,
        ),
      );
      committedAtMs = Math.max(...(await Promise.all(attempts)));
      if (committedAtMs === 0) await new Promise((resolve) => setTimeout(resolve, pollMs));
      if (performance.now() - killedAtMs > 30_000) throw new Error("raft bench: no new leader within 30 s");
    }
    await this.spawn(victim.id, this.ports.get(victim.id) ?? 0);
    return committedAtMs - killedAtMs;
  }

  async stopGracefully(): Promise<void> {
    await Promise.all([...this.processes.values()].map((p) => p.stop()));
  }

  async destroy(): Promise<void> {
    await Promise.all([...this.processes.values()].map((p) => p.kill("SIGKILL")));
  }

  private async leader(): Promise<NodeProcess> {
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      const running = [...this.processes.values()].filter((p) => p.running);
      const statuses = await Promise.all(running.map((p) => p.request<NodeStatus>({ op: "status" }).catch(() => null)));
      const leaderId = statuses.find((s) => s?.role === "leader")?.id;
      const agreed =
        leaderId !== undefined && running.length === ids.length && statuses.every((s) => s?.leader === leaderId);
      const leader = running.find((p) => p.id === leaderId);
      if (agreed && leader !== undefined) return leader;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    throw new Error("raft bench: no agreed leader within 30 s");
  }

  /** Waits until every follower has applied what the leader has, so each trial starts from a healthy cluster. */
  private async caughtUp(): Promise<void> {
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      const statuses = await Promise.all(
        [...this.processes.values()].map((p) => p.request<NodeStatus>({ op: "status" })),
      );
      const commit = Math.max(...statuses.map((s) => s.commit));
      if (statuses.every((s) => s.applied === commit)) return;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    throw new Error("raft bench: followers did not catch up within 30 s");
  }

  private async spawn(id: string, port: number): Promise<void> {
    const config: NodeProcessConfig = {
      id,
      dir: join(this.root, id),
      port,
      peers: port === 0 ? {} : this.peerUrls(),
      voters: ids,
      tickMs,
      electionTicks,
      heartbeatTicks: 2,
      snapshotEntries: 50_000,
      keepEntries: 10_000,
      requestTimeoutMs: 10_000,
    };
    // KEYRAFT_RAFT_BENCH_PROFILE=<dir>: every node process writes a CPU profile there on exit (for profiling, not for figures).
    const profileDir = process.env["KEYRAFT_RAFT_BENCH_PROFILE"];
    const child = await NodeProcess.spawn({
      config,
      secret,
      ...(profileDir === undefined ? {} : { execArgv: ["--cpu-prof", `--cpu-prof-dir=${profileDir}`] }),
    });
    this.processes.set(id, child);
    this.ports.set(id, child.port);
  }

  private peerUrls(): Record<string, string> {
    return Object.fromEntries([...this.ports].map(([id, port]) => [id, `ws://127.0.0.1:${port}`]));
  }
}

/** A follower's synced appends over a load phase and their mean duration (its share of each round). */
function describeFollower(id: string, before: NodeMetrics | undefined, after: NodeMetrics | undefined): string {
  if (before === undefined || after === undefined) return `${id}: no metrics`;
  const synced = after.syncedWrites - before.syncedWrites;
  const entries = after.entriesPersisted - before.entriesPersisted;
  const persistMs = after.persistMs - before.persistMs;
  if (synced === 0) return `${id}: no synced writes`;
  return `${id}: ${synced} synced appends, ${(entries / synced).toFixed(1)} entries each, ${(persistMs / synced).toFixed(2)} ms per append`;
}

/** The leader's Ready-loop counters: how many entries each fsync carried and how long fsyncs took. */
function describeLeader(result: LoadResult): string {
  const synced = result.leader["syncedWrites"] ?? 0;
  const entries = result.leader["entriesPersisted"] ?? 0;
  const persistMs = result.leader["persistMs"] ?? 0;
  if (synced === 0) return "no synced writes";
  return `leader: ${synced} synced appends, ${(entries / synced).toFixed(1)} entries each, ${(persistMs / synced).toFixed(2)} ms per append`;
}

function describeErrors(result: LoadResult): string {
  const codes = Object.entries(result.errorCodes);
  return codes.length === 0 ? "" : `: ${codes.map(([code, count]) => `${code} ${count}`).join(", ")}`;
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[middle] ?? Number.NaN)
    : ((sorted[middle - 1] ?? 0) + (sorted[middle] ?? 0)) / 2;
}

function round(value: number, digits = 0): number {
  const scale = 10 ** digits;
  return Math.round(value * scale) / scale;
}
