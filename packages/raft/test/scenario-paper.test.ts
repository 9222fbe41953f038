// Scenario tests of the Raft paper's claims, driven message by message through InteractionEnv.
import { describe, expect, it } from "vitest";
import { RaftError } from "../src/core/errors.js";
import { clusterWithLogs, electLeader, entry, newCluster, queued, suffix, termAt } from "./scenario-helpers.js";

const five = ["n1", "n2", "n3", "n4", "n5"];

describe("commitment (Figure 8): earlier-term entries commit only through a current-term entry", () => {
  // n1 (leader of term 2) wrote 2/11 on n1 and n2; n5 (leader of term 3) wrote 3/11 on itself only.
  const logs = { n1: [entry(2, 11, "xy")], n2: [entry(2, 11, "xy")], n5: [entry(3, 11, "z")] };

  it("a leader does not commit an old-term entry stored on a majority, and a later leader may overwrite it", () => {
    const env = clusterWithLogs(five, logs, 3, { maxSizePerMsgBytes: 1 });
    env.isolated.add("n5");
    env.cutLinks.add("n1->n2");
    env.raw("n1").campaign();
    // Run round by round until n3 and n4 acknowledged 2/11 (sent alone: one entry per message).
    let rounds = 0;
    const acked = () => {
      const progress = env.raw("n1").status().progress;
      return (progress["n3"]?.match ?? 0) >= 11 && (progress["n4"]?.match ?? 0) >= 11;
    };
    while (!acked()) {
      for (const id of ["n1", "n3", "n4"]) env.processReady(id);
      env.deliver(["n1", "n3", "n4"]);
      expect(++rounds).toBeLessThan(20);
    }
    const n1 = env.raw("n1").status();
    expect(n1).toMatchObject({ role: "leader", term: 4 });
    // 2/11 is now on n1, n3, n4: a majority of 5. Its term is 2, not 4: it must not be committed.
    for (const id of ["n1", "n3", "n4"]) expect(termAt(env, id, 11)).toBe(2);
    expect(env.node("n3").storage.lastIndex()).toBe(11);
    expect(n1.commit).toBe(10);
    // n1 dies before its no-op 4/12 reaches anyone.
    env.queue = [];
    env.crash("n1");
    // n5 (last term 3) is more up to date than n2, n3, n4 (last term 2): it wins and overwrites 11.
    env.isolated.clear();
    env.cutLinks.clear();
    env.raw("n5").campaign(); // term 4: n3 and n4 already voted for n1 in term 4, so this one stalls
    env.stabilize(["n2", "n3", "n4", "n5"]);
    expect(env.raw("n5").status().role).toBe("candidate");
    env.raw("n5").campaign(); // term 5: n2, n3, n4 grant, since n5's last term (3) beats theirs (2)
    env.stabilize(["n2", "n3", "n4", "n5"]);
    expect(env.raw("n5").status().role).toBe("leader");
    for (const id of ["n2", "n3", "n4", "n5"]) expect(termAt(env, id, 11)).toBe(3);
    // Nobody ever applied 2/11: overwriting it was safe precisely because it was never committed.
    for (const node of env.nodes.values()) expect(node.applied.some((e) => e.index === 11 && e.term === 2)).toBe(false);
  });

  it("once a current-term entry is on a majority, the earlier entries before it commit too", () => {
    const env = clusterWithLogs(five, logs, 3, { maxSizePerMsgBytes: 1 });
    env.isolated.add("n5");
    env.raw("n1").campaign();
    env.stabilize(["n1", "n2", "n3", "n4"]);
    const n1 = env.raw("n1").status();
    expect(n1.commit).toBe(12);
    expect(env.node("n1").applied.map((e) => `${e.term}/${e.index}`)).toContain("2/11");
  });
});

