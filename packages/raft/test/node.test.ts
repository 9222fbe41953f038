import { afterEach, describe, expect, it } from "vitest";
import { NotLeaderError, RaftNodeError } from "../src/errors.js";
import { RaftNode } from "../src/node.js";
import { MemoryStorage } from "../src/storage/memory-storage.js";
import { RecordingMachine } from "./fixtures/in-process-cluster.js";
import { heldSnapshot } from "./storage-conformance.js";
import {
  bytes,
  connect,
  leaderOf,
  startCluster,
  startMember,
  until,
  type Member,
} from "./fixtures/in-process-cluster.js";

let running: Member[] = [];

afterEach(async () => {
  await Promise.all(running.map((m) => m.node.stop()));
  running = [];
});

async function cluster(ids: string[], options: Parameters<typeof startCluster>[1] = {}): Promise<Member[]> {
  const members = await startCluster(ids, options);
  running.push(...members);
  return members;
}

function followers(members: Member[], leader: Member): Member[] {
  return members.filter((m) => m !== leader);
}

describe("RaftNode: three nodes in one process over loopback WebSockets", () => {
  it("elects one leader, replicates proposals, applies them in the same order everywhere", async () => {
    const members = await cluster(["n1", "n2", "n3"]);
    const leader = await leaderOf(members);
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => leader.node.propose(bytes(`cmd-${i}`))));
    const indexes = results.map((r) => r.index);
    expect(new Set(indexes).size).toBe(20);
    expect(leader.machine.commands).toHaveLength(20); // resolved means applied locally
    await until(() => members.every((m) => m.machine.commands.length === 20));
    for (const m of members) expect(m.machine.commands).toEqual(leader.machine.commands);
    expect([...leader.machine.commands].sort()).toEqual(Array.from({ length: 20 }, (_, i) => `cmd-${i}`).sort());
    const status = leader.node.status();
    expect(status).toMatchObject({ role: "leader", leader: leader.id, applied: status.commit });
    expect(Object.keys(status.peers).sort()).toEqual(
      followers(members, leader)
        .map((m) => m.id)
        .sort(),
    );
    await until(() => Object.values(leader.node.status().peers).every((p) => p.lag === 0 && p.connected));
  });

  it("a follower refuses proposals with NotLeaderError naming the leader", async () => {
    const members = await cluster(["n1", "n2", "n3"]);
    const leader = await leaderOf(members);
    const follower = followers(members, leader)[0];
    const error = await follower?.node.propose(bytes("x")).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NotLeaderError);
    expect(error).toMatchObject({ code: "RAFT_ERR_NOT_LEADER", leader: leader.id });
  });

  it("readIndex on a follower observes every write acknowledged before it", async () => {
    const members = await cluster(["n1", "n2", "n3"]);
    const leader = await leaderOf(members);
    const follower = followers(members, leader)[0];
    if (follower === undefined) throw new Error("no follower");
    for (let i = 0; i < 5; i++) {
      await leader.node.propose(bytes(`w${i}`));
      await follower.node.readIndex();
      expect(follower.machine.commands).toContain(`w${i}`);
    }
    await leader.node.readIndex();
  });

  it("snapshots every snapshotEntries applied entries and compacts storage", async () => {
    const members = await cluster(["n1", "n2", "n3"], { snapshotEntries: 20 });
    const leader = await leaderOf(members);
    for (let i = 0; i < 50; i++) await leader.node.propose(bytes(`s${i}`));
    await until(() => members.every((m) => m.node.status().snapshotIndex >= 40));
    for (const m of members) {
      expect(m.storage.firstIndex()).toBeGreaterThan(30); // compacted (keepEntries 5)
      const snapshotted = JSON.parse(new TextDecoder().decode((await heldSnapshot(m.storage)).data)) as string[];
      // The machine's state as of the snapshot index: a prefix of what it applied (bootstrap conf entries and no-ops carry no command).
      expect(snapshotted.length).toBeGreaterThanOrEqual(25);
      expect(m.machine.commands.slice(0, snapshotted.length)).toEqual(snapshotted);
    }
  });

  it("goes on committing, with no election, while the state machine takes its time to encode a snapshot", async () => {
    const members = await cluster(["n1", "n2", "n3"], { snapshotEntries: 20 }); // election timeout 100-200 ms
    const leader = await leaderOf(members);
    const term = leader.node.status().term;
    for (const member of members) member.machine.snapshotDelayMs = 3000;
    for (let i = 0; i < 25; i++) await leader.node.propose(bytes(`e${i}`)); // a snapshot is due: encoding starts
    const proposedWhileEncodingMs = Date.now();
    for (let i = 0; i < 10; i++) await leader.node.propose(bytes(`late${i}`));
    expect(Date.now() - proposedWhileEncodingMs).toBeLessThan(3000); // committed before the snapshot's bytes were ready
    expect(leader.node.status().snapshotIndex).toBe(0);
    await until(() => members.every((m) => m.node.status().snapshotIndex > 0), 10_000);
    expect(leader.node.status()).toMatchObject({ role: "leader", term });
    for (const m of members) {
      // The bytes are the state captured when the snapshot was due, not the state when they were written.
      const snapshotted = JSON.parse(new TextDecoder().decode((await heldSnapshot(m.storage)).data)) as string[];
      expect(snapshotted.some((command) => command.startsWith("late"))).toBe(false);
      expect(m.machine.commands.slice(0, snapshotted.length)).toEqual(snapshotted);
    }
  });

  it("a follower whose loop was busy for several election timeouts does not campaign on the missed ticks", async () => {
    const members = await cluster(["n1", "n2", "n3"]); // election timeout 100-200 ms
    const leader = await leaderOf(members);
    const term = leader.node.status().term;
    const slow = followers(members, leader)[0];
    if (slow === undefined) throw new Error("no follower");
    // Its disk stalls on the write of "stall" (the state machine no longer holds the loop up): the
    // leader's heartbeats and the ticks pile up meanwhile.
    const append = slow.storage.append.bind(slow.storage);
    slow.storage.append = async (entries, hardState, sync) => {
      if (entries.some((entry) => new TextDecoder().decode(entry.data) === "stall"))
        await new Promise((resolve) => setTimeout(resolve, 600));
      return append(entries, hardState, sync);
    };
    const before = slow.node.metrics();
    await leader.node.propose(bytes("stall"));
    await until(() => slow.machine.commands.includes("stall"));
    await new Promise((resolve) => setTimeout(resolve, 800));
    await leader.node.propose(bytes("after"));
    await until(() => slow.machine.commands.includes("after"));
    expect(slow.node.metrics()).toMatchObject({
      voteRequests: before.voteRequests,
      leaderChanges: before.leaderChanges,
    });
    expect(leader.node.status()).toMatchObject({ role: "leader", term });
  });

  it("a follower goes on acknowledging while its state machine is busy: the leader commits through it", async () => {
    // The read waits for the 3 s stall: with the fixture's 3 s deadline it raced it, and lost under
    // load in a clean-clone run.
    const members = await cluster(["n1", "n2", "n3"], { requestTimeoutMs: 10_000 });
    const leader = await leaderOf(members);
    const [busy, other] = followers(members, leader);
    if (busy === undefined || other === undefined) throw new Error("no followers");
    busy.machine.stallMs = 3000;
    await other.node.stop(); // from now on every commit needs busy's acknowledgement
    await leader.node.propose(bytes("stall"));
    await until(() => busy.machine.stalling, 5000, "busy applies the stall");
    let readDone = false;
    void busy.node.readIndex().then(() => (readDone = true));
    for (let i = 0; i < 5; i++) await leader.node.propose(bytes(`during${i}`));
    // Committed through busy while its state machine was still on "stall": its loop persisted and
    // acknowledged the appends; what it answers (a read, its applied index) waits for the state machine.
    expect(busy.machine.stalling).toBe(true);
    expect(busy.node.metrics().readyMsMax).toBeLessThan(busy.machine.stallMs);
    expect(readDone).toBe(false);
    expect(busy.node.status().applied).toBeLessThan(leader.node.status().commit);
    await until(() => readDone, 10_000, "busy's read");
    expect(busy.machine.commands.slice(-6)).toEqual(["stall", ...Array.from({ length: 5 }, (_, i) => `during${i}`)]);
    expect(busy.node.status().applied).toBeGreaterThanOrEqual(leader.node.status().applied);
  });

  it("a learner installing a snapshot slowly persists and acknowledges the entries that follow it meanwhile", async () => {
    const members = await cluster(["n1", "n2", "n3"], { snapshotEntries: 10 });
    const leader = await leaderOf(members);
    for (let i = 0; i < 25; i++) await leader.node.propose(bytes(`m${i}`)); // compacted: n4 needs the snapshot
    const machine = new RecordingMachine();
    machine.installDelayMs = 3000;
    const joiner = await startMember("n4", [], { snapshotEntries: 10, machine });
    running.push(joiner);
    connect([...members, joiner]);
    await leader.node.addLearner("n4");
    await until(() => machine.installing, 10_000, "the install starts");
    for (let i = 0; i < 5; i++) await leader.node.propose(bytes(`tail${i}`));
    const lastIndex = leader.node.status().lastIndex;
    await until(() => (leader.node.status().peers["n4"]?.lag ?? 1) === 0, 10_000, "n4 acknowledges the tail");
    expect(joiner.storage.lastIndex()).toBeGreaterThanOrEqual(lastIndex);
    expect(machine.installing).toBe(true); // all of it while the state machine was still installing
    expect(joiner.node.status().applied).toBe(0);
    await until(() => joiner.machine.commands.includes("tail4"), 10_000, "n4 applies the tail");
    expect(joiner.machine.commands).toEqual(leader.machine.commands);
    expect(joiner.machine.snapshotsInstalled).toBe(1);
  });

  it("hands leadership over with transferLeadership", async () => {
    const members = await cluster(["n1", "n2", "n3"]);
    const leader = await leaderOf(members);
    const target = followers(members, leader)[0];
    if (target === undefined) throw new Error("no follower");
    await leader.node.propose(bytes("before"));
    await until(() => target.machine.commands.length === 1);
    await leader.node.transferLeadership(target.id);
    const next = await leaderOf(members);
    expect(next.id).toBe(target.id);
    await next.node.propose(bytes("after"));
  });

  it("adds a learner that catches up, promotes it, then removes a voter", async () => {
    const members = await cluster(["n1", "n2", "n3"], { snapshotEntries: 10 });
    const leader = await leaderOf(members);
    for (let i = 0; i < 25; i++) await leader.node.propose(bytes(`m${i}`)); // compacted: n4 needs the snapshot
    const joiner = await startMember("n4", [], { snapshotEntries: 10 });
    running.push(joiner);
    connect([...members, joiner]);
    await leader.node.addLearner("n4");
    await until(() => joiner.machine.commands.length === 25, 10_000, "learner catch-up");
    expect(joiner.machine.commands).toEqual(leader.machine.commands);
    expect(leader.node.status().conf.learners).toEqual(["n4"]);
    await leader.node.promote("n4");
    expect(leader.node.status().conf.voters.sort()).toEqual(["n1", "n2", "n3", "n4"]);
    const removed = followers(members, leader)[0];
    if (removed === undefined) throw new Error("no follower");
    await leader.node.remove(removed.id);
    expect(leader.node.status().conf.voters).not.toContain(removed.id);
    await leader.node.propose(bytes("after-remove"));
    await until(() => joiner.machine.commands.includes("after-remove"));
  });

  it("rejects a proposal that cannot commit with TimeoutError; stop() rejects with ShuttingDown", async () => {
    const members = await cluster(["n1", "n2", "n3"], { requestTimeoutMs: 400 });
    const leader = await leaderOf(members);
    await Promise.all(followers(members, leader).map((m) => m.node.stop()));
    const lost = await leader.node.propose(bytes("lost")).catch((e: unknown) => e);
    expect(lost).toBeInstanceOf(RaftNodeError);
    expect((lost as RaftNodeError).code).toBeOneOf(["RAFT_ERR_TIMEOUT", "RAFT_ERR_NOT_LEADER"]);
    const pending = leader.node.readIndex().catch((e: unknown) => e);
    await leader.node.stop();
    expect(await pending).toMatchObject({ code: expect.stringMatching(/SHUTTING_DOWN|NOT_LEADER|TIMEOUT/) });
    expect(await leader.node.propose(bytes("late")).catch((e: unknown) => e)).toMatchObject({
      code: "RAFT_ERR_SHUTTING_DOWN",
    });
  });
});

