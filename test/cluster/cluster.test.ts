// Three (then four) real keyraft processes on loopback (needs `tsc -b`): follower writes are
// visible everywhere, a node added at run time catches up by snapshot, kill -9 of the leader
// loses no acknowledged write and fails no verification on the survivors, a whole-cluster
// restart keeps every acknowledged write; then a second cluster with a 1 s staleness bound:
// a minority node refuses (or, with KEYRAFT_STALE_POLICY=serve, serves marked) verifications.
import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createServer } from "node:net";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { keyStateMachine, type CommandOutcome, type KeyCommand } from "@keyraft/core";
import { bootstrapRootKey } from "../../packages/gateway/src/state/bootstrap.js";
import { LevelCommandLog } from "../../packages/gateway/src/store/level-command-log.js";
import { openStoreDb } from "../../packages/gateway/src/store/level-db.js";
import { repoRoot } from "../e2e/node-process.js";
import {
  call,
  eventually,
  kill,
  killAllMembers,
  leaderOf,
  peersOf,
  planMembers,
  rootKey,
  sleep,
  spawnMember,
  status,
  verify,
  waitLive,
  type ClusterMember,
} from "./cluster-harness.js";

let root = "";
const clusterSecretForOne = "one-member-cluster-secret-0123456789";
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "keyraft-cluster-"));
});
afterAll(async () => {
  killAllMembers();
  await rm(root, { recursive: true, force: true });
});

async function createApi(member: ClusterMember): Promise<string> {
  const created = await call(member, "/v1/apis.createApi", { name: "cluster-test" });
  expect(created.status, JSON.stringify(created.body)).toBe(200);
  return created.body.apiId as string;
}

async function createKey(
  member: ClusterMember,
  apiId: string,
): Promise<{ status: number; key?: string; keyId?: string; body: unknown }> {
  const created = await call(member, "/v1/keys.createKey", { apiId });
  return { status: created.status, key: created.body.key, keyId: created.body.keyId, body: created.body };
}

async function isValid(member: ClusterMember, key: string): Promise<boolean> {
  const answer = await verify(member, key);
  return answer.status === 200 && answer.body.valid === true;
}

