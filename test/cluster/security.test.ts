// Three real processes (needs `tsc -b`): mutual TLS between the nodes with certificates made in
// the test (a peer with a certificate of another CA, or with a wrong secret, is refused), a
// rotation of the cluster secret under verification load with no failed verification, and the
// diagnostics' cost: applyTimes needs a root key, a follower's status does not ask the leader
// once per request.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeCa, makeLeaf, writePems } from "../../packages/raft/test/fixtures/certs.js";
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
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "keyraft-cluster-security-"));
});
afterAll(async () => {
  killAllMembers();
  await rm(root, { recursive: true, force: true });
});

const oldSecret = "old-cluster-secret-0123456789abcdef";
const newSecret = "new-cluster-secret-0123456789abcdef";
const fastRaft = { KEYRAFT_RAFT_TICK_MS: "10", KEYRAFT_MAX_STALENESS_MS: "2000" };

async function start(members: ClusterMember[], env: (member: ClusterMember) => Record<string, string | undefined>) {
  for (const member of members) spawnMember(member, peersOf(members), { ...fastRaft, ...env(member) });
  await Promise.all(members.map((member) => waitLive(member)));
}

async function restart(
  member: ClusterMember,
  members: ClusterMember[],
  env: Record<string, string | undefined>,
  live = true,
) {
  await kill(member, "SIGTERM");
  spawnMember(member, peersOf(members), { ...fastRaft, ...env });
  // A node listens once a quorum-backed leader confirmed it: a refused one never does.
  if (live) await waitLive(member);
}

async function connectedEverywhere(members: ClusterMember[]): Promise<boolean> {
  const views = await Promise.all(members.map((member) => status(member).catch(() => null)));
  return views.every((view) => view !== null && view.leader !== null && !view.stale);
}

describe("TLS between the nodes", () => {
  it("forms a cluster over mutual TLS; a peer with another CA's certificate or a wrong secret is refused", async () => {
    const ca = await makeCa();
    const impostorCa = await makeCa("impostor ca");
    const pems: Record<string, string> = { ca: ca.cert };
    for (const id of ["n1", "n2", "n3"]) {
      const leaf = await makeLeaf(ca);
      pems[`${id}-cert`] = leaf.cert;
      pems[`${id}-key`] = leaf.key;
    }
    const impostor = await makeLeaf(impostorCa);
    pems["bad-cert"] = impostor.cert;
    pems["bad-key"] = impostor.key;
    const files = await writePems(pems);
    const tlsEnv = (id: string, cert = `${id}-cert`, key = `${id}-key`) => ({
      KEYRAFT_CLUSTER_TLS_CERT_FILE: files[cert],
      KEYRAFT_CLUSTER_TLS_KEY_FILE: files[key],
      KEYRAFT_CLUSTER_TLS_CA_FILE: files["ca"],
    });
    const members = await planMembers(["n1", "n2", "n3"], (id) => join(root, `tls-${id}`));
    const [n1, n2, n3] = members as [ClusterMember, ClusterMember, ClusterMember];
    // The three found the cluster over TLS (a new cluster waits for every founding member).
    await start(members, (member) => tlsEnv(member.id));
    // n3 comes back with a certificate of another CA: n1 and n2 go on without it.
    await restart(n3, members, tlsEnv("n3", "bad-cert", "bad-key"), false);
    const [n1Before, n2Before] = [n1.output().length, n2.output().length];
    const leader = await leaderOf([n1, n2]);
    const created = await call(leader, "/v1/apis.createApi", { name: "tls-cluster" });
    expect(created.status).toBe(200);
    await sleep(1500);
    // n3 never got back in: it has no leader (it does not even listen: it waits for one).
    expect((await status(n3).catch(() => null))?.leader ?? null).toBeNull();
    expect(n1.output().slice(n1Before) + n2.output().slice(n2Before)).not.toContain('"peer":"n3","role"');
    // The right certificate but a wrong secret: still refused (the HMAC handshake is the second factor).
    await restart(
      n3,
      members,
      { ...tlsEnv("n3"), KEYRAFT_CLUSTER_SECRET: "wrong-cluster-secret-0123456789abcd" },
      false,
    );
    await eventually(async () => n3.output().includes("wrong cluster secret"), 10_000, "n3 refused");
    expect((await status(n3).catch(() => null))?.leader ?? null).toBeNull();
    // The right certificate and secret: n3 joins and has the write.
    await restart(n3, members, tlsEnv("n3"));
    await eventually(() => connectedEverywhere(members), 15_000, "n3 in the cluster");
    const apiId = created.body.apiId as string;
    const key = await call(n3, "/v1/keys.createKey", { apiId });
    expect(key.status).toBe(200);
    // Committed, so every node applies it (n1 may not have yet when n3 answers).
    await eventually(async () => (await verify(n1, key.body.key)).body.valid === true, 10_000, "the key on n1");
    for (const member of members) await kill(member, "SIGTERM");
  }, 120_000);
});

