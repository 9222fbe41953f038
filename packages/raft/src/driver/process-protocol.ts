// The control channel of a node process (node-process.ts): one JSON object per line. Requests on
// stdin, responses and events on stdout; logs go to stderr. Used by the real-process tests and the
// raft benchmark, and handy to poke at a cluster by hand.

import type { NodeId } from "../core/types.js";

/** How to start one node process (passed as JSON in argv[2]; the secret comes from the environment). */
export interface NodeProcessConfig {
  id: NodeId;
  /** LevelDB directory (created if missing). */
  dir: string;
  /** Listen port; 0 picks a free one (reported in the "started" event). */
  port: number;
  peers: Record<NodeId, string>;
  voters: NodeId[];
  tickMs?: number;
  electionTicks?: number;
  heartbeatTicks?: number;
  snapshotEntries?: number;
  keepEntries?: number;
  requestTimeoutMs?: number;
  /** "debug" | "info" | "warn" | "error"; default "warn". */
  logLevel?: string;
}

/** Environment variable carrying the cluster secret (never argv: argv is visible to every user). */
export const secretEnvVar = "KEYRAFT_CLUSTER_SECRET";

export type ControlRequest =
  | { op: "peers"; peers: Record<NodeId, string> }
  | { op: "propose"; data: string }
  | { op: "read" }
  | { op: "status" }
  /** The node's cumulative Ready-loop counters (NodeMetrics). */
  | { op: "metrics" }
  /** Event-loop delay since the previous loopDelay request (LoopDelay), then starts a new window. */
  | { op: "loopDelay" }
  | { op: "state" }
  | { op: "transfer"; to: NodeId }
  /** Runs `concurrency` proposers for `durationMs` on this node; reports commits and latencies. */
  | { op: "load"; concurrency: number; durationMs: number; payloadBytes: number }
  | { op: "stop" };

export interface MachineState {
  /** Commands applied. */
  count: number;
  /** FNV-1a over every applied command, in order: equal digests mean equal histories. */
  digest: number;
  /** Log index of the last applied command. */
  lastIndex: number;
  /** Snapshots installed (at start from local storage, or sent by the leader). */
  installs: number;
  /** Index of the last snapshot installed, 0 if none. */
  lastInstalledIndex: number;
}

export interface LoadResult {
  commits: number;
  errors: number;
  durationMs: number;
  p50Ms: number;
  p99Ms: number;
  /** Failed proposals by error code. */
  errorCodes: Record<string, number>;
  /** The leader's Ready-loop counters over the run (NodeMetrics deltas). */
  leader: Record<string, number>;
}

export type ControlResponse =
  | { id: number; ok: true; result: unknown }
  | { id: number; ok: false; error: { code: string; message: string; leader: NodeId } };

export interface StartedEvent {
  event: "started";
  id: NodeId;
  port: number;
  pid: number;
}

/** Event-loop delay of a node process over a window: how late a 1 ms timer fired (busy, or waiting for a CPU). */
export interface LoopDelay {
  p50Ms: number;
  p99Ms: number;
  meanMs: number;
}