describe("a three-node cluster", () => {
  let members: ClusterMember[] = [];
  let joiner: ClusterMember;
  let apiId = "";
  const acknowledged: string[] = [];
  const clusterEnv = { KEYRAFT_SNAPSHOT_EVERY: "40", KEYRAFT_RAFT_KEEP_ENTRIES: "0" };

  beforeAll(async () => {
    members = await planMembers(["n1", "n2", "n3"], (id) => join(root, "a", id));
    [joiner] = (await planMembers(["n4"], (id) => join(root, "a", id))) as [ClusterMember];
    for (const member of members) spawnMember(member, peersOf(members), clusterEnv);
    await Promise.all(members.map((member) => waitLive(member)));
  }, 60_000);

  it("answers a write on a follower after applying it there, and every node sees it", async () => {
    const leader = await leaderOf(members);
    const follower = members.find((member) => member !== leader) as ClusterMember;
    apiId = await createApi(follower);
    const created = await createKey(follower, apiId);
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    acknowledged.push(created.key as string);
    // Read-your-writes on the answering follower: no waiting.
    expect(await isValid(follower, created.key as string)).toBe(true);
    for (const member of members)
      await eventually(() => isValid(member, created.key as string), 5000, `${member.id} sees the key`);
    const view = await status(follower);
    expect(view).toMatchObject({ nodeId: follower.id, role: "follower", leader: leader.id, stale: false });
    expect(view.appliedIndex).toBeGreaterThan(0);
    const leaderView = await status(leader);
    expect(leaderView.role).toBe("leader");
    expect(leaderView.peers.map((peer) => peer.id).sort()).toEqual(
      members
        .filter((m) => m !== leader)
        .map((m) => m.id)
        .sort(),
    );
    for (const peer of leaderView.peers) expect(peer.lag).not.toBeNull();
  }, 30_000);

  it("spends credits through the leader: concurrent verifications on every node spend each credit once", async () => {
    const leader = await leaderOf(members);
    const created = await call(leader, "/v1/keys.createKey", { apiId, remaining: 5 });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const key = created.body.key as string;
    // Until a node has the key it answers NOT_FOUND (no spend); each node's first VALID spends one.
    for (const member of members) await eventually(() => isValid(member, key), 5000, "key everywhere");
    // That first round spent exactly 3 credits (one per node); 2 are left for 12 concurrent verifications.
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) => verify(members[i % 3] as ClusterMember, key)),
    );
    const valid = answers.filter((answer) => answer.status === 200 && answer.body.valid === true);
    expect(valid).toHaveLength(2);
    expect(
      answers.every(
        (answer) => answer.status === 200 && (answer.body.valid === true || answer.body.code === "USAGE_EXCEEDED"),
      ),
    ).toBe(true);
    for (const member of members)
      await eventually(
        async () => (await verify(member, key)).body.code === "USAGE_EXCEEDED",
        5000,
        "exhausted everywhere",
      );
  }, 30_000);

  it("adds a node at run time that catches up by snapshot and becomes a voter", async () => {
    // Enough writes for several snapshots (every 40 entries, no entries kept behind them).
    for (let i = 0; i < 100; i++) {
      const created = await createKey(members[i % 3] as ClusterMember, apiId);
      expect(created.status).toBe(200);
      acknowledged.push(created.key as string);
    }
    const all = [...members, joiner];
    spawnMember(joiner, peersOf(all), { ...clusterEnv, KEYRAFT_JOIN: "true" });
    await sleep(300);
    const refused = await call(
      members[0] as ClusterMember,
      "/v1/cluster.addNode",
      { nodeId: "n4", address: `127.0.0.1:${joiner.raftPort}` },
      false,
    );
    expect(refused.status).toBe(403); // a root key is required
    const added = await call(members[0] as ClusterMember, "/v1/cluster.addNode", {
      nodeId: "n4",
      address: `127.0.0.1:${joiner.raftPort}`,
    });
    expect(added.status, JSON.stringify(added.body)).toBe(200);
    await waitLive(joiner); // it listens once caught up
    const view = await status(joiner);
    expect(view.snapshotIndex).toBeGreaterThan(0); // installed from the leader's snapshot
    for (const key of acknowledged) expect(await isValid(joiner, key)).toBe(true);
    await eventually(
      async () => (await status(members[0] as ClusterMember)).voters.includes("n4"),
      15_000,
      "n4 promoted to voter",
    );
    members = all;
  }, 60_000);

  it("survives kill -9 of the leader: no verification fails on the survivors, writes resume, nothing acknowledged is lost", async () => {
    const leader = await leaderOf(members);
    const survivors = members.filter((member) => member !== leader);
    const verifyKeys = acknowledged.slice(0, 10);
    let running = true;
    const failures: string[] = [];
    let verifications = 0;
    const loops = survivors.map(async (member, i) => {
      for (let n = i; running; n++) {
        const key = verifyKeys[n % verifyKeys.length] as string;
        const answer = await verify(member, key).catch((error: unknown) => ({
          status: 0,
          body: String(error),
          headers: new Headers(),
        }));
        verifications++;
        if (answer.status !== 200 || answer.body.valid !== true || answer.body.code !== "VALID")
          failures.push(`${member.id}: ${answer.status} ${JSON.stringify(answer.body)}`);
      }
    });
    const writer = survivors[0] as ClusterMember;
    let writesAfterKill = 0;
    let killedAtMs = 0;
    const writes = (async () => {
      while (running) {
        const created = await createKey(writer, apiId).catch(() => ({ status: 0, key: undefined, body: null }));
        if (created.status === 200) {
          acknowledged.push(created.key as string);
          if (killedAtMs > 0) writesAfterKill++;
        } else {
          expect([503, 0]).toContain(created.status);
        }
      }
    })();
    await sleep(500);
    killedAtMs = Date.now();
    await kill(leader, "SIGKILL");
    await eventually(async () => writesAfterKill >= 20, 20_000, "writes resume on a new leader");
    await sleep(300);
    running = false;
    await Promise.all([...loops, writes]);
    expect(failures).toEqual([]);
    expect(verifications).toBeGreaterThan(50);
    const newLeader = await leaderOf(survivors);
    expect(newLeader).not.toBe(leader);
    for (const member of survivors) {
      for (const key of acknowledged)
        expect(await isValid(member, key), `${member.id} keeps an acknowledged key`).toBe(true);
    }
  }, 90_000);

  it("keeps every acknowledged write across a whole-cluster kill -9 and restart", async () => {
    for (const member of members) await kill(member, "SIGKILL");
    // The founders restart with their original KEYRAFT_PEERS: they learn n4's address from the
    // replicated address book (snapshot + log), not from their configuration.
    const founders = members.filter((member) => member.id !== "n4");
    for (const member of members) spawnMember(member, peersOf(member.id === "n4" ? members : founders), clusterEnv);
    await Promise.all(members.map((member) => waitLive(member)));
    await leaderOf(members);
    for (const member of members) {
      for (const key of acknowledged) expect(await isValid(member, key), `${member.id} after restart`).toBe(true);
    }
  }, 90_000);
});

