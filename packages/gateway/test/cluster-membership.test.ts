// Membership changes on the leader against a scripted Raft node: address first, then learner;
// idempotence; refusals; the promoter only promotes a connected learner that has caught up.
import type { NodeStatus } from "@keyraft/raft";
import { describe, expect, it } from "vitest";
import { decodeEntry } from "../src/cluster/entry-codec.js";
import {
  addNodeOnLeader,
  promoteCaughtUpLearner,
  promoteLagMax,
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

  it("promotes a learner only once it is connected and within promoteLagMax entries", async () => {
    const { raft, calls, peers, conf } = fakeRaft("leader", ["n1", "n2", "n3"], ["n4"]);
    peers["n4"] = { match: 0, lag: 200, state: "probe", connected: true, learner: true };
    expect(await promoteCaughtUpLearner(raft)).toBeNull();
    peers["n4"] = {
      match: 200 - promoteLagMax - 1,
      lag: promoteLagMax + 1,
      state: "replicate",
      connected: true,
      learner: true,
    };
    expect(await promoteCaughtUpLearner(raft)).toBeNull();
    peers["n4"] = { match: 190, lag: 10, state: "replicate", connected: false, learner: true };
    expect(await promoteCaughtUpLearner(raft)).toBeNull();
    peers["n4"] = { match: 190, lag: 10, state: "replicate", connected: true, learner: true };
    expect(await promoteCaughtUpLearner(raft)).toBe("n4");
    expect(calls).toEqual(["promote n4"]);
    expect(conf.voters).toContain("n4");
  });
});
