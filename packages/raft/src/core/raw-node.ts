import { assert } from "./assert.js";
import { resolveConfig, type RaftConfig } from "./config.js";
import type { Message } from "./messages.js";
import { Raft, type ProposalId } from "./raft.js";
import type { Ready } from "./ready.js";
import type { Status } from "./status.js";
import type { ConfChange, ConfState, NodeId, RaftStorage } from "./types.js";

/**
 * The application's handle on one Raft node: a pure, single-threaded state machine.
 * Inputs: tick(), step(message), propose*(), readIndex(), transferLeadership(), report*().
 * Output: ready() batches, acknowledged by advance(ready). See the Ready contract in ready.ts.
 *
 * Membership changes are applied by the core itself when a conf entry is acknowledged as applied
 * (in advance()); the application only sees the conf entry pass by in committedEntries.
 */
export class RawNode {
  private readonly raft: Raft;
  private outstanding: Ready | null = null;

  constructor(config: RaftConfig, storage: RaftStorage) {
    this.raft = new Raft(resolveConfig(config), storage);
  }

  /** Advances logical time by one tick (election and heartbeat timers). */
  tick(): void {
    this.assertNoReadyOutstanding("tick");
    this.raft.tick();
  }

  /** Starts an election now (pre-vote first when enabled). No-op for a leader or a non-voter. */
  campaign(): void {
    this.assertNoReadyOutstanding("campaign");
    this.raft.campaignLocal();
  }

  /** Proposes a command. Returns where it will be committed if it is. Throws RaftError (e.g. RAFT_ERR_NOT_LEADER with the leader id). */
  propose(data: Uint8Array): ProposalId {
    this.assertNoReadyOutstanding("propose");
    return this.raft.propose(data);
  }

  /** Proposes a one-server membership change; throws RaftError when not leader or another change is pending. */
  proposeConfChange(change: ConfChange): ProposalId {
    this.assertNoReadyOutstanding("proposeConfChange");
    return this.raft.proposeConfChange(change);
  }

  /** Feeds a message received from a peer. Messages from unknown terms/peers are handled per Raft rules. */
  step(message: Message): void {
    this.assertNoReadyOutstanding("step");
    this.raft.step(message);
  }

  /**
   * Requests a linearizable read. The result appears in a later Ready's readStates with the same
   * context; the read is safe once the applied index reaches its index. Throws RAFT_ERR_READ_INDEX_DROPPED
   * when it cannot be queued (e.g. no known leader).
   */
  readIndex(context: Uint8Array): void {
    this.assertNoReadyOutstanding("readIndex");
    this.raft.readIndex(context);
  }

  /** Asks the leader to hand leadership to `to` (forwarded when called on a follower). */
  transferLeadership(to: NodeId): void {
    this.assertNoReadyOutstanding("transferLeadership");
    this.raft.transferLeadership(to);
  }

  /** The transport could not reach `id`: the leader slows down to probing it. */
  reportUnreachable(id: NodeId): void {
    this.assertNoReadyOutstanding("reportUnreachable");
    this.raft.reportUnreachable(id);
  }

  /** The transport failed (ok=false) or finished (ok=true) sending a snapshot to `id`. */
  reportSnapshot(id: NodeId, ok: boolean): void {
    this.assertNoReadyOutstanding("reportSnapshot");
    this.raft.reportSnapshot(id, ok);
  }

  hasReady(): boolean {
    assert(this.outstanding === null, "hasReady: a Ready is outstanding; call advance() first");
    return this.raft.hasReady();
  }

  /** Takes the next batch of work. Must be followed by advance(ready) before any other call. */
  ready(): Ready {
    assert(this.outstanding === null, "ready: a Ready is outstanding; call advance() first");
    const ready = this.raft.takeReady();
    this.outstanding = ready;
    return ready;
  }

  /** Acknowledges that `ready` was persisted, sent and applied per the Ready contract. */
  advance(ready: Ready): void {
    assert(this.outstanding === ready, "advance: not the outstanding Ready");
    this.outstanding = null;
    this.raft.advance(ready);
  }

  status(): Status {
    return this.raft.status();
  }

  /** The current membership (after all applied conf entries). */
  confState(): ConfState {
    return this.raft.confState();
  }

  /**
   * Indexes of the snapshots this node is sending to followers, ascending. A transfer reads the
   * snapshot it began with until it ends: the driver pins these in storage (SnapshotDataReader),
   * so a newer snapshot taken meanwhile does not delete the bytes under it. A read, allowed while a
   * Ready is outstanding.
   */
  snapshotsInTransfer(): number[] {
    return this.raft.snapshotsInTransfer();
  }

  private assertNoReadyOutstanding(method: string): void {
    assert(this.outstanding === null, `${method}: a Ready is outstanding; call advance() first`);
  }
}