describe("log matching: a leader repairs conflicting suffixes", () => {
  it("overwrites a follower's uncommitted entries from a stale term and backs up by whole terms", () => {
    const env = clusterWithLogs(
      ["n1", "n2", "n3"],
      { n1: suffix(3, 3), n2: suffix(3, 3), n3: suffix(3, 2, 2, 2, 2, 2) },
      3,
    );
    env.raw("n1").campaign();
    env.stabilize();
    for (const id of ["n1", "n2", "n3"]) {
      const storage = env.node(id).storage;
      expect(storage.lastIndex()).toBe(8);
      expect(storage.entries(7, 9, 1e9).map((e) => `${e.term}/${e.index}`)).toEqual(["3/7", "4/8"]);
    }
    // The rejection hint lets the leader skip the whole stale term-2 run in one round trip.
    const rejections = env.output.filter((line) => line.includes("send n3->n1 appResp") && line.includes("rejected"));
    expect(rejections).toHaveLength(1);
    expect(env.node("n3").applied.map((e) => `${e.term}/${e.index}`)).toEqual(expect.arrayContaining(["3/7", "4/8"]));
  });

  it("never truncates a committed entry (entries before commit are final)", () => {
    const env = newCluster(["n1", "n2", "n3"]);
    electLeader(env, "n1");
    env.raw("n1").propose(new TextEncoder().encode("p"));
    env.stabilize();
    const commit = env.raw("n2").status().commit;
    // A stale append that would conflict below commit is answered with the commit index, not applied.
    const term = env.raw("n2").status().term;
    env.raw("n2").step({
      type: "app",
      from: "n1",
      to: "n2",
      term,
      index: commit - 2,
      logTerm: termAt(env, "n2", commit - 2),
      entries: [],
      commit,
    });
    env.processReady("n2");
    expect(env.queue.at(-1)).toMatchObject({ type: "appResp", index: commit, reject: false });
  });
});

describe("elections", () => {
  it("at most one leader per term, and a node votes once per term", () => {
    const env = newCluster(["n1", "n2", "n3"], { preVote: false });
    env.raw("n1").campaign();
    env.raw("n2").campaign(); // same term 2: n3 gets two requests and grants only the first
    env.stabilize();
    const leaders = [...env.nodes.keys()].filter((id) => env.raw(id).status().role === "leader");
    expect(leaders.length).toBeLessThanOrEqual(1);
    expect(env.raw("n3").status().vote).toBe("n1");
  });

  it("a candidate with a stale log cannot win (election restriction, 5.4.1)", () => {
    const env = clusterWithLogs(["n1", "n2", "n3"], { n1: suffix(3, 2), n2: suffix(3, 2) }, 2);
    env.raw("n3").campaign();
    env.stabilize();
    expect(env.raw("n3").status().role).not.toBe("leader");
  });

  it("a node on a 1-node cluster elects itself at once", () => {
    const env = newCluster(["solo"]);
    electLeader(env, "solo");
    expect(env.raw("solo").status().role).toBe("leader");
    const proposal = env.raw("solo").propose(new Uint8Array([1]));
    env.stabilize();
    expect(env.raw("solo").status().commit).toBe(proposal.index);
  });
});

