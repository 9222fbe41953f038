// Membership changes, run on the leader. Adding a node: its address is replicated first (an
// address-book entry, so every member can reach it), then it joins as a learner; the promoter
// makes every learner a voter once it has caught up (so a leader change mid-catch-up loses
// nothing: the next leader's promoter finishes the job). Removing: the configuration change, then
// the address-book entry (best effort: a leader that removed itself no longer leads).
import type { NodeId, NodeStatus } from "@keyraft/raft";
import { peersMax } from "./config.js";
import { encodeEntry } from "./entry-codec.js";
import { classifyProposeError, proposeLocally, type RaftLink } from "./cluster-command-log.js";
import type { RpcResult } from "./rpc.js";

export interface MembershipRaft extends RaftLink {
  status(): NodeStatus;
  addLearner(id: NodeId, url?: string): Promise<{ index: number }>;
  promote(id: NodeId): Promise<{ index: number }>;
  remove(id: NodeId): Promise<{ index: number }>;
}

/** A learner within this many entries of the leader's last index is promoted. */
export const promoteLagMax = 64;

export async function addNodeOnLeader(raft: MembershipRaft, id: NodeId, url: string): Promise<RpcResult> {
  const status = raft.status();
  if (status.role !== "leader") return { ok: false, retry: true, message: "not the leader" };
  if (status.conf.voters.includes(id)) return { ok: true, index: status.commit };
  const members = status.conf.voters.length + status.conf.learners.length;
  if (!status.conf.learners.includes(id) && members >= peersMax) {
    return {
      ok: false,
      retry: false,
      message: `the cluster already has ${members} members, the most it may have (${peersMax})`,
    };
  }
  const address = await proposeLocally(raft, encodeEntry({ kind: "peer", id, url }));
  if (!address.ok) return address;
  if (raft.status().conf.learners.includes(id)) return address;
  try {
    return { ok: true, index: (await raft.addLearner(id, url)).index };
  } catch (error) {
    return classifyProposeError(error);
  }
}

export async function removeNodeOnLeader(raft: MembershipRaft, id: NodeId): Promise<RpcResult> {
  const status = raft.status();
  if (status.role !== "leader") return { ok: false, retry: true, message: "not the leader" };
  const { voters, learners } = status.conf;
  if (!voters.includes(id) && !learners.includes(id)) return { ok: true, index: status.commit };
  if (voters.length === 1 && voters[0] === id)
    return { ok: false, retry: false, message: `${id} is the last voter; a cluster cannot remove its last member` };
  let index: number;
  try {
    index = (await raft.remove(id)).index;
  } catch (error) {
    return classifyProposeError(error);
  }
  if (id !== raft.id) await proposeLocally(raft, encodeEntry({ kind: "peer", id, url: null }));
  return { ok: true, index };
}

/** One pass of the promoter (the leader runs it periodically). Returns the learner promoted, if any. */
export async function promoteCaughtUpLearner(raft: MembershipRaft): Promise<NodeId | null> {
  const status = raft.status();
  if (status.role !== "leader") return null;
  for (const id of status.conf.learners) {
    const peer = status.peers[id];
    if (peer === undefined || !peer.connected || peer.match === 0 || peer.lag > promoteLagMax) continue;
    try {
      await raft.promote(id);
      return id;
    } catch {
      return null; // another change pending, leadership lost: the next pass tries again
    }
  }
  return null;
}