describe("RaftNode lifecycle", () => {
  it("refuses requests before start() with RAFT_ERR_NOT_STARTED", async () => {
    const node = new RaftNode({
      id: "n1",
      storage: new MemoryStorage(),
      stateMachine: new RecordingMachine(),
      transport: { secret: "x".repeat(16), peers: {} },
    });
    expect(await node.propose(bytes("early")).catch((e: unknown) => e)).toMatchObject({ code: "RAFT_ERR_NOT_STARTED" });
    expect(() => node.status()).toThrow(/NOT_STARTED/);
    await node.stop();
  });

  it("stops on a failing state machine: onFatal is called, pending proposals are rejected", async () => {
    class Exploding extends RecordingMachine {
      override apply(entry: Parameters<RecordingMachine["apply"]>[0]): void {
        if (new TextDecoder().decode(entry.data) === "boom") throw new Error("the application failed");
        super.apply(entry);
      }
    }
    const fatal: unknown[] = [];
    const node = new RaftNode({
      id: "solo",
      voters: ["solo"],
      storage: new MemoryStorage(),
      stateMachine: new Exploding(),
      transport: { secret: "x".repeat(16), peers: {} },
      tickMs: 5,
      onFatal: (error) => fatal.push(error),
    });
    await node.start();
    await until(() => node.status().role === "leader");
    await node.propose(bytes("fine"));
    const outcome = await node.propose(bytes("boom")).catch((e: unknown) => e);
    expect(outcome).toMatchObject({ code: "RAFT_ERR_SHUTTING_DOWN" });
    expect(fatal).toHaveLength(1);
    expect(await node.propose(bytes("after")).catch((e: unknown) => e)).toMatchObject({
      code: "RAFT_ERR_SHUTTING_DOWN",
    });
    await node.stop();
  });
});