describe("membership removal", () => {
  it("removes a node at run time through cluster:ctl; the rest keep writing", async () => {
    const members = await planMembers(["r1", "r2", "r3"], (id) => join(root, "r", id));
    for (const member of members) spawnMember(member, peersOf(members));
    await Promise.all(members.map((member) => waitLive(member)));
    const leader = await leaderOf(members);
    const removed = members.find((member) => member !== leader) as ClusterMember;
    const ctl = spawnSync(
      process.execPath,
      [join(repoRoot, "cluster/ctl.mjs"), "remove", removed.id, "--url", removed.baseUrl],
      {
        encoding: "utf8",
        env: { PATH: process.env["PATH"] ?? "", KEYRAFT_ROOT_KEY: rootKey },
      },
    );
    expect(ctl.status, ctl.stderr).toBe(0);
    expect(ctl.stdout).toContain(`${removed.id} removed at index`);
    const rest = members.filter((member) => member !== removed);
    for (const member of rest)
      await eventually(
        async () => !(await status(member)).voters.includes(removed.id),
        5000,
        "removed from the voters",
      );
    await kill(removed, "SIGKILL");
    const apiId = await createApi(rest[0] as ClusterMember);
    // Read-your-writes holds on the answering node; the other one applies the api a moment later.
    let created: Awaited<ReturnType<typeof createKey>> = { status: 404, body: null };
    await eventually(
      async () => (created = await createKey(rest[1] as ClusterMember, apiId)).status !== 404,
      5000,
      "the api reached the other node",
    );
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    for (const member of rest)
      await eventually(() => isValid(member, created.key as string), 5000, "write after removal");
    const refused = spawnSync(process.execPath, [join(repoRoot, "cluster/ctl.mjs"), "remove", "r9"], {
      encoding: "utf8",
      env: { PATH: process.env["PATH"] ?? "" },
    });
    expect(refused.status).toBe(2);
    expect(refused.stderr).toMatch(/KEYRAFT_ROOT_KEY/);
    for (const member of rest) await kill(member, "SIGKILL");
  }, 60_000);
});

describe("bounded staleness", () => {
  let members: ClusterMember[] = [];

  beforeAll(async () => {
    members = await planMembers(["s1", "s2", "s3"], (id) => join(root, "b", id));
    for (const member of members) {
      spawnMember(member, peersOf(members), {
        KEYRAFT_MAX_STALENESS_MS: "1000",
        ...(member.id === "s3" ? { KEYRAFT_STALE_POLICY: "serve" } : {}),
      });
    }
    await Promise.all(members.map((member) => waitLive(member)));
  }, 60_000);

  async function isolate(member: ClusterMember, body: (key: string) => Promise<void>, key: string): Promise<void> {
    const others = members.filter((other) => other !== member);
    for (const other of others) other.child?.kill("SIGSTOP");
    try {
      await body(key);
    } finally {
      for (const other of others) other.child?.kill("SIGCONT");
    }
    // Back in the majority: fresh again.
    await eventually(
      async () => (await verify(member, key)).status === 200 && !(await status(member)).stale,
      15_000,
      `${member.id} fresh again`,
    );
  }

  it("a minority node past the bound refuses verifications with 503 and the v1 body, and status says so", async () => {
    const leader = await leaderOf(members);
    const apiId = await createApi(leader);
    const created = await createKey(leader, apiId);
    for (const member of members)
      await eventually(() => isValid(member, created.key as string), 5000, "key everywhere");
    const s1 = members[0] as ClusterMember;
    await isolate(
      s1,
      async (key) => {
        expect((await verify(s1, key)).status).toBe(200); // still within the bound
        await eventually(async () => (await verify(s1, key)).status === 503, 10_000, "s1 refuses");
        const refused = await verify(s1, key);
        expect(refused.body.error).toMatchObject({
          code: "INTERNAL_SERVER_ERROR",
          docs: expect.stringContaining("INTERNAL_SERVER_ERROR"),
        });
        expect(refused.body.error.message).toMatch(/stale/);
        expect(Number(refused.headers.get("keyraft-stale"))).toBeGreaterThan(1000);
        const view = await status(s1);
        expect(view.stale).toBe(true);
        expect(view.stalenessMs).toBeGreaterThan(1000);
        const live = await fetch(`${s1.baseUrl}/v1/liveness`);
        expect(live.status).toBe(200);
        expect(Number(live.headers.get("keyraft-stale"))).toBeGreaterThan(1000);
        // v2 answers the same, in its own error body.
        const refusedV2 = await call(s1, "/v2/keys.verifyKey", { key });
        expect(refusedV2.status).toBe(503);
        expect(refusedV2.headers.get("content-type")).toMatch(/^application\/problem\+json/);
        expect(refusedV2.headers.get("retry-after")).toBe("1");
        expect(refusedV2.body.error).toMatchObject({
          status: 503,
          type: "https://unkey.com/docs/errors/unkey/application/service_unavailable",
        });
        expect(refusedV2.body.error.detail).toMatch(/stale/);
        expect(Number(refusedV2.headers.get("keyraft-stale"))).toBeGreaterThan(1000);
        const liveV2 = await fetch(`${s1.baseUrl}/v2/liveness`);
        expect(liveV2.status).toBe(200);
        expect(Number(liveV2.headers.get("keyraft-stale"))).toBeGreaterThan(1000);
      },
      created.key as string,
    );
  }, 60_000);

  it("with KEYRAFT_STALE_POLICY=serve it keeps answering and marks the answers stale", async () => {
    const leader = await leaderOf(members);
    const apiId = await createApi(leader);
    const created = await createKey(leader, apiId);
    const s3 = members[2] as ClusterMember;
    await eventually(() => isValid(s3, created.key as string), 5000, "key on s3");
    expect((await verify(s3, created.key as string)).headers.get("keyraft-stale")).toBeNull();
    await isolate(
      s3,
      async (key) => {
        await eventually(async () => (await status(s3)).stale, 10_000, "s3 stale");
        const served = await verify(s3, key);
        expect(served.status).toBe(200);
        expect(served.body).toMatchObject({ valid: true, code: "VALID" });
        expect(Number(served.headers.get("keyraft-stale"))).toBeGreaterThan(1000);
      },
      created.key as string,
    );
  }, 60_000);
});

