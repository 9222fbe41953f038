// Operations on real processes (needs `tsc -b`): the audit log is derived from the replicated log,
// so every node of a three-node cluster lists the same entries, also a node that caught up from a
// snapshot and a node after a restart; cluster.status wants a root key; GET /metrics on its own
// port, behind its token, reports the Raft state and the snapshots taken.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "@keyraft/raft/testing";
import {
  call,
  eventually,
  kill,
  killAllMembers,
  leaderOf,
  peersOf,
  planMembers,
  rootKey,
  spawnMember,
  status,
  waitLive,
  type ClusterMember,
} from "./cluster-harness.js";
import { parsePrometheusText } from "../../packages/gateway/test/prometheus-text.js";

const metricsToken = "metrics_token_for_the_cluster_test";
const clusterEnv = { KEYRAFT_SNAPSHOT_EVERY: "20", KEYRAFT_RAFT_KEEP_ENTRIES: "0" };

let root = "";
let members: ClusterMember[] = [];
let metricsPort = 0;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "keyraft-operations-"));
  members = await planMembers(["n1", "n2", "n3"], (id) => join(root, id));
  metricsPort = await freePort();
  members[0]!.env = { KEYRAFT_METRICS_PORT: String(metricsPort), KEYRAFT_METRICS_TOKEN: metricsToken };
  for (const member of members) spawnMember(member, peersOf(members), clusterEnv);
  await Promise.all(members.map((member) => waitLive(member)));
}, 60_000);
afterAll(async () => {
  killAllMembers();
  await rm(root, { recursive: true, force: true });
});

async function get(member: ClusterMember, path: string, token: string | null = rootKey) {
  const response = await fetch(`${member.baseUrl}${path}`, {
    headers: token === null ? {} : { authorization: `Bearer ${token}` },
  });
  return { status: response.status, body: (await response.json()) as any };
}

/** Every audit entry a node lists, newest first, page by page. */
async function allLogs(member: ClusterMember): Promise<unknown[]> {
  const logs: unknown[] = [];
  let cursor: string | undefined;
  for (let pages = 0; pages < 100; pages++) {
    const answer = await get(member, `/v1/audit.listLogs?limit=7${cursor === undefined ? "" : `&cursor=${cursor}`}`);
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    logs.push(...answer.body.logs);
    cursor = answer.body.cursor;
    if (cursor === undefined) return logs;
  }
  throw new Error("listLogs did not end");
}

async function sameLogsEverywhere(nodes: readonly ClusterMember[]): Promise<unknown[]> {
  const leader = await leaderOf(nodes);
  const goal = (await status(leader)).commitIndex;
  await eventually(
    async () => (await Promise.all(nodes.map((node) => status(node)))).every((view) => view.appliedIndex >= goal),
    15_000,
    "every node applied the writes",
  );
  const views = await Promise.all(nodes.map(allLogs));
  for (const view of views.slice(1)) expect(view).toEqual(views[0]);
  return views[0]!;
}

