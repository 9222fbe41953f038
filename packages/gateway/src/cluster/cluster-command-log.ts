// The cluster's CommandLog: every admin write (and every credit spend) is one Raft entry.
//
// append(command) tags the command with this process's origin and a sequence number, then gets
// it proposed: directly when this node leads, else forwarded to the leader over the cluster
// connection (the writes of one event-loop turn in one request, as one batch entry; the leader's
// proposer batches its own writes and the forwarded ones of a turn the same way). It resolves
// when this node applies the entry (the outcome is the apply outcome on
// this node, so the client reads its own write here), and rejects with a 503 v1 error when no
// leader takes it in time, or when the outcome is unknown (sent, but not seen applied in time).
//
// A write is sent again only when it was certainly not proposed (the receiver said it is not the
// leader, or no connection was open): a write is never applied twice because of a retry.
import type { CommandOutcome, KeyCommand } from "@keyraft/core";
import { RaftNodeError, type NodeId } from "@keyraft/raft";
import { decodeValue, replaysEqual } from "../store/codec.js";
import { closedError, overloadedError, unencodableError } from "../store/errors.js";
import type { CommandLog } from "../store/types.js";
import { encodeEntry } from "./entry-codec.js";
import { noLeaderError, outcomeUnknownError, shuttingDownError } from "./errors.js";
import { PendingMap } from "./pending.js";
import type { ClusterRpc, RpcResult } from "./rpc.js";
import { TurnBatcher } from "./turn-batcher.js";

/** What the command log needs from the Raft node. */
export interface RaftLink {
  readonly id: NodeId;
  /** The known leader, "" if none. */
  leader(): NodeId;
  propose(data: Uint8Array): Promise<{ index: number }>;
}

export interface ClusterCommandLogOptions {
  raft: RaftLink;
  rpc: Pick<ClusterRpc, "call">;
  /** This process's origin tag (see ReplicatedKeyMachine). */
  origin: string;
  /** Index of the last entry applied on this node. */
  appliedIndex(): number;
  /** Most writes waiting at once on this node; past it a write is refused (503, nothing changed). */
  pendingMax: number;
  /** Deadline of one write, from append to the local apply. */
  timeoutMs: number;
  /** Pause between attempts while no leader is known or it refused (an election in progress). */
  retryDelayMs: number;
  nowMs(): number;
}

const what = "cluster command log";

export class ClusterCommandLog implements CommandLog<KeyCommand, CommandOutcome> {
  private nextSeq = 1;
  private readonly waiting: PendingMap<CommandOutcome>;
  private readonly sweep: NodeJS.Timeout;
  /** Writes of one event-loop turn go to the leader in one request (one batch entry). */
  private readonly forwarder: TurnBatcher<RpcResult>;
  /** Writes sent to a leader whose answer did not say "not proposed"; every settle of a waiter removes its seq (so bounded by `waiting`). */
  private readonly maybeProposed = new Set<number>();
  private closed = false;

  constructor(private readonly options: ClusterCommandLogOptions) {
    this.waiting = new PendingMap(options.pendingMax, options.timeoutMs);
    this.forwarder = new TurnBatcher<RpcResult>(
      (leader, data) => options.rpc.call(leader, { op: "propose", data }, options.nowMs()),
      options.pendingMax,
      // Unreachable: every queued item is a waiting write, and `waiting` holds at most pendingMax.
      () => new Error("too many writes waiting to be forwarded"),
    );
    this.sweep = setInterval(() => this.expire(), Math.max(10, Math.min(100, options.timeoutMs / 10)));
    this.sweep.unref();
  }

  append(command: KeyCommand): Promise<CommandOutcome> {
    if (this.closed) return Promise.reject(closedError(what));
    if (this.waiting.full) return Promise.reject(overloadedError(what, this.options.pendingMax));
    const seq = this.nextSeq++;
    const data = encodeEntry({ kind: "command", origin: this.options.origin, seq, command });
    // Every node applies the decoded bytes: refuse what would not decode to the same command.
    if (!replaysEqual(command, (decodeValue(data) as unknown[])[3])) return Promise.reject(unencodableError(what));
    const nowMs = this.options.nowMs();
    const outcome = this.waiting.wait(seq, nowMs);
    void this.submit(seq, data, nowMs + this.options.timeoutMs);
    return outcome;
  }

