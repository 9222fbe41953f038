// Membership changes on the leader against a scripted Raft node: address first, then learner;
// idempotence; refusals; the promoter only promotes a connected learner that has caught up.
import type { NodeStatus } from "@keyraft/raft";
import { describe, expect, it } from "vitest";
import { decodeEntry } from "../src/cluster/entry-codec.js";
import {
  addNodeOnLeader,
  appliedAnswer,
  LearnerPromoter,
  learnerAppliedOf,
  notLeaderMessage,
  promoteAnswerMsMax,
  promoteLagMax,
  promoteSteadyPasses,
  removeNodeOnLeader,
  type MembershipRaft,
} from "../src/cluster/membership.js";

function fakeRaft(role: "leader" | "follower", voters: string[], learners: string[] = []) {
  const calls: string[] = [];
  const conf = { voters: [...voters], learners: [...learners] };
  const peers: NodeStatus["peers"] = {};
  const raft: MembershipRaft = {
    id: "n1",
    leader: () => (role === "leader" ? "n1" : "n2"),
    propose: async (data) => {
      const entry = decodeEntry(data);
      calls.push(entry.kind === "peer" ? `peer ${entry.id} ${entry.url}` : "command");
      return { index: calls.length };
    },
    status: () => ({
      id: "n1",
      role,
      term: 2,
      leader: role === "leader" ? "n1" : "n2",
      commit: 10,
      applied: 10,
      lastIndex: 200,
      snapshotIndex: 0,
      conf,
      peers,
    }),
    addLearner: async (id) => {
      calls.push(`addLearner ${id}`);
      conf.learners.push(id);
      return { index: 11 };
    },
    promote: async (id) => {
      calls.push(`promote ${id}`);
      conf.learners = conf.learners.filter((learner) => learner !== id);
      conf.voters.push(id);
      return { index: 12 };
    },
    remove: async (id) => {
      calls.push(`remove ${id}`);
      conf.voters = conf.voters.filter((voter) => voter !== id);
      return { index: 13 };
    },
  };
  return { raft, calls, conf, peers };
}

