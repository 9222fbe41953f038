// Requests from a node to the leader over the cluster's authenticated connection (the Raft
// transport's application channel): forwarded admin writes and membership changes. At most one
// answer per request; a request that was not even queued (no open connection to the leader)
// answers `notSent`, so the caller knows it was not proposed and may try again.
import type { VerificationFilter, VerificationSeries } from "@keyraft/core";
import type { NodeId } from "@keyraft/raft";
import type { ForwardedSpendReply } from "../counters/credits/forward.js";
import type { CounterReply, CounterRequest } from "../counters/ratelimit/wire.js";
import { decodeValue, encodeValue } from "../store/codec.js";
import { PendingMap } from "./pending.js";

export type RpcRequest =
  | { op: "propose"; data: Uint8Array }
  | { op: "addNode"; id: NodeId; url: string }
  | { op: "removeNode"; id: NodeId }
  /** The leader's view of every member's progress (for a follower's status). */
  | { op: "progress" }
  /** This member's applied index (`index`): served by any member; the leader promotes a learner once it has applied what it holds. */
  | { op: "applied" }
  /** Cluster rate limits (counters/ratelimit): served by any member, not only the leader. */
  | { op: "counters"; m: CounterRequest }
  /** This member's verification analytics for a query (analytics/cluster-peers.ts): served by any member. */
  | { op: "analytics"; filter: VerificationFilter }
  /** A credit spend forwarded to the owner of a key's last credits (counters/credits): served by any member. */
  | { op: "credits"; keyId: string; cost: number };

export type RpcResult =
  | {
      ok: true;
      index: number;
      progress?: Record<NodeId, PeerProgress>;
      counters?: CounterReply;
      series?: VerificationSeries[];
      credits?: ForwardedSpendReply;
    }
  /** `retry`: certainly not applied (e.g. the receiver is not the leader), safe to send again. */
  | { ok: false; retry: boolean; message: string; overloaded?: boolean };

type Wire = { k: "req"; r: number; q: RpcRequest } | { k: "res"; r: number; s: RpcResult };

/** One member's replication progress as the leader sees it. */
export interface PeerProgress {
  match: number;
  lag: number;
  connected: boolean;
  state: string;
}

export interface AppChannel {
  /** Queues `payload` for `to` on an open connection; false when there is none (nothing sent). */
  send(to: NodeId, payload: Uint8Array): boolean;
}

export class ClusterRpc {
  private nextId = 1;
  private readonly answers: PendingMap<RpcResult>;
  private handler: ((from: NodeId, request: RpcRequest) => Promise<RpcResult>) | null = null;

  constructor(
    private readonly channel: AppChannel,
    options: { pendingMax: number; timeoutMs: number },
  ) {
    this.answers = new PendingMap(options.pendingMax, options.timeoutMs);
  }

  /** Serves requests from peers (only the leader accepts most of them; the handler decides). */
  serve(handler: (from: NodeId, request: RpcRequest) => Promise<RpcResult>): void {
    this.handler = handler;
  }

  call(to: NodeId, request: RpcRequest, nowMs: number): Promise<RpcResult> {
    if (this.answers.full)
      return Promise.resolve({
        ok: false,
        retry: false,
        overloaded: true,
        message: "too many requests waiting for the leader",
      });
    const id = this.nextId++;
    const answer = this.answers.wait(id, nowMs);
    if (!this.channel.send(to, encodeValue({ k: "req", r: id, q: request } satisfies Wire))) {
      this.answers.resolve(id, { ok: false, retry: true, message: `no open connection to ${to}` });
    }
    return answer;
  }

  /** Periodic: requests unanswered past the deadline settle as "no answer" (outcome unknown). */
  expire(nowMs: number): void {
    this.answers.expire(nowMs, () => new Error("no answer from the leader before the deadline"));
  }

  close(): void {
    this.answers.rejectAll(() => new Error("the node is shutting down"));
  }

  /** Called with every application payload received from an authenticated peer. */
  receive(from: NodeId, payload: Uint8Array): void {
    let wire: Wire;
    try {
      wire = decodeValue(payload) as Wire;
    } catch {
      return; // not ours: drop (peers are authenticated; this is a version mismatch, not an attack)
    }
    if (wire === null || typeof wire !== "object") return;
    if (wire.k === "res") {
      this.answers.resolve(wire.r, wire.s);
      return;
    }
    if (wire.k !== "req" || this.handler === null) return;
    const reply = (result: RpcResult) =>
      this.channel.send(from, encodeValue({ k: "res", r: wire.r, s: result } satisfies Wire));
    this.handler(from, wire.q).then(reply, (error: unknown) =>
      reply({ ok: false, retry: false, message: error instanceof Error ? error.message : String(error) }),
    );
  }
}
