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

/**
 * A learner's own word on what its state machine applied: its applied index, "unknown" when it
 * does not answer that question (a node of an earlier release, which was promoted by its log
 * alone), or null when it gave no answer within promoteAnswerMsMax (not at its normal speed).
 */
export type LearnerApplied = (id: NodeId) => Promise<number | "unknown" | null>;

/**
 * A member's answer to a leader's `applied`: its applied index once it serves; until then (its
 * start after catching up holds its loop for whole stretches at a million keys: the counters'
 * and credit journal's restore, the HTTP routes' compilation) that it is starting, which no
 * leader counts as caught up.
 */
export function appliedAnswer(id: NodeId, serving: boolean, appliedIndex: number): RpcResult {
  if (!serving) return { ok: false, retry: true, message: `${id} is starting` };
  return { ok: true, index: appliedIndex };
}

/** What a member that is not the leader answers a leader's op. */
export function notLeaderMessage(id: NodeId): string {
  return `${id} is not the leader`;
}

/**
 * A learner's answer to `applied`, taken `elapsedMs` to arrive (null: none), as LearnerApplied
 * reads it: too slow, no answer or a starting node are null; a node of an earlier release answers
 * an op it does not know as a follower answers any leader's op, "unknown".
 */
export function learnerAppliedOf(id: NodeId, answer: RpcResult | null, elapsedMs: number): number | "unknown" | null {
  if (answer === null || elapsedMs > promoteAnswerMsMax) return null;
  if (answer.ok) return answer.index;
  return answer.message === notLeaderMessage(id) ? "unknown" : null;
}

/** A learner must answer the leader's `applied` within this long to count as caught up in a pass. */
export const promoteAnswerMsMax = 50;
/** Passes in a row (promoteIntervalMs apart) a learner must be caught up in before it is promoted. */
export const promoteSteadyPasses = 3;

/**
 * The promoter (the leader runs a pass periodically). A learner is promoted once, in
 * promoteSteadyPasses passes in a row, its log was within promoteLagMax entries of the leader's,
 * its state machine had applied to within promoteLagMax of what its log holds, and it answered
 * within promoteAnswerMsMax. A node that has received a large snapshot is still installing it
 * (seconds of decoding at a million keys, with the garbage collector's pauses), and then applies
 * what followed: promoted then, a voter that slow to answer costs the leader its quorum (with two
 * voters, its leadership: the scale bench's join at a million keys lost it so, at the promotion
 * by the log alone and again 0.3 s after a promotion on one pass).
 */
export class LearnerPromoter {
  /** Passes in a row each learner was caught up in (learners only: at most the members). */
  private readonly steady = new Map<NodeId, number>();

  constructor(
    private readonly raft: MembershipRaft,
    private readonly learnerApplied: LearnerApplied,
  ) {}

  /** This node does not lead (now): the passes counted so far no longer count. */
  forget(): void {
    this.steady.clear();
  }

  /** One pass: the learner promoted, if any. */
  async pass(): Promise<NodeId | null> {
    const status = this.raft.status();
    if (status.role !== "leader") {
      this.forget();
      return null;
    }
    for (const id of this.steady.keys()) if (!status.conf.learners.includes(id)) this.steady.delete(id);
    for (const id of status.conf.learners) {
      const caughtUp = await this.caughtUp(id, status.peers[id]);
      const passes = caughtUp ? (this.steady.get(id) ?? 0) + 1 : 0;
      this.steady.set(id, passes);
      if (passes < promoteSteadyPasses) continue;
      try {
        await this.raft.promote(id);
        this.steady.delete(id);
        return id;
      } catch {
        return null; // another change pending, leadership lost: the next pass tries again
      }
    }
    return null;
  }

  private async caughtUp(id: NodeId, peer: NodeStatus["peers"][string] | undefined): Promise<boolean> {
    if (peer === undefined || !peer.connected || peer.match === 0 || peer.lag > promoteLagMax) return false;
    const applied = await this.learnerApplied(id);
    return applied === "unknown" || (applied !== null && applied >= peer.match - promoteLagMax);
  }
}