describe("a pre-cluster single-node data dir", () => {
  /** Writes a data dir the way the pre-cluster single-node store did: root key + one api. */
  async function legacyDataDir(dataDir: string): Promise<void> {
    const db = await openStoreDb(dataDir);
    const machine = keyStateMachine();
    const log = await LevelCommandLog.open<KeyCommand, CommandOutcome>(db, machine, { onFatal: () => undefined });
    await bootstrapRootKey({
      state: machine.state,
      commandLog: log,
      rootKey,
      nowMs: Date.now,
      randomBytes: (n) => new Uint8Array(randomBytes(n)),
    });
    const created = await log.append({
      type: "createApi",
      apiId: "api_legacy1",
      name: "legacy-api",
      nowMs: Date.now(),
    });
    expect(created.ok).toBe(true);
    await log.close();
    await db.close();
  }

  it("is migrated into a one-member cluster at start: the old state is served and survives a restart", async () => {
    const dataDir = join(root, "legacy");
    await legacyDataDir(dataDir);
    const [member] = (await planMembers(["solo"], () => dataDir)) as [ClusterMember];
    member.env = { KEYRAFT_ROOT_KEY: undefined }; // the root key must come from the old state
    const start = async () => {
      spawnMember(member, `solo=127.0.0.1:${member.raftPort}`, { KEYRAFT_CLUSTER_SECRET: clusterSecretForOne });
      await waitLive(member);
    };
    await start();
    expect(member.output()).toContain("pre-cluster store migrated");
    const api = await fetch(`${member.baseUrl}/v1/apis.getApi?apiId=api_legacy1`, {
      headers: { authorization: `Bearer ${rootKey}` },
    });
    expect(api.status).toBe(200);
    expect(await api.json()).toMatchObject({ id: "api_legacy1", name: "legacy-api" });
    const created = await call(member, "/v1/keys.createKey", { apiId: "api_legacy1" });
    expect(created.status).toBe(200);
    expect(existsSync(join(dataDir, "pre-cluster-backup", "CURRENT"))).toBe(true);
    expect(existsSync(join(dataDir, "CURRENT"))).toBe(false);
    await kill(member, "SIGTERM");
    await start();
    expect(await isValid(member, created.body.key as string)).toBe(true);
    await kill(member, "SIGTERM");
  }, 60_000);

  it("is refused, with exit code 1 and a message, when the node is one of several members", async () => {
    const dataDir = join(root, "legacy-multi");
    await legacyDataDir(dataDir);
    const [member, other] = (await planMembers(["m1", "m2"], (id) =>
      id === "m1" ? dataDir : join(root, "unused"),
    )) as [ClusterMember, ClusterMember];
    spawnMember(member, peersOf([member, other]));
    expect(await member.exited).toBe(1);
    expect(member.output()).toContain("can only be upgraded into a one-member cluster");
    expect(existsSync(join(dataDir, "CURRENT"))).toBe(true); // untouched
  }, 30_000);
});

