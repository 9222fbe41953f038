// A member whose data directory was wiped must not found a cluster again (it could vote twice in a
// term): every data directory has an incarnation, peers remember it, the handshake checks it, and
// the member rejoins only as a new member through a membership change.
import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { freePort } from "../src/driver/free-port.js";
import { foundingClusterId, MemoryIdentityStore, PeerIdentities } from "../src/driver/peer-identity.js";
import { RaftNodeError } from "../src/errors.js";
import { RaftNode } from "../src/node.js";
import { IdentityFile } from "../src/storage/identity-file.js";
import { LevelStorage } from "../src/storage/level-storage.js";
import { MemoryStorage } from "../src/storage/memory-storage.js";
import { parseHandshake } from "../src/transport/handshake.js";
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
  const n2 = { cluster: "c1", incarnation: "aaaa" };
  const at = (term: number, lastIndex: number, vote = "") => ({ ...n2, durable: { term, vote, lastIndex } });
  const appResp = (term: number, index: number, reject = false) => ({ type: "appResp", term, index, reject });

  it("refuses a peer whose stated term is below a term it sent (pre-votes aside)", () => {
    const identities = new PeerIdentities(new MemoryIdentityStore(), "c1", "n1");
    expect(identities.check("n2", at(3, 10))).toBeNull();
    identities.observe("n2", "aaaa", { type: "heartbeatResp", term: 5 });
    identities.observe("n2", "aaaa", { type: "vote", term: 9, preVote: true }); // a term it has not adopted
    identities.observe("n2", "aaaa", { type: "voteResp", term: 9, preVote: true, reject: false });
    expect(identities.check("n2", at(5, 0))).toBeNull();
    expect(identities.check("n2", at(6, 0))).toBeNull();
    expect(identities.check("n2", at(4, 99))).toMatchObject({
      rolledBack: true,
      reason: expect.stringMatching(/older than what it already told this node \(its term is 4, it sent term 5\)/),
    });
    expect(identities.check("n2", n2)).toBeNull(); // states nothing (an earlier release): nothing to compare
  });

  it("refuses a peer whose log, in a term it held entries, ends before them; a later term may truncate", () => {
    const identities = new PeerIdentities(new MemoryIdentityStore(), "c1", "n1");
    expect(identities.check("n2", at(1, 0))).toBeNull();
    identities.observe("n2", "aaaa", appResp(4, 20));
    identities.observe("n2", "aaaa", appResp(4, 12)); // a late answer of the same term lowers nothing
    identities.observe("n2", "aaaa", appResp(4, 30, true)); // a rejection acknowledges nothing
    expect(identities.check("n2", at(4, 20))).toBeNull();
    expect(identities.check("n2", at(4, 19))).toMatchObject({ rolledBack: true });
    expect(identities.check("n2", at(5, 3))).toBeNull(); // a leader of term 5 may have truncated it
    identities.observe("n2", "aaaa", appResp(5, 2)); // and the mark of term 4 no longer counts
    expect(identities.check("n2", at(5, 2))).toBeNull();
    expect(identities.check("n2", at(4, 25))).toMatchObject({ rolledBack: true });
    // As leader it states its commit index, which its own log holds durably.
    identities.observe("n2", "aaaa", { type: "heartbeat", term: 6, commit: 9 });
    identities.observe("n2", "aaaa", { type: "app", term: 6, commit: 11 });
    expect(identities.check("n2", at(6, 11))).toBeNull();
    expect(identities.check("n2", at(6, 10))?.reason).toMatch(/its log ends at 10, it held 11 in term 6/);
  });

  it("refuses a peer that forgot the vote it granted this node in its current term", () => {
    const identities = new PeerIdentities(new MemoryIdentityStore(), "c1", "n1");
    expect(identities.check("n2", at(1, 0))).toBeNull();
    identities.observe("n2", "aaaa", { type: "voteResp", term: 7, preVote: false, reject: false });
    expect(identities.check("n2", at(7, 0, "n1"))).toBeNull();
    expect(identities.check("n2", at(8, 0, "n3"))).toBeNull(); // a later term, a new vote
    expect(identities.check("n2", at(7, 0, ""))).toMatchObject({ rolledBack: true });
    expect(identities.check("n2", at(7, 0, "n3"))?.reason).toMatch(/its vote in term 7 is "n3", it voted for n1/);
  });

  it("records marks for the incarnation it knows only, saves terms and votes at once and acknowledgements when flushed", () => {
    const store = new MemoryIdentityStore();
    const identities = new PeerIdentities(store, "c1", "n1");
    identities.observe("n2", "aaaa", appResp(3, 9)); // not authenticated yet: no record to attach it to
    expect(identities.check("n2", at(1, 0))).toBeNull();
    identities.observe("n2", "bbbb", appResp(3, 9)); // another incarnation's message
    expect(identities.check("n2", at(1, 0))).toBeNull();
    identities.observe("n2", "aaaa", appResp(3, 9));
    identities.observe("n2", "aaaa", appResp(3, 15));
    expect(new PeerIdentities(store, "c1", "n1").check("n2", at(3, 10))).toBeNull(); // 15 not saved yet
    expect(new PeerIdentities(store, "c1", "n1").check("n2", at(2, 10))).toMatchObject({ rolledBack: true });
    identities.flushMarks();
    expect(new PeerIdentities(store, "c1", "n1").check("n2", at(3, 10))).toMatchObject({ rolledBack: true });
    identities.forget("n2", 60); // removed (or added anew): its marks go with its incarnation
    expect(identities.check("n2", { ...at(1, 0), incarnation: "cccc" })).toBeNull();
  });

  it("records a peer's incarnation, refuses another one, and forgets it on a newer membership change only", () => {
    const store = new MemoryIdentityStore();
    const identities = new PeerIdentities(store, "c1");
    expect(identities.fresh).toBe(true);
    expect(identities.check("n2", { cluster: "c1", incarnation: "aaaa" })).toBeNull();
    expect(identities.check("n2", { cluster: "c1", incarnation: "aaaa" })).toBeNull();
    identities.observe("n2", "aaaa", { type: "heartbeatResp", term: 1 }); // it took part
    expect(identities.check("n2", { cluster: "c1", incarnation: "bbbb" })).toMatchObject({
      reason: expect.stringMatching(/data directory was replaced/),
      rolledBack: false,
    });
    expect(identities.check("n3", { cluster: "c2", incarnation: "cccc" })?.reason).toMatch(/belongs to cluster c2/);

    const reopened = new PeerIdentities(store, "c1"); // a restart keeps the records and the incarnation
    expect(reopened.fresh).toBe(false);
    expect(reopened.own).toEqual(identities.own);
    expect(reopened.check("n2", { cluster: "c1", incarnation: "bbbb" })).not.toBeNull();
    reopened.forget("n2", 40); // "remove n2" applied at index 40
    expect(reopened.check("n2", { cluster: "c1", incarnation: "bbbb" })).toBeNull();
    reopened.observe("n2", "bbbb", { type: "appResp", term: 2, index: 1 });
    reopened.forget("n2", 40); // replayed after a restart: the new record stays
    expect(reopened.check("n2", { cluster: "c1", incarnation: "aaaa" })).not.toBeNull();
  });

  it("a snapshot forgets the peers it no longer lists (their removal was never applied one by one)", () => {
    const identities = new PeerIdentities(new MemoryIdentityStore(), "c1");
    expect(identities.check("n2", { cluster: "c1", incarnation: "aaaa" })).toBeNull();
    expect(identities.check("n3", { cluster: "c1", incarnation: "bbbb" })).toBeNull();
    identities.observe("n2", "aaaa", { type: "heartbeatResp", term: 1 });
    identities.observe("n3", "bbbb", { type: "heartbeatResp", term: 1 });
    identities.forgetNonMembers({ voters: ["n1", "n2"], learners: [] }, 50);
    expect(identities.check("n3", { cluster: "c1", incarnation: "cccc" })).toBeNull(); // removed: forgotten
    expect(identities.check("n2", { cluster: "c1", incarnation: "dddd" })).not.toBeNull(); // still a member
    identities.forgetNonMembers({ voters: ["n1"], learners: [] }, 50); // not newer: ignored
    expect(identities.check("n2", { cluster: "c1", incarnation: "dddd" })).not.toBeNull();
  });

  it("lets a new incarnation that waits for admission replace one that never sent a Raft message", () => {
    const store = new MemoryIdentityStore();
    const identities = new PeerIdentities(store, "c1", "n1");
    const fresh = (incarnation: string, admitting: boolean) => ({
      cluster: "c1",
      incarnation,
      durable: { term: 0, vote: "", lastIndex: 0 },
      ...(admitting ? { admitting } : {}),
    });
    expect(identities.check("n2", at(0, 0))).toBeNull(); // the founding probe: a handshake, no message
    identities.observe("n2", "aaaa", { type: "vote", term: 1, preVote: true }); // a pre-vote is no act
    // Not waiting for admission (a joining node, or an earlier release): refused as before.
    expect(identities.check("n2", fresh("bbbb", false))).toMatchObject({
      reason: expect.stringMatching(/data directory was replaced/),
    });
    // Waiting for every founding peer's word, and the one it replaces never took part here: let in.
    expect(identities.check("n2", fresh("bbbb", true))).toBeNull();
    expect(store.load()?.peers["n2"]).toBe("bbbb"); // saved
    // Once the new one sent a message, a third is refused, admitting or not.
    identities.observe("n2", "bbbb", { type: "voteResp", term: 1, reject: false });
    expect(identities.check("n2", fresh("cccc", true))).toMatchObject({
      reason: expect.stringMatching(/data directory was replaced/),
    });
    // Frames of a replaced incarnation are not its current one's.
    expect(identities.isCurrent("n2", "bbbb")).toBe(true);
    expect(identities.isCurrent("n2", "aaaa")).toBe(false);
  });

  it("keeps a new data directory unadmitted until told, and counts the peers that accepted it across restarts", () => {
    const store = new MemoryIdentityStore();
    const identities = new PeerIdentities(store, "c1", "n1");
    expect(identities.admitted).toBe(false);
    identities.admitBy("n2");
    const reopened = new PeerIdentities(store, "c1", "n1");
    expect(reopened.admitted).toBe(false);
    expect([...reopened.admittedBy]).toEqual(["n2"]);
    reopened.admit();
    expect(new PeerIdentities(store, "c1", "n1").admitted).toBe(true);
    // A file of an earlier release says nothing of admission: it took part already.
    const legacy = new MemoryIdentityStore();
    legacy.save({ cluster: "c1", incarnation: "self", peers: {}, confIndex: 0 });
    expect(new PeerIdentities(legacy, "c1", "n1").admitted).toBe(true);
  });

  it("a file of the release before marks counts every peer it knows as having taken part", () => {
    const store = new MemoryIdentityStore();
    store.save({ cluster: "c1", incarnation: "self", peers: { n2: "aaaa" }, confIndex: 0 });
    const identities = new PeerIdentities(store, "c1", "n1");
    expect(identities.check("n2", { cluster: "c1", incarnation: "bbbb" })).toMatchObject({
      reason: expect.stringMatching(/data directory was replaced/),
    });
    // Its own incarnation, stating a fresh state, is not taken for a rolled-back one.
    expect(identities.check("n2", at(0, 0))).toBeNull();
    expect(identities.check("n3", { cluster: "c1", incarnation: "cccc" })).toBeNull(); // a peer it never knew
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

describe("the handshake's durable state", () => {
  it("is parsed when well formed, absent when not stated, and refused when malformed", () => {
    const hello = {
      k: "hello",
      v: 1,
      from: "n1",
      to: "n2",
      nonce: new Uint8Array(32),
      cluster: "c1",
      incarnation: "a",
    };
    expect(parseHandshake(hello)).not.toHaveProperty("durable");
    const durable = { term: 4, vote: "n3", lastIndex: 17 };
    expect(parseHandshake({ ...hello, durable })).toMatchObject({ durable });
    for (const bad of [
      { term: -1, vote: "", lastIndex: 0 },
      { term: 1.5, vote: "", lastIndex: 0 },
      { term: 1, vote: 7, lastIndex: 0 },
      { term: 1, vote: "x".repeat(129), lastIndex: 0 },
      { term: 1, vote: "" },
      [1, "", 2],
    ])
      expect(parseHandshake({ ...hello, durable: bad }), JSON.stringify(bad)).toBeNull();
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

  it("a member restarted on an older copy of its data directory is refused at start; the cluster keeps its leader", async () => {
    const ids = ["n1", "n2", "n3"];
    const cluster = foundingClusterId(ids, clusterSecret);
    const ports = await Promise.all(ids.map(() => freePort()));
    const root = mkdtempSync(join(tmpdir(), "keyraft-rollback-"));
    const dirOf = (id: string) => join(root, id);
    const start = async (id: string): Promise<Member> => {
      const machine = new RecordingMachine();
      const storage = await LevelStorage.open({ path: join(dirOf(id), "raft"), keepEntries: 5 });
      const node = new RaftNode({
        id,
        voters: ids,
        storage,
        stateMachine: machine,
        transport: {
          secret: clusterSecret,
          port: ports[ids.indexOf(id)] ?? 0,
          peers: Object.fromEntries(
            ids.filter((peer) => peer !== id).map((peer) => [peer, `ws://127.0.0.1:${ports[ids.indexOf(peer)] ?? 0}`]),
          ),
          limits: { backoffBaseMs: 10, backoffMaxMs: 100 },
        },
        tickMs: 10,
        identity: { store: new IdentityFile(join(dirOf(id), "IDENTITY.json")), cluster, foundingProbeMs: 2000 },
      });
      return { id, node, machine, storage };
    };
    try {
      const members = await Promise.all(ids.map(start));
      await Promise.all(members.map((m) => m.node.start()));
      running.push(...members);
      const leader = await leaderOf(members);
      await leader.node.propose(bytes("one"));
      const follower = members.find((m) => m !== leader);
      if (follower === undefined) throw new Error("no follower");
      await until(() => follower.machine.commands.includes("one"));

      // A copy of the follower's directory (a backup, a VM snapshot), taken while it is stopped.
      await follower.node.stop();
      running = running.filter((m) => m !== follower);
      cpSync(dirOf(follower.id), join(root, "copy"), { recursive: true });
      const again = await start(follower.id);
      await again.node.start();
      running.push(again);
      await leader.node.propose(bytes("two")); // acknowledged by the follower's directory, not by the copy
      await until(() => again.machine.commands.includes("two"));
      await again.node.stop();
      running = running.filter((m) => m !== again);
      const term = leader.node.status().term;

      // Restored from the copy: the same incarnation, without the entry it acknowledged.
      rmSync(dirOf(follower.id), { recursive: true });
      cpSync(join(root, "copy"), dirOf(follower.id), { recursive: true });
      const restored = await start(follower.id);
      const refused = await restored.node.start().catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(RaftNodeError);
      expect(refused).toMatchObject({ code: "RAFT_ERR_ROLLED_BACK" });
      expect((refused as Error).message).toMatch(/restored from an older copy/);
      expect(leader.node.transportStats().rollbackRefusals).toBeGreaterThan(0);
      expect(leader.node.status()).toMatchObject({ role: "leader", term });
      await restored.storage.close();
    } finally {
      await Promise.all(running.map((m) => m.node.stop()));
      running = [];
      rmSync(root, { recursive: true, force: true });
    }
  });
});
