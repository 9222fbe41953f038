// A member whose data directory was wiped must not found a cluster again (it could vote twice in a
// term): every data directory has an incarnation, peers remember it, the handshake checks it, and
// the member rejoins only as a new member through a membership change.
import { afterEach, describe, expect, it } from "vitest";
import { freePort } from "../src/driver/free-port.js";
import { foundingClusterId, MemoryIdentityStore, PeerIdentities } from "../src/driver/peer-identity.js";
import { RaftNodeError } from "../src/errors.js";
import { RaftNode } from "../src/node.js";
import { MemoryStorage } from "../src/storage/memory-storage.js";
import {
  bytes,
  clusterSecret,
  connect,
  leaderOf,
  RecordingMachine,
  startMember,
  until,
  type Member,
} from "./fixtures/in-process-cluster.js";

describe("PeerIdentities", () => {
  it("records a peer's incarnation, refuses another one, and forgets it on a newer membership change only", () => {
    const store = new MemoryIdentityStore();
    const identities = new PeerIdentities(store, "c1");
    expect(identities.fresh).toBe(true);
    expect(identities.check("n2", { cluster: "c1", incarnation: "aaaa" })).toBeNull();
    expect(identities.check("n2", { cluster: "c1", incarnation: "aaaa" })).toBeNull();
    expect(identities.check("n2", { cluster: "c1", incarnation: "bbbb" })).toMatch(/data directory was replaced/);
    expect(identities.check("n3", { cluster: "c2", incarnation: "cccc" })).toMatch(/belongs to cluster c2/);

    const reopened = new PeerIdentities(store, "c1"); // a restart keeps the records and the incarnation
    expect(reopened.fresh).toBe(false);
    expect(reopened.own).toEqual(identities.own);
    expect(reopened.check("n2", { cluster: "c1", incarnation: "bbbb" })).not.toBeNull();
    reopened.forget("n2", 40); // "remove n2" applied at index 40
    expect(reopened.check("n2", { cluster: "c1", incarnation: "bbbb" })).toBeNull();
    reopened.forget("n2", 40); // replayed after a restart: the new record stays
    expect(reopened.check("n2", { cluster: "c1", incarnation: "aaaa" })).not.toBeNull();
  });

  it("a snapshot forgets the peers it no longer lists (their removal was never applied one by one)", () => {
    const identities = new PeerIdentities(new MemoryIdentityStore(), "c1");
    expect(identities.check("n2", { cluster: "c1", incarnation: "aaaa" })).toBeNull();
    expect(identities.check("n3", { cluster: "c1", incarnation: "bbbb" })).toBeNull();
    identities.forgetNonMembers({ voters: ["n1", "n2"], learners: [] }, 50);
    expect(identities.check("n3", { cluster: "c1", incarnation: "cccc" })).toBeNull(); // removed: forgotten
    expect(identities.check("n2", { cluster: "c1", incarnation: "dddd" })).not.toBeNull(); // still a member
    identities.forgetNonMembers({ voters: ["n1"], learners: [] }, 50); // not newer: ignored
    expect(identities.check("n2", { cluster: "c1", incarnation: "dddd" })).not.toBeNull();
  });

  it("a joining node learns its cluster from the first peer; a fresh directory gets a new incarnation", () => {
    const joiner = new PeerIdentities(new MemoryIdentityStore(), "");
    expect(joiner.own.cluster).toBe("");
    expect(joiner.check("n1", { cluster: "c1", incarnation: "aaaa" })).toBeNull();
    expect(joiner.own.cluster).toBe("c1");
    expect(joiner.check("n9", { cluster: "c9", incarnation: "dddd" })).not.toBeNull();
    const other = new PeerIdentities(new MemoryIdentityStore(), "c1");
    expect(other.own.incarnation).not.toBe(joiner.own.incarnation);
  });

  it("founding members agree on the cluster id whatever the order of their voter list", () => {
    expect(foundingClusterId(["n1", "n2", "n3"], "secret-1234567890")).toBe(
      foundingClusterId(["n3", "n1", "n2"], "secret-1234567890"),
    );
    expect(foundingClusterId(["n1", "n2"], "secret-1234567890")).not.toBe(
      foundingClusterId(["n1", "n2", "n3"], "secret-1234567890"),
    );
  });
});

let running: Member[] = [];

afterEach(async () => {
  await Promise.all(running.map((m) => m.node.stop()));
  running = [];
});