describe("a node stopped while it starts", () => {
  it("exits 0 on SIGTERM while it waits for a founding member that never comes", async () => {
    const [member, absent] = (await planMembers(["w1", "w2"], (id) => join(root, "waiting", id))) as [
      ClusterMember,
      ClusterMember,
    ];
    // w2 is never started: a new cluster is founded only once every founding member accepted the
    // new data directory, so w1 waits (and would wait for a quorum after that).
    spawnMember(member, peersOf([member, absent]));
    await eventually(
      async () => member.output().includes("founds only once every founding member has accepted it"),
      30_000,
      "the wait-for-the-founders warning",
    );
    expect(member.output()).toContain('"waitingFor":["w2"]');
    member.child?.kill("SIGTERM");
    expect(await member.exited).toBe(0);
    expect(member.output()).toContain("stopped while starting");
  }, 45_000);
});

describe("npm run cluster (cluster/run.mjs) and cluster:ctl", () => {
  async function portsFree(base: number, count: number): Promise<boolean> {
    for (let port = base; port < base + count; port++) {
      const free = await new Promise<boolean>((resolve) => {
        const server = createServer();
        server.once("error", () => resolve(false));
        server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
      });
      if (!free) return false;
    }
    return true;
  }

  async function freeRange(count: number): Promise<number> {
    for (let attempt = 0; attempt < 50; attempt++) {
      const base = 20_000 + Math.floor(Math.random() * 40_000);
      if (await portsFree(base, count)) return base;
    }
    throw new Error("no free port range");
  }

  it("starts three nodes, shows the leader, answers ctl status, and stops all on SIGINT with exit 0", async () => {
    const httpBase = await freeRange(3);
    const raftBase = await freeRange(3);
    const dir = join(root, "script");
    const child = spawn(process.execPath, [join(repoRoot, "cluster/run.mjs")], {
      cwd: repoRoot,
      env: {
        PATH: process.env["PATH"] ?? "",
        KEYRAFT_CLUSTER_DIR: dir,
        KEYRAFT_CLUSTER_HTTP_BASE: String(httpBase),
        KEYRAFT_CLUSTER_RAFT_BASE: String(raftBase),
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    child.stdout.on("data", (chunk) => (out += String(chunk)));
    child.stderr.on("data", (chunk) => (out += String(chunk)));
    const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code))); // after the output is drained
    try {
      // Followers may listen (and the status line name the leader) before the leader has printed the key.
      await eventually(
        async () => /leader: n\d \|/.test(out) && out.includes("root key (shown once"),
        30_000,
        "a status line naming the leader, and the root key",
      );
      // ctl asks n2 below, and the stop is of three serving nodes: wait until one status line shows
      // every node serving (a node listens once it has caught up). A stop that reaches a node still
      // starting is the test above ("stopped while starting").
      await eventually(
        async () => out.split("\n").some((line) => (line.match(/\| n\d (leader|follower) term/g) ?? []).length === 3),
        30_000,
        "a status line with every node serving",
      );
      const rootKeys = out.match(/root key \(shown once, store it now\): (\S+)/g) ?? [];
      expect(rootKeys).toHaveLength(1); // one root key, printed once
      const generatedRootKey = rootKeys[0]?.split(" ").at(-1) ?? "";
      const ctl = spawnSync(
        process.execPath,
        [join(repoRoot, "cluster/ctl.mjs"), "status", "--url", `http://127.0.0.1:${httpBase + 1}`],
        { encoding: "utf8", env: { ...process.env, KEYRAFT_ROOT_KEY: generatedRootKey } },
      );
      expect(ctl.status, ctl.stderr).toBe(0);
      expect(ctl.stdout).toMatch(/^n2: (leader|follower), term \d+, leader n\d/);
      expect(existsSync(join(dir, "secret"))).toBe(true);
    } finally {
      child.kill("SIGINT");
    }
    // The output's tail says which node did not stop cleanly (and its last log lines) when this fails.
    expect(await exited, out.slice(-3000)).toBe(0);
    expect(out).toContain("cluster: stopped (n1 0, n2 0, n3 0)");
  }, 60_000);
});