describe("rotating the cluster secret", () => {
  it("old -> {new, previous: old} -> new, one node at a time, under verification load: no verification fails", async () => {
    const members = await planMembers(["n1", "n2", "n3"], (id) => join(root, `rotate-${id}`));
    await start(members, () => ({ KEYRAFT_CLUSTER_SECRET: oldSecret }));
    const leader = await leaderOf(members);
    const api = await call(leader, "/v1/apis.createApi", { name: "rotation" });
    // Verifications are answered from each node's replica, which refuses them (503) once no
    // quorum-backed leader confirmed it for KEYRAFT_MAX_STALENESS_MS: a node the others refused
    // would fail them. (A key with a cluster-judged rate limit also fails while its owner
    // restarts: a restart's cost, not the rotation's.)
    const created = await call(leader, "/v1/keys.createKey", { apiId: api.body.apiId });
    const key = created.body.key as string;
    // The leader answered once it applied the key; a follower applies it a moment later (bounded
    // staleness). The load below starts once every member has it, so a failure means the rotation.
    for (const member of members)
      await eventually(async () => (await verify(member, key)).body.valid === true, 10_000, `the key on ${member.id}`);
    const restarting = new Set<string>();
    let stop = false;
    let verified = 0;
    const failures: string[] = [];
    const load = async () => {
      for (let i = 0; !stop; i++) {
        const member = members[i % members.length]!;
        if (restarting.has(member.id)) {
          await sleep(5);
          continue;
        }
        try {
          const answer = await verify(member, key);
          if (answer.status === 200 && answer.body.valid === true) verified++;
          else if (!restarting.has(member.id))
            failures.push(`${member.id}: ${answer.status} ${JSON.stringify(answer.body)}`);
        } catch (error) {
          if (!restarting.has(member.id)) failures.push(`${member.id}: ${(error as Error).message}`);
        }
      }
    };
    const loads = [load(), load(), load()];
    const roll = async (env: Record<string, string>) => {
      for (const member of members) {
        restarting.add(member.id);
        await restart(member, members, env);
        restarting.delete(member.id);
        await eventually(() => connectedEverywhere(members), 15_000, `${member.id} back in the cluster`);
      }
    };
    await roll({ KEYRAFT_CLUSTER_SECRET: newSecret, KEYRAFT_CLUSTER_SECRET_PREVIOUS: oldSecret });
    await roll({ KEYRAFT_CLUSTER_SECRET: newSecret });
    stop = true;
    await Promise.all(loads);
    console.log(`secret rotation: ${verified} verifications, ${failures.length} failed`, failures.slice(0, 5));
    expect(failures).toEqual([]);
    expect(verified).toBeGreaterThan(100);
    // Writes still reach every node with the new secret alone.
    const after = await call(members[2]!, "/v1/keys.createKey", { apiId: api.body.apiId });
    expect(after.status).toBe(200);
    await eventually(async () => (await verify(members[0]!, after.body.key)).body.valid === true);

    // Diagnostics: applyTimes needs a root key; a follower's status does not ask the leader per request.
    const anyMember = members[0]!;
    const noKey = await fetch(`${anyMember.baseUrl}/v1/cluster.applyTimes?from=1&to=2`);
    expect(noKey.status).toBe(403);
    const withKey = await fetch(`${anyMember.baseUrl}/v1/cluster.applyTimes?from=1&to=2`, {
      headers: { authorization: `Bearer ${rootKey}` },
    });
    expect(withKey.status).toBe(200);
    const currentLeader = await leaderOf(members);
    const follower = members.find((member) => member !== currentLeader)!;
    const metrics = async () => {
      const response = await fetch(`${follower.baseUrl}/v1/cluster.metrics`, {
        headers: { authorization: `Bearer ${rootKey}` },
      });
      return ((await response.json()) as { statusProgressAsks: number }).statusProgressAsks;
    };
    const asksBefore = await metrics();
    await Promise.all(Array.from({ length: 50 }, () => status(follower)));
    const asksAfter = await metrics();
    expect(asksAfter - asksBefore).toBeLessThanOrEqual(2);
    for (const member of members) await kill(member, "SIGTERM");
  }, 180_000);
});
