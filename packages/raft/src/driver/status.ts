import type { Role } from "../core/ready.js";
import type { Status } from "../core/status.js";
import type { ConfState, NodeId } from "../core/types.js";

export interface PeerStatus {
  /** Highest log index known to be replicated on the peer (leader's view). */
  match: number;
  /** How many entries the peer is behind the leader's last index. */
  lag: number;
  state: "probe" | "replicate" | "snapshot";
  /** An authenticated transport connection is open. */
  connected: boolean;
  learner: boolean;
}

export interface NodeStatus {
  id: NodeId;
  role: Role;
  term: number;
  /** The known leader, "" if none. */
  leader: NodeId;
  commit: number;
  /** Last entry applied to the state machine on this node. */
  applied: number;
  lastIndex: number;
  /** Index of the latest snapshot held by storage. */
  snapshotIndex: number;
  conf: ConfState;
  /** Per other member, only on the leader (empty elsewhere). */
  peers: Record<NodeId, PeerStatus>;
}

export function buildNodeStatus(
  core: Status,
  applied: number,
  snapshotIndex: number,
  connected: (id: NodeId) => boolean,
): NodeStatus {
  const peers: Record<NodeId, PeerStatus> = {};
  for (const [id, progress] of Object.entries(core.progress)) {
    if (id === core.id) continue;
    peers[id] = {
      match: progress.match,
      lag: Math.max(0, core.lastIndex - progress.match),
      state: progress.state,
      connected: connected(id),
      learner: progress.learner,
    };
  }
  return {
    id: core.id,
    role: core.role,
    term: core.term,
    leader: core.leader,
    commit: core.commit,
    applied,
    lastIndex: core.lastIndex,
    snapshotIndex,
    conf: core.conf,
    peers,
  };
}