describe("RaftNode with identities", () => {
  it("a founding member whose data directory was wiped refuses to found, and rejoins as a new member", async () => {
    const ids = ["n1", "n2", "n3"];
    const cluster = foundingClusterId(ids, clusterSecret);
    const stores = new Map(ids.map((id) => [id, new MemoryIdentityStore()]));
    const members = await Promise.all(
      ids.map((id) =>
        startMember(id, ids, { identity: { store: stores.get(id) ?? new MemoryIdentityStore(), cluster } }),
      ),
    );
    running.push(...members);
    connect(members);
    const leader = await leaderOf(members);
    await leader.node.propose(bytes("before the wipe"));
    await until(() => members.every((m) => m.machine.commands.length === 1));
    const n3 = members.find((m) => m.id === "n3");
    if (n3 === undefined) throw new Error("no n3");
    const n3Leads = n3 === leader;
    const survivors = members.filter((m) => m !== n3);
    await n3.node.stop();
    running = survivors;
    const survivingLeader = n3Leads ? await leaderOf(survivors) : leader;
    const term = survivingLeader.node.status().term;
    const peers = Object.fromEntries(survivors.map((m) => [m.id, `ws://127.0.0.1:${m.node.port}`]));

    // The wiped n3: an empty log, a new incarnation, the same founding configuration.
    const wiped = new RaftNode({
      id: "n3",
      voters: ids,
      storage: new MemoryStorage({ keepEntries: 5 }),
      stateMachine: new RecordingMachine(),
      transport: { secret: clusterSecret, peers, limits: { backoffBaseMs: 10, backoffMaxMs: 100 } },
      tickMs: 10,
      identity: { store: new MemoryIdentityStore(), cluster, foundingProbeMs: 2000 },
    });
    const refused = await wiped.start().catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(RaftNodeError);
    expect(refused).toMatchObject({ code: "RAFT_ERR_IDENTITY_REFUSED" });
    expect(survivors.some((m) => m.node.transportStats().identityRefusals > 0)).toBe(true);
    expect(survivingLeader.node.status()).toMatchObject({ role: "leader", term });

    // The way back: remove n3, start it empty without founding voters, add it as a learner.
    const fatal: unknown[] = [];
    await survivingLeader.node.remove("n3");
    const rejoined = await startMember("n3", [], {
      identity: { store: new MemoryIdentityStore(), cluster: "" },
      onFatal: (error) => fatal.push(error), // e.g. stale heartbeats queued for the old n3 reaching the new one
    });
    running.push(rejoined);
    connect([...survivors, rejoined]);
    await survivingLeader.node.addLearner("n3", `ws://127.0.0.1:${rejoined.node.port}`);
    await survivingLeader.node.propose(bytes("after the rejoin"));
    await until(() => rejoined.machine.commands.includes("after the rejoin"), 10_000, "the new n3 caught up");
    expect(rejoined.machine.commands).toEqual(survivingLeader.machine.commands);
    expect(fatal).toEqual([]);
  });

  it("founders that met during the founding probe still refuse a wiped founder", async () => {
    // Addresses known up front (as KEYRAFT_PEERS gives them): the founders authenticate each other
    // before they found, and the founding membership's entries must not forget what they recorded.
    const ids = ["n1", "n2", "n3"];
    const cluster = foundingClusterId(ids, clusterSecret);
    const ports = await Promise.all(ids.map(() => freePort()));
    const url = (id: string) => `ws://127.0.0.1:${ports[ids.indexOf(id)] ?? 0}`;
    const startFounder = (id: string): Member => {
      const machine = new RecordingMachine();
      const storage = new MemoryStorage({ keepEntries: 5 });
      const node = new RaftNode({
        id,
        voters: ids,
        storage,
        stateMachine: machine,
        transport: {
          secret: clusterSecret,
          port: ports[ids.indexOf(id)] ?? 0,
          peers: Object.fromEntries(ids.filter((peer) => peer !== id).map((peer) => [peer, url(peer)])),
          limits: { backoffBaseMs: 10, backoffMaxMs: 100 },
        },
        tickMs: 10,
        identity: { store: new MemoryIdentityStore(), cluster, foundingProbeMs: 2000 },
      });
      return { id, node, machine, storage };
    };
    const members = ids.map(startFounder);
    await Promise.all(members.map((m) => m.node.start()));
    running.push(...members);
    const leader = await leaderOf(members);
    await leader.node.propose(bytes("before the wipe"));
    const n3 = members.find((m) => m.id === "n3");
    if (n3 === undefined) throw new Error("no n3");
    await n3.node.stop();
    running = members.filter((m) => m !== n3);

    const wiped = startFounder("n3"); // the same address, an empty log, a new incarnation
    const refused = await wiped.node.start().catch((error: unknown) => error);
    expect(refused).toMatchObject({ code: "RAFT_ERR_IDENTITY_REFUSED" });
  });
});