  /** Called by the machine when an entry this process proposed is applied here. */
  onOwnApplied(seq: number, outcome: CommandOutcome): void {
    this.maybeProposed.delete(seq);
    this.waiting.resolve(seq, outcome);
  }

  appliedIndex(): number {
    return this.options.appliedIndex();
  }

  /** Forwarding requests sent and the writes they carried (their ratio is the batching factor). */
  get forwarded(): { requests: number; writes: number } {
    return { requests: this.forwarder.groupsSent, writes: this.forwarder.itemsSent };
  }

  get pending(): number {
    return this.waiting.size;
  }

  /** Rejects what is still waiting (the Raft node stops after this; nothing acknowledged is lost). */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.sweep);
    this.maybeProposed.clear();
    this.waiting.rejectAll(shuttingDownError);
  }

  private fail(seq: number, error: Error): void {
    this.maybeProposed.delete(seq);
    this.waiting.reject(seq, error);
  }

  /** Past the deadline: "outcome unknown" only for a write that may have been proposed; else nothing was changed. */
  private expire(): void {
    this.waiting.expire(this.options.nowMs(), (seq) => {
      const sent = this.maybeProposed.delete(seq);
      return sent
        ? outcomeUnknownError(`not applied on this node within ${this.options.timeoutMs} ms`)
        : noLeaderError(this.options.timeoutMs);
    });
  }

  /** Gets the entry proposed once; settles the waiter only on failure (success settles through the apply). */
  private async submit(seq: number, data: Uint8Array, deadlineMs: number): Promise<void> {
    const { raft } = this.options;
    while (this.waiting.has(seq)) {
      const leader = raft.leader();
      let result: RpcResult;
      if (leader === "") result = { ok: false, retry: true, message: "no leader is known" };
      else {
        this.maybeProposed.add(seq);
        if (leader === raft.id) result = await proposeLocally(raft, data);
        else {
          try {
            result = await this.forwarder.submit(leader, data);
          } catch (error) {
            this.fail(seq, outcomeUnknownError(`no answer from the leader ${leader}: ${(error as Error).message}`));
            return;
          }
        }
        if (!result.ok && result.retry) this.maybeProposed.delete(seq); // certainly not proposed
      }
      if (result.ok) return; // committed; the local apply resolves the waiter (or the deadline does)
      if (result.overloaded === true) {
        this.fail(seq, overloadedError(`${what} (leader ${leader})`, this.options.pendingMax));
        return;
      }
      if (!result.retry) {
        this.fail(seq, this.closed ? shuttingDownError() : outcomeUnknownError(result.message));
        return;
      }
      if (this.closed) return;
      if (this.options.nowMs() + this.options.retryDelayMs >= deadlineMs) {
        this.fail(seq, noLeaderError(this.options.timeoutMs));
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, this.options.retryDelayMs));
    }
  }
}

/** Proposes on this node (the leader) and classifies a failure: retry only when certainly not proposed. */
export async function proposeLocally(raft: RaftLink, data: Uint8Array): Promise<RpcResult> {
  try {
    const { index } = await raft.propose(data);
    return { ok: true, index };
  } catch (error) {
    return classifyProposeError(error);
  }
}

export function classifyProposeError(error: unknown): RpcResult {
  if (!(error instanceof RaftNodeError)) throw error;
  switch (error.code) {
    case "RAFT_ERR_NOT_LEADER":
    case "RAFT_ERR_PROPOSAL_DROPPED":
      return { ok: false, retry: true, message: error.message };
    case "RAFT_ERR_PENDING_FULL":
      return { ok: false, retry: false, overloaded: true, message: error.message };
    default:
      // Timeout, leadership lost, shutting down, entry too large: it may or may not commit.
      return { ok: false, retry: false, message: error.message };
  }
}
