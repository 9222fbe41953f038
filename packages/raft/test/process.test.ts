// Three real node processes over ws on loopback with LevelDB: crash (kill -9) of the leader,
// restart and catch-up, and catch-up of a far-behind node by snapshot.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { MachineState } from "@keyraft/raft/testing";
import type { NodeStatus } from "../src/driver/status.js";
import { ProcessCluster } from "./fixtures/process-cluster.js";

let cluster: ProcessCluster;

beforeAll(async () => {
  cluster = await ProcessCluster.start(["n1", "n2", "n3"], {
    tickMs: 20,
    electionTicks: 10,
    heartbeatTicks: 2,
    snapshotEntries: 40,
    keepEntries: 10,
  });
}, 60_000);

afterAll(async () => {
  await cluster?.destroy();
});

async function proposeMany(leaderId: string, from: number, count: number): Promise<void> {
  const leader = cluster.node(leaderId);
  for (let start = from; start < from + count; start += 20) {
    const batch = Array.from({ length: Math.min(20, from + count - start) }, (_, i) =>
      leader.request({ op: "propose", data: `cmd-${start + i}` }),
    );
    await Promise.all(batch);
  }
}

async function converged(timeoutMs = 15_000): Promise<MachineState> {
  const deadline = Date.now() + timeoutMs;
  let states: MachineState[] = [];
  while (Date.now() < deadline) {
    states = await Promise.all(cluster.running().map((p) => p.request<MachineState>({ op: "state" })));
    const first = states[0];
    if (first && states.every((s) => s.count === first.count && s.digest === first.digest)) return first;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`states did not converge: ${JSON.stringify(states)}`);
}

describe("real processes: three nodes over ws with LevelDB", () => {
  it("after kill -9 of the leader a new leader commits; the restarted node catches up", async () => {
    const first = await cluster.leader();
    await proposeMany(first.status.id, 0, 30);
    await first.process.kill("SIGKILL");
    const second = await cluster.leader();
    expect(second.status.id).not.toBe(first.status.id);
    expect(second.status.term).toBeGreaterThan(first.status.term);
    await proposeMany(second.status.id, 30, 30); // commits with two of three
    const restarted = await cluster.restart(first.status.id);
    const state = await converged();
    expect(state.count).toBe(60);
    const status = await restarted.request<NodeStatus>({ op: "status" });
    expect(status).toMatchObject({ role: "follower", leader: second.status.id });
  }, 40_000);

  it("a node stopped while the log is compacted past it catches up by snapshot", async () => {
    const { status: leader } = await cluster.leader();
    const behindId = cluster.ids.find((id) => id !== leader.id) ?? "";
    const before = await cluster.node(behindId).request<MachineState>({ op: "state" });
    await cluster.node(behindId).kill("SIGKILL");
    await proposeMany(leader.id, 1000, 200); // snapshotEntries 40, keepEntries 10: compacted far past it
    const leaderStatus = await cluster.node(leader.id).request<NodeStatus>({ op: "status" });
    expect(leaderStatus.snapshotIndex - 10).toBeGreaterThan(before.lastIndex + 1); // its next entry is gone from the leader's log
    await cluster.restart(behindId);
    const state = await converged();
    expect(state.count).toBe(before.count + 200);
    const caughtUp = await cluster.node(behindId).request<MachineState>({ op: "state" });
    // It installed the leader's snapshot (its own snapshots cannot reach that far: it was down).
    expect(caughtUp.lastInstalledIndex).toBeGreaterThanOrEqual(leaderStatus.snapshotIndex);
  }, 40_000);
});