describe("pre-vote and check-quorum against a disruptive node", () => {
  function isolateAndTick(preVote: boolean, checkQuorum: boolean) {
    const env = newCluster(["n1", "n2", "n3"], { preVote, checkQuorum });
    electLeader(env, "n1");
    const termBefore = env.raw("n1").status().term;
    env.isolated.add("n3");
    for (let i = 0; i < 60; i++) {
      env.tick("n3", 1);
      env.tick("n1", 1);
      env.tick("n2", 1);
      env.stabilize();
    }
    env.isolated.clear();
    for (let i = 0; i < 5; i++) {
      for (const id of ["n1", "n2", "n3"]) env.tick(id, 1);
      env.stabilize();
    }
    env.takeOutput();
    return { env, termBefore };
  }

  it("without either, a rejoining partitioned node forces the leader to step down (term inflation)", () => {
    const { env, termBefore } = isolateAndTick(false, false);
    expect(env.raw("n1").status().term).toBeGreaterThan(termBefore + 1);
  });

  it("with pre-vote, the partitioned node never raises its term, and the leader keeps its term", () => {
    const { env, termBefore } = isolateAndTick(true, false);
    expect(env.raw("n1").status()).toMatchObject({ role: "leader", term: termBefore });
    expect(env.raw("n3").status()).toMatchObject({ role: "follower", term: termBefore, leader: "n1" });
  });

  it("with check-quorum, voters in their leader lease ignore vote requests of a higher term", () => {
    const env = newCluster(["n1", "n2", "n3"], { preVote: false, checkQuorum: true });
    electLeader(env, "n1");
    const term = env.raw("n1").status().term;
    // A removed or partitioned node asks for votes at a much higher term.
    for (const to of ["n1", "n2"]) {
      env.raw(to).step({
        type: "vote",
        from: "n3",
        to,
        term: term + 5,
        preVote: false,
        lastLogIndex: 100,
        lastLogTerm: term,
        transfer: false,
      });
    }
    expect(env.raw("n1").status()).toMatchObject({ role: "leader", term });
    expect(env.raw("n2").status()).toMatchObject({ role: "follower", term, leader: "n1" });
    env.processReady("n2");
    expect(queued(env, (m) => m.type === "voteResp")).toHaveLength(0);
  });

  it("without check-quorum, the same request deposes the leader (what the lease prevents)", () => {
    const env = newCluster(["n1", "n2", "n3"], { preVote: false, checkQuorum: false });
    electLeader(env, "n1");
    const term = env.raw("n1").status().term;
    env.raw("n1").step({
      type: "vote",
      from: "n3",
      to: "n1",
      term: term + 5,
      preVote: false,
      lastLogIndex: 100,
      lastLogTerm: term,
      transfer: false,
    });
    expect(env.raw("n1").status()).toMatchObject({ role: "follower", term: term + 5 });
  });

  it("check-quorum: a leader that cannot reach a quorum steps down", () => {
    const env = newCluster(["n1", "n2", "n3"]);
    electLeader(env, "n1");
    env.isolated.add("n1");
    for (let i = 0; i < 20; i++) {
      env.tick("n1", 1);
      env.stabilize(["n1"]);
    }
    expect(env.raw("n1").status().role).toBe("follower");
  });
});

describe("flow control", () => {
  it("keeps at most maxInflightMsgs appends unacknowledged per follower (at the limit, not past it)", () => {
    const env = newCluster(["n1", "n2", "n3"], { maxInflightMsgs: 3, maxSizePerMsgBytes: 1 });
    electLeader(env, "n1");
    env.cutLinks.add("n2->n1"); // n2's acknowledgements are lost
    for (let i = 0; i < 10; i++) env.raw("n1").propose(new Uint8Array([i]));
    env.processReady("n1");
    const toN2 = queued(env, (m) => m.type === "app" && m.to === "n2" && m.entries.length > 0);
    expect(toN2).toHaveLength(3);
    expect(env.raw("n1").status().progress["n2"]).toMatchObject({ state: "replicate", inflight: 3 });
    env.stabilize();
    // More proposals do not add appends for n2 while its window is full.
    env.raw("n1").propose(new Uint8Array([99]));
    env.processReady("n1");
    expect(queued(env, (m) => m.type === "app" && m.to === "n2" && m.entries.length > 0)).toHaveLength(0);
    // n3 acknowledged everything and is caught up (pipelining kept it going).
    expect(env.raw("n1").status().progress["n3"]?.match).toBe(env.raw("n1").status().lastIndex - 1);
    env.cutLinks.clear();
    for (let i = 0; i < 3; i++) {
      env.tick("n1", 1);
      env.stabilize();
    }
    expect(env.raw("n1").status().progress["n2"]?.match).toBe(env.raw("n1").status().lastIndex);
  });

  it("refuses proposals once the uncommitted tail exceeds maxUncommittedEntriesSize", () => {
    const env = newCluster(["n1", "n2", "n3"], { maxUncommittedEntriesSize: 10 });
    electLeader(env, "n1");
    env.isolated.add("n2");
    env.isolated.add("n3");
    env.raw("n1").propose(new Uint8Array(6));
    env.raw("n1").propose(new Uint8Array(4)); // exactly at the limit
    expect(() => env.raw("n1").propose(new Uint8Array(1))).toThrow(RaftError);
    try {
      env.raw("n1").propose(new Uint8Array(1));
    } catch (error) {
      expect(error).toMatchObject({ code: "RAFT_ERR_PROPOSAL_DROPPED" });
    }
  });

  it("refuses a command larger than maxEntryBytes", () => {
    const env = newCluster(["n1"], { maxEntryBytes: 8 });
    electLeader(env, "n1");
    expect(env.raw("n1").propose(new Uint8Array(8)).index).toBeGreaterThan(0);
    expect(() => env.raw("n1").propose(new Uint8Array(9))).toThrow(/RAFT_ERR_ENTRY_TOO_LARGE/);
  });
});