describe("operations across a cluster", () => {
  it("wants a root key for cluster.status and cluster.metrics", async () => {
    for (const path of ["/v1/cluster.status", "/v1/cluster.metrics"]) {
      const refused = await get(members[1]!, path, null);
      expect(refused.status).toBe(403);
      expect(refused.body.error.code).toBe("UNAUTHORIZED");
      expect((await get(members[1]!, path)).status).toBe(200);
    }
  });

  it("lists the same audit entries on every node, written through any node", async () => {
    const apiIds: string[] = [];
    for (let i = 0; i < 24; i++) {
      const through = members[i % members.length]!;
      const created = await call(through, "/v1/apis.createApi", { name: `audited-${i}` });
      expect(created.status, JSON.stringify(created.body)).toBe(200);
      apiIds.push(created.body.apiId);
    }
    const key = await call(members[2]!, "/v1/keys.createKey", { apiId: apiIds[0], name: "k" });
    // Through another node than the one that created the key: it answers once it has applied the create.
    await eventually(
      async () =>
        (await call(members[1]!, "/v1/keys.updateKey", { keyId: key.body.keyId, enabled: false })).status === 200,
      15_000,
      "the update through n2 succeeded",
    );
    const logs = (await sameLogsEverywhere(members)) as { action: string; targetIds: string[]; requestId: string }[];
    expect(logs[0]).toMatchObject({ action: "key.update", targetIds: [key.body.keyId] });
    expect(logs.filter((log) => log.action === "api.create").map((log) => log.targetIds[0])).toEqual(
      [...apiIds].reverse(),
    );
    expect(new Set(logs.map((log) => log.requestId)).size).toBe(logs.length);
  });

  it("keeps them through a snapshot: a node that joins catches up with the same log", async () => {
    const [joiner] = (await planMembers(["n4"], (id) => join(root, id))) as [ClusterMember];
    const all = [...members, joiner];
    spawnMember(joiner, peersOf(all), { ...clusterEnv, KEYRAFT_JOIN: "true" });
    const added = await call(members[0]!, "/v1/cluster.addNode", {
      nodeId: "n4",
      address: `127.0.0.1:${joiner.raftPort}`,
    });
    expect(added.status, JSON.stringify(added.body)).toBe(200);
    await waitLive(joiner);
    expect((await status(joiner)).snapshotIndex).toBeGreaterThan(0); // installed from a snapshot
    const logs = (await sameLogsEverywhere(all)) as { action: string; targetIds: string[]; changes: unknown }[];
    expect(logs.find((log) => log.action === "cluster.addNode")).toMatchObject({
      targetIds: ["n4"],
      changes: { address: `ws://127.0.0.1:${joiner.raftPort}` },
    });
    // Back to three voters, so that the next test's stopped member leaves a quorum.
    const removed = await call(members[0]!, "/v1/cluster.removeNode", { nodeId: "n4" });
    expect(removed.status, JSON.stringify(removed.body)).toBe(200);
    await kill(joiner, "SIGTERM");
  });

  it("keeps them through a restart", async () => {
    const before = await allLogs(members[1]!);
    await kill(members[1]!, "SIGTERM");
    const created = await call(members[0]!, "/v1/apis.createApi", { name: "while-n2-was-down" });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    spawnMember(members[1]!, peersOf(members), clusterEnv);
    await waitLive(members[1]!);
    const after = (await sameLogsEverywhere(members)) as { action: string }[];
    expect(after.slice(1)).toEqual(before);
  });

  it("a leader stopped with SIGTERM hands its leadership to a member first", async () => {
    const leader = await leaderOf(members);
    const termBefore = (await status(leader)).term;
    await kill(leader, "SIGTERM");
    expect(leader.output()).toContain("leadership handed over before stopping");
    const survivors = members.filter((member) => member !== leader);
    const next = await leaderOf(survivors);
    // The member it named leads (one election, started by the hand-over), and the write goes on.
    expect(leader.output()).toContain(`"to":"${next.id}"`);
    expect((await status(next)).term).toBe(termBefore + 1);
    const created = await call(next, "/v1/apis.createApi", { name: "after-the-hand-over" });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    spawnMember(leader, peersOf(members), clusterEnv);
    await waitLive(leader);
  });

  it("serves GET /metrics on KEYRAFT_METRICS_PORT behind its token", async () => {
    const url = `http://127.0.0.1:${metricsPort}/metrics`;
    expect((await fetch(url)).status).toBe(401);
    expect((await fetch(`${members[0]!.baseUrl}/metrics`)).status).toBe(404); // not on the API port
    // The member may have been restarted by the test before (the leader that stopped): its
    // metrics start over, so it takes a snapshot (every 20 entries) before they are read.
    for (let i = 0; i < 25; i++) {
      const created = await call(members[0]!, "/v1/apis.createApi", { name: `metrics-${i}` });
      expect(created.status, JSON.stringify(created.body)).toBe(200);
    }
    const scrape = async () => {
      const response = await fetch(url, { headers: { authorization: `Bearer ${metricsToken}` } });
      expect(response.status).toBe(200);
      return parsePrometheusText(await response.text());
    };
    let text = await scrape();
    // The snapshot's write completes after the entry that triggered it.
    for (let tries = 0; tries < 100 && (text.value("keyraft_raft_snapshot_duration_seconds_count") ?? 0) < 1; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      text = await scrape();
    }
    const view = await status(members[0]!);
    expect(text.value("keyraft_raft_role", { role: view.role })).toBe(1);
    expect(text.value("keyraft_raft_term")).toBe(view.term);
    expect(text.value("keyraft_raft_applied_index")).toBeGreaterThan(20);
    expect(text.value("keyraft_raft_append_duration_seconds_count", { sync: "true" })).toBeGreaterThan(0);
    expect(text.value("keyraft_raft_snapshot_duration_seconds_count")).toBeGreaterThanOrEqual(1);
    expect(text.value("keyraft_raft_snapshot_bytes")).toBeGreaterThan(0);
    expect(text.value("keyraft_http_request_duration_seconds_count", { route: "/v1/apis.createApi" })).toBeGreaterThan(
      0,
    );
    expect(text.value("keyraft_stale")).toBe(0);
  });
});
