import type { Role } from "./ready.js";
import type { ConfState, NodeId } from "./types.js";

export type ProgressState = "probe" | "replicate" | "snapshot";

/** The leader's view of one peer. */
export interface ProgressStatus {
  /** Highest index known to be replicated on the peer. */
  match: number;
  /** Next index to send. */
  next: number;
  state: ProgressState;
  /** Heard from within the last election timeout (check-quorum). */
  recentActive: boolean;
  /** Append messages in flight (replicate state), at most maxInflightMsgs. */
  inflight: number;
  /** Index of the snapshot being sent (snapshot state), else 0. */
  pendingSnapshot: number;
  learner: boolean;
}

/** A point-in-time copy of a node's state; never aliases internal structures. */
export interface Status {
  id: NodeId;
  role: Role;
  term: number;
  vote: NodeId;
  leader: NodeId;
  commit: number;
  applied: number;
  lastIndex: number;
  conf: ConfState;
  /** The node a leadership transfer is going to, "" if none. */
  leadTransferee: NodeId;
  /** Outgoing messages dropped because one Ready held messagesPerReadyMax already (Raft tolerates loss). */
  droppedMessages: number;
  /** Per peer (including self), only on the leader; empty otherwise. */
  progress: Record<NodeId, ProgressStatus>;
}