describe("snapshots to lagging followers", () => {
  it("a follower behind the leader's first index gets the snapshot in chunks and then the log", () => {
    const env = newCluster(["n1", "n2", "n3"], { maxSnapshotChunkBytes: 64, maxInflightMsgs: 2 });
    electLeader(env, "n1");
    env.isolated.add("n3");
    for (let i = 0; i < 5; i++) env.raw("n1").propose(new Uint8Array([i]));
    env.stabilize(["n1", "n2"]);
    const n1 = env.node("n1");
    n1.storage.createSnapshotSync(n1.app.appliedIndex, env.raw("n1").confState(), n1.app.encode(500));
    env.raw("n1").propose(new Uint8Array([42]));
    env.stabilize(["n1", "n2"]);
    env.isolated.clear();
    env.takeOutput();
    for (let i = 0; i < 3; i++) {
      env.tick("n1", 1);
      env.stabilize();
    }
    const chunks = env.output.filter((line) => line.includes("send n1->n3 snap"));
    expect(chunks.length).toBeGreaterThanOrEqual(Math.ceil(508 / 64));
    expect(env.node("n3").app.digest).toBe(n1.app.digest);
    expect(env.raw("n3").status().applied).toBe(env.raw("n1").status().applied);
  });

  it("a lost chunk is resent from the follower's report of the gap", () => {
    const env = newCluster(["n1", "n2", "n3"], { maxSnapshotChunkBytes: 32, maxInflightMsgs: 4 });
    electLeader(env, "n1");
    env.isolated.add("n3");
    env.raw("n1").propose(new Uint8Array([1]));
    env.stabilize(["n1", "n2"]);
    const n1 = env.node("n1");
    n1.storage.createSnapshotSync(n1.app.appliedIndex, env.raw("n1").confState(), n1.app.encode(200));
    env.isolated.clear();
    env.takeOutput();
    let dropped = 0;
    for (let round = 0; round < 40; round++) {
      if (round % 3 === 0) env.tick("n1", 1);
      for (const id of ["n1", "n2", "n3"]) env.processReady(id);
      const index = env.queue.findIndex((m) => m.type === "snap" && m.offset === 64);
      if (index >= 0 && dropped === 0) {
        env.queue.splice(index, 1); // lose the third chunk once
        dropped++;
      }
      env.deliver();
    }
    expect(dropped).toBe(1);
    expect(
      env.output.filter((line) => line.includes("send n1->n3 snap") && line.includes("offset=64 ")).length,
    ).toBeGreaterThanOrEqual(2);
    expect(env.node("n3").app.digest).toBe(n1.app.digest);
    expect(env.raw("n3").status().commit).toBe(env.raw("n1").status().commit);
  });
});