describe("membership on the leader", () => {
  it("replicates the address before adding the learner, and adding twice changes nothing more", async () => {
    const { raft, calls } = fakeRaft("leader", ["n1", "n2", "n3"]);
    await expect(addNodeOnLeader(raft, "n4", "ws://10.0.0.4:7001")).resolves.toMatchObject({ ok: true });
    expect(calls).toEqual(["peer n4 ws://10.0.0.4:7001", "addLearner n4"]);
    await addNodeOnLeader(raft, "n4", "ws://10.0.0.4:7001");
    expect(calls.filter((call) => call.startsWith("addLearner"))).toHaveLength(1);
  });

  it("answers 'retry' on a follower and refuses removing the last voter", async () => {
    expect(await addNodeOnLeader(fakeRaft("follower", ["n1", "n2"]).raft, "n4", "ws://x:1")).toMatchObject({
      ok: false,
      retry: true,
    });
    expect(await removeNodeOnLeader(fakeRaft("leader", ["n1"]).raft, "n1")).toMatchObject({
      ok: false,
      retry: false,
      message: expect.stringContaining("last voter"),
    });
  });

  it("removes a member, then drops its address; removing a non-member is a no-op", async () => {
    const { raft, calls } = fakeRaft("leader", ["n1", "n2", "n3"]);
    expect(await removeNodeOnLeader(raft, "n3")).toMatchObject({ ok: true, index: 13 });
    expect(calls).toEqual(["remove n3", "peer n3 null"]);
    expect(await removeNodeOnLeader(raft, "n9")).toMatchObject({ ok: true });
    expect(calls).toHaveLength(2);
  });

  /** Passes of `promoter` until one promotes or `passes` ran: the learner, and the passes it took. */
  async function passes(promoter: LearnerPromoter, count: number): Promise<[string | null, number]> {
    for (let pass = 1; pass <= count; pass++) {
      const promoted = await promoter.pass();
      if (promoted !== null) return [promoted, pass];
    }
    return [null, count];
  }

  it("promotes a learner only once it is connected and within promoteLagMax entries, promoteSteadyPasses passes in a row", async () => {
    const { raft, calls, peers, conf } = fakeRaft("leader", ["n1", "n2", "n3"], ["n4"]);
    const promoter = new LearnerPromoter(raft, async () => 200);
    peers["n4"] = { match: 0, lag: 200, state: "probe", connected: true, learner: true };
    expect(await passes(promoter, 5)).toEqual([null, 5]);
    peers["n4"] = {
      match: 200 - promoteLagMax - 1,
      lag: promoteLagMax + 1,
      state: "replicate",
      connected: true,
      learner: true,
    };
    expect(await passes(promoter, 5)).toEqual([null, 5]);
    peers["n4"] = { match: 190, lag: 10, state: "replicate", connected: false, learner: true };
    expect(await passes(promoter, 5)).toEqual([null, 5]);
    peers["n4"] = { match: 190, lag: 10, state: "replicate", connected: true, learner: true };
    expect(await passes(promoter, 5)).toEqual(["n4", promoteSteadyPasses]);
    expect(calls).toEqual(["promote n4"]);
    expect(conf.voters).toContain("n4");
  });

  it("promotes a learner only once its state machine applied what it holds and it answers in time, passes in a row", async () => {
    const { raft, calls, peers } = fakeRaft("leader", ["n1"], ["n2"]);
    // Its log holds the leader's snapshot at 190 and the entries after it: caught up by the log.
    peers["n2"] = { match: 190, lag: 10, state: "replicate", connected: true, learner: true };
    let applied: number | "unknown" | null = 0; // still installing the snapshot
    const asked: string[] = [];
    const promoter = new LearnerPromoter(raft, async (id) => {
      asked.push(id);
      return applied;
    });
    expect(await passes(promoter, 4)).toEqual([null, 4]);
    applied = 190 - promoteLagMax - 1;
    expect(await passes(promoter, 4)).toEqual([null, 4]);
    // Caught up, but one pass without an answer in time (busy): the count starts over.
    applied = 190 - promoteLagMax;
    expect(await passes(promoter, promoteSteadyPasses - 1)).toEqual([null, promoteSteadyPasses - 1]);
    applied = null;
    expect(await passes(promoter, 1)).toEqual([null, 1]);
    applied = 190;
    expect(await passes(promoter, promoteSteadyPasses - 1)).toEqual([null, promoteSteadyPasses - 1]);
    expect(calls).toEqual([]);
    expect(await passes(promoter, 1)).toEqual(["n2", 1]);
    expect(calls).toEqual(["promote n2"]);
    expect(new Set(asked)).toEqual(new Set(["n2"]));
  });

  it("promotes a learner of an earlier release, which does not say what it applied, by its log as before", async () => {
    const { raft, calls, peers } = fakeRaft("leader", ["n1"], ["n2"]);
    peers["n2"] = { match: 190, lag: 10, state: "replicate", connected: true, learner: true };
    expect(await passes(new LearnerPromoter(raft, async () => "unknown"), 5)).toEqual(["n2", promoteSteadyPasses]);
    expect(calls).toEqual(["promote n2"]);
  });

  it("a follower promotes nothing, and its count starts over when it leads again", async () => {
    const leading = fakeRaft("leader", ["n1"], ["n2"]);
    leading.peers["n2"] = { match: 190, lag: 10, state: "replicate", connected: true, learner: true };
    let role: "leader" | "follower" = "leader";
    const raft = { ...leading.raft, status: () => ({ ...leading.raft.status(), role }) };
    const promoter = new LearnerPromoter(raft, async () => 190);
    expect(await passes(promoter, promoteSteadyPasses - 1)).toEqual([null, promoteSteadyPasses - 1]);
    role = "follower";
    expect(await passes(promoter, 3)).toEqual([null, 3]);
    role = "leader";
    expect(await passes(promoter, promoteSteadyPasses)).toEqual(["n2", promoteSteadyPasses]);
  });

  it("a learner that has not started serving is not caught up, whatever it applied; once serving, its index counts", async () => {
    const { raft, calls, peers } = fakeRaft("leader", ["n1"], ["n2"]);
    peers["n2"] = { match: 190, lag: 10, state: "replicate", connected: true, learner: true };
    let serving = false;
    // The learner's own answer, read as the leader reads it (ClusterNode: appliedAnswer, then learnerAppliedOf).
    const promoter = new LearnerPromoter(raft, async (id) => learnerAppliedOf(id, appliedAnswer(id, serving, 190), 1));
    expect(appliedAnswer("n2", false, 190)).toEqual({ ok: false, retry: true, message: "n2 is starting" });
    expect(await passes(promoter, promoteSteadyPasses + 2)).toEqual([null, promoteSteadyPasses + 2]);
    expect(calls).toEqual([]);
    serving = true;
    expect(await passes(promoter, promoteSteadyPasses)).toEqual(["n2", promoteSteadyPasses]);
    expect(calls).toEqual(["promote n2"]);
  });

  it("reads a learner's answer: its index in time, null when slow, silent or starting, unknown from an earlier release", () => {
    expect(learnerAppliedOf("n2", { ok: true, index: 7 }, 1)).toBe(7);
    expect(learnerAppliedOf("n2", { ok: true, index: 7 }, promoteAnswerMsMax + 1)).toBeNull();
    expect(learnerAppliedOf("n2", null, 1)).toBeNull();
    expect(learnerAppliedOf("n2", appliedAnswer("n2", false, 7), 1)).toBeNull();
    expect(learnerAppliedOf("n2", { ok: false, retry: true, message: notLeaderMessage("n2") }, 1)).toBe("unknown");
  });
});
