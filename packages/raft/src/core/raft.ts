// The Raft protocol (Ongaro's dissertation; structure after etcd's raft.go): one `step` entry point,
// per-role handlers, `become*` transitions. Pure: no I/O, no clock, no global randomness.
import { assert, unreachable } from "./assert.js";
import { messagesPerReadyMax, pendingReadIndexMax, readStatesMax, type ResolvedConfig } from "./config.js";
import {
  applyConfChange,
  bootstrapTerm,
  decodeConfChange,
  encodeConfChange,
  validateConfChange,
} from "./confchange.js";
import { RaftError } from "./errors.js";
import { entryBytes, RaftLog } from "./log.js";
import { isLeaderMessage, type Message, type ReadyMessage, type SnapshotChunkMessage } from "./messages.js";
import { Progress } from "./progress.js";
import { committedIndex, hasQuorum, voteResult } from "./quorum.js";
import { ReadOnlyQueue } from "./read-only.js";
import type { Ready, ReadState, Role, SoftState } from "./ready.js";
import { SnapshotReceiver, snapshotBytesMax } from "./snapshot-receiver.js";
import type { Status } from "./status.js";
import type { ConfChange, ConfState, Entry, HardState, NodeId, RaftStorage, SnapshotInfo } from "./types.js";

/** The idle-resend timer of a snapshot transfer backs off up to this many election timeouts. */
const snapshotIdleTicksCeiling = 32;

/** Where a proposal was appended: it is committed iff the committed entry at `index` has `term`. */
export interface ProposalId {
  index: number;
  term: number;
}

type CampaignKind = "preElection" | "election" | "transfer";

type Outgoing = ReadyMessage extends infer M
  ? M extends ReadyMessage
    ? Omit<M, "from" | "term"> & { term?: number }
    : never
  : never;

export class Raft {
  readonly id: NodeId;
  private readonly config: ResolvedConfig;
  readonly log: RaftLog;

  term = 0;
  vote: NodeId = "";
  leader: NodeId = "";
  role: Role = "follower";
  conf: ConfState;

  /** Leader only: one Progress per member (self included). */
  private readonly progress = new Map<NodeId, Progress>();
  /** Leader only: the snapshot being streamed to each follower in snapshot state (its bytes stay in storage). */
  private readonly snapshotsSending = new Map<NodeId, SnapshotInfo>();
  private readonly votes = new Map<NodeId, boolean>();
  private readonly readOnly = new ReadOnlyQueue();
  /** Leader: reads that arrived before the first commit of this term (the commit index may be stale). */
  private deferredReads: { context: Uint8Array; from: NodeId }[] = [];
  private readonly snapshotReceiver = new SnapshotReceiver();

  private messages: ReadyMessage[] = [];
  private readStates: ReadState[] = [];
  private droppedReads: Uint8Array[] = [];
  /** Messages dropped because a Ready's outbox was full (Raft tolerates loss; reported in status). */
  private droppedMessages = 0;

  private electionElapsed = 0;
  private heartbeatElapsed = 0;
  private randomizedElectionTimeout = 0;
  leadTransferee: NodeId = "";
  /** Index of the latest conf entry proposed by this leader; a new change waits until it is applied. */
  private pendingConfIndex = 0;
  private uncommittedBytes = 0;
  /** Leader: new entries or a new commit index to broadcast when the next Ready is taken. */
  private broadcastPending = false;

  private prevSoftState: SoftState;
  private prevHardState: HardState;

  constructor(config: ResolvedConfig, storage: RaftStorage) {
    this.id = config.id;
    this.config = config;
    this.log = new RaftLog(storage);
    const { hardState, conf } = storage.initialState();
    this.conf = copyConf(conf);
    assert(hardState.commit >= this.log.committed || hardState.commit === 0, "hard state commit below snapshot");
    assert(hardState.commit <= this.log.lastIndex(), `hard state commit ${hardState.commit} beyond last index`);
    this.log.committed = Math.max(this.log.committed, hardState.commit);
    this.term = hardState.term;
    this.vote = hardState.vote;
    // The application restarts from the storage's snapshot unless it says it has applied more.
    const snapshotIndex = Math.max(this.log.applied, storage.snapshot().metadata.index);
    const applied = config.applied ?? snapshotIndex;
    assert(applied >= snapshotIndex && applied <= this.log.committed, `applied ${applied} outside [snapshot, commit]`);
    // initialState().conf is the membership as of the snapshot; later applied conf entries are replayed.
    this.replayConfChanges(snapshotIndex, applied);
    this.log.applied = applied;
    this.becomeFollower(this.term, "");
    const fresh = hardState.term === 0 && this.log.lastIndex() === 0 && this.log.firstIndex() === 1;
    if (fresh && config.voters.length > 0) this.bootstrap(config.voters, config.learners);
    this.prevSoftState = { leader: "", role: "follower" };
    this.prevHardState = { term: hardState.term, vote: hardState.vote, commit: hardState.commit };
  }

  /**
   * First boot of a founding member: the initial membership becomes conf entries 1..k of term 1,
   * committed by fiat. Every founding member writes the same entries (same voter order), so their
   * logs match, and a node that joins later learns the membership by replaying the log.
   */
  private bootstrap(voters: readonly NodeId[], learners: readonly NodeId[]): void {
    const changes: ConfChange[] = [
      ...voters.flatMap((node): ConfChange[] => [
        { type: "addLearner", node },
        { type: "promote", node },
      ]),
      ...learners.map((node): ConfChange => ({ type: "addLearner", node })),
    ];
    const entries = changes.map((change, i): Entry => ({
      term: bootstrapTerm,
      index: i + 1,
      type: "conf",
      data: encodeConfChange(change),
    }));
    this.becomeFollower(bootstrapTerm, "");
    this.log.append(entries);
    this.log.commitTo(entries.length);
    assert(this.conf.voters.length === 0, "bootstrap over an existing configuration");
  }

  /** Conf entries in (from, to] were applied before a restart: the membership must include them. */
  private replayConfChanges(from: number, to: number): void {
    for (let lo = from + 1; lo <= to;) {
      const entries = this.log.slice(lo, to + 1, this.config.maxCommittedSizePerReadyBytes);
      for (const entry of entries)
        if (entry.type === "conf") this.conf = applyConfChange(this.conf, decodeConfChange(entry.data));
      lo += entries.length;
    }
  }

  // ---- inputs ------------------------------------------------------------------------------

  tick(): void {
    switch (this.role) {
      case "follower":
      case "preCandidate":
      case "candidate":
        this.tickElection();
        return;
      case "leader":
        this.tickHeartbeat();
        return;
      default:
        unreachable(this.role);
    }
  }

  private tickElection(): void {
    this.electionElapsed++;
    if (this.promotable() && this.electionElapsed >= this.randomizedElectionTimeout) {
      this.electionElapsed = 0;
      this.hup();
    }
  }

  private tickHeartbeat(): void {
    this.heartbeatElapsed++;
    this.electionElapsed++;
    if (this.electionElapsed >= this.config.electionTicks) {
      this.electionElapsed = 0;
      if (this.config.checkQuorum && !this.quorumActive()) {
        this.config.logger.warn(
          { id: this.id, term: this.term },
          "raft: leader lost contact with a quorum; stepping down",
        );
        this.becomeFollower(this.term, "");
        return;
      }
      this.abortLeaderTransfer(); // a transfer that took a whole election timeout has failed
    }
    this.tickSnapshotTransfers();
    if (this.heartbeatElapsed >= this.config.heartbeatTicks) {
      this.heartbeatElapsed = 0;
      // A pending read's round rides on every heartbeat: if its first round lost acks, this one retries it.
      this.broadcastHeartbeat(this.readOnly.lastPendingContext());
    }
  }

  campaignLocal(): void {
    this.hup();
  }

  private hup(): void {
    if (this.role === "leader") return;
    this.campaign(this.config.preVote ? "preElection" : "election");
  }

  propose(data: Uint8Array): ProposalId {
    if (data.byteLength > this.config.maxEntryBytes) {
      throw new RaftError("RAFT_ERR_ENTRY_TOO_LARGE", `command of ${data.byteLength} bytes exceeds maxEntryBytes`);
    }
    return this.appendProposal("normal", data);
  }

  proposeConfChange(change: ConfChange): ProposalId {
    this.assertLeaderForProposal();
    if (this.pendingConfIndex > this.log.applied) {
      throw new RaftError("RAFT_ERR_CONF_CHANGE_PENDING", `conf entry ${this.pendingConfIndex} not yet applied`);
    }
    validateConfChange(this.conf, change);
    const proposal = this.appendProposal("conf", encodeConfChange(change));
    this.pendingConfIndex = proposal.index;
    return proposal;
  }

  private assertLeaderForProposal(): void {
    if (this.role !== "leader") throw new RaftError("RAFT_ERR_NOT_LEADER", `${this.id} is ${this.role}`, this.leader);
    if (this.leadTransferee !== "") {
      throw new RaftError(
        "RAFT_ERR_PROPOSAL_DROPPED",
        `leadership transfer to ${this.leadTransferee} in progress`,
        this.leader,
      );
    }
  }

  private appendProposal(type: Entry["type"], data: Uint8Array): ProposalId {
    this.assertLeaderForProposal();
    const size = data.byteLength;
    const limit = this.config.maxUncommittedEntriesSize;
    if (limit > 0 && this.uncommittedBytes > 0 && this.uncommittedBytes + size > limit) {
      throw new RaftError(
        "RAFT_ERR_PROPOSAL_DROPPED",
        "uncommitted log exceeds maxUncommittedEntriesSize",
        this.leader,
      );
    }
    const entry: Entry = { term: this.term, index: this.log.lastIndex() + 1, type, data };
    this.appendEntries([entry]);
    // Deferred to the next Ready: every proposal made until then travels in the same appends.
    this.broadcastPending = true;
    return { index: entry.index, term: entry.term };
  }

  readIndex(context: Uint8Array): void {
    if (this.role === "leader") {
      if (!this.handleReadIndex(this.id, context)) {
        throw new RaftError(
          "RAFT_ERR_READ_INDEX_DROPPED",
          "read index queue full or context already pending",
          this.leader,
        );
      }
      return;
    }
    if (this.leader === "") throw new RaftError("RAFT_ERR_READ_INDEX_DROPPED", "no known leader");
    this.send({ type: "readIndex", to: this.leader, context });
  }

  transferLeadership(to: NodeId): void {
    if (this.role === "leader") this.handleTransferLeader(to);
    else if (this.leader !== "") this.send({ type: "transferLeader", to: this.leader, transferee: to });
  }

  reportUnreachable(id: NodeId): void {
    if (this.role === "follower" && id === this.leader && id !== "") {
      // The transport lost the leader (its process died, or the link did): stop honouring its lease
      // and campaign after the random part of the election timeout only, [0, electionTicks) ticks
      // from now. Safe by pre-vote: a peer that still hears the leader keeps its lease and refuses.
      this.electionElapsed = Math.max(this.electionElapsed, this.config.electionTicks);
      return;
    }
    const pr = this.progress.get(id);
    if (this.role !== "leader" || pr === undefined) return;
    if (pr.state === "replicate") pr.becomeProbe();
  }

  reportSnapshot(id: NodeId, ok: boolean): void {
    const pr = this.progress.get(id);
    if (this.role !== "leader" || pr === undefined || pr.state !== "snapshot") return;
    if (!ok) pr.pendingSnapshot = 0;
    pr.becomeProbe();
    pr.probeSent = true; // wait for a heartbeat response before probing again
    this.snapshotsSending.delete(id);
  }

  // ---- step ----------------------------------------------------------------------------------

  step(m: Message): void {
    assert(m.to === this.id, `message for ${m.to} delivered to ${this.id}`);
    assert(m.term > 0 && m.from !== this.id, "wire messages carry a term and come from a peer");
    if (m.term > this.term) {
      if (m.type === "vote" && !m.transfer && this.inLease()) return; // a leader is alive: ignore disruption
      const keepsTerm = (m.type === "vote" && m.preVote) || (m.type === "voteResp" && m.preVote && !m.reject);
      if (!keepsTerm) this.becomeFollower(m.term, isLeaderMessage(m) ? m.from : "");
    } else if (m.term < this.term) {
      this.stepStale(m);
      return;
    }
    if (m.type === "vote") {
      this.handleVoteRequest(m);
      return;
    }
    switch (this.role) {
      case "follower":
        this.stepFollower(m);
        return;
      case "preCandidate":
      case "candidate":
        this.stepCandidate(m);
        return;
      case "leader":
        this.stepLeader(m);
        return;
      default:
        unreachable(this.role);
    }
  }

  /** A message from an older term. Tell a stale leader or pre-candidate about our term so it stops; drop the rest. */
  private stepStale(m: Message): void {
    if ((this.config.checkQuorum || this.config.preVote) && (m.type === "app" || m.type === "heartbeat")) {
      this.send({ type: "appResp", to: m.from, index: 0, reject: false, rejectHint: 0, logTerm: 0 });
    } else if (m.type === "vote" && m.preVote) {
      this.send({ type: "voteResp", to: m.from, preVote: true, reject: true });
    }
  }

  /** Check-quorum lease: we heard from a leader less than an election timeout ago. */
  private inLease(): boolean {
    return this.config.checkQuorum && this.leader !== "" && this.electionElapsed < this.config.electionTicks;
  }

  private handleVoteRequest(m: Extract<Message, { type: "vote" }>): void {
    const canVote =
      this.vote === m.from || (this.vote === "" && this.leader === "") || (m.preVote && m.term > this.term);
    if (canVote && this.log.isUpToDate(m.lastLogIndex, m.lastLogTerm)) {
      // A granted pre-vote answers in the candidate's future term so the pre-candidate counts it.
      this.send({ type: "voteResp", to: m.from, term: m.term, preVote: m.preVote, reject: false });
      if (!m.preVote) {
        assert(this.vote === "" || this.vote === m.from, "at most one vote per term");
        this.electionElapsed = 0;
        this.vote = m.from;
      }
      return;
    }
    this.send({ type: "voteResp", to: m.from, preVote: m.preVote, reject: true });
  }

  private stepFollower(m: Message): void {
    switch (m.type) {
      case "app":
      case "heartbeat":
      case "snap":
        this.electionElapsed = 0;
        this.leader = m.from;
        this.handleLeaderMessage(m);
        return;
      case "timeoutNow":
        this.campaign("transfer");
        return;
      case "readIndexResp":
        if (m.reject) this.addDroppedRead(m.context);
        else this.addReadState({ index: m.index, context: m.context });
        return;
      case "transferLeader":
        if (this.leader !== "") this.send({ type: "transferLeader", to: this.leader, transferee: m.transferee });
        return;
      case "readIndex":
        this.refuseRead(m.from, m.context); // we are not the leader (any more): the requester must not wait
        return;
      case "appResp":
      case "voteResp":
      case "heartbeatResp":
      case "snapResp":
      case "vote":
        return; // not for a follower (or stale)
      default:
        unreachable(m);
    }
  }

  private stepCandidate(m: Message): void {
    switch (m.type) {
      case "app":
      case "heartbeat":
      case "snap":
        // A leader exists in our term (or a later one, already adopted above): follow it.
        this.becomeFollower(m.term, m.from);
        this.handleLeaderMessage(m);
        return;
      case "voteResp":
        if (m.preVote === (this.role === "preCandidate")) this.recordVote(m.from, !m.reject);
        return;
      case "readIndex":
        this.refuseRead(m.from, m.context);
        return;
      case "timeoutNow":
      case "readIndexResp":
      case "appResp":
      case "heartbeatResp":
      case "snapResp":
      case "transferLeader":
      case "vote":
        return;
      default:
        unreachable(m);
    }
  }

  private handleLeaderMessage(m: Extract<Message, { type: "app" | "heartbeat" | "snap" }>): void {
    this.snapshotReceiver.resetUnless(m.from);
    switch (m.type) {
      case "app":
        this.handleAppend(m);
        return;
      case "heartbeat":
        this.log.commitTo(m.commit);
        this.send({ type: "heartbeatResp", to: m.from, context: m.context });
        return;
      case "snap":
        this.handleSnapshotChunk(m);
        return;
      default:
        unreachable(m);
    }
  }

  private handleAppend(m: Extract<Message, { type: "app" }>): void {
    if (m.index < this.log.committed) {
      this.send({ type: "appResp", to: m.from, index: this.log.committed, reject: false, rejectHint: 0, logTerm: 0 });
      return;
    }
    const lastNew = this.log.maybeAppend(m.index, m.logTerm, m.commit, m.entries);
    if (lastNew !== null) {
      this.send({ type: "appResp", to: m.from, index: lastNew, reject: false, rejectHint: 0, logTerm: 0 });
      return;
    }
    const hint = this.log.findConflictByTerm(Math.min(m.index, this.log.lastIndex()), m.logTerm);
    this.send({
      type: "appResp",
      to: m.from,
      index: m.index,
      reject: true,
      rejectHint: hint.index,
      logTerm: hint.term,
    });
  }

  private handleSnapshotChunk(m: SnapshotChunkMessage): void {
    const result = this.snapshotReceiver.accept(m);
    if (result === "tooLarge") {
      this.config.logger.warn(
        { id: this.id, term: this.term, bytes: m.totalBytes, max: snapshotBytesMax },
        "raft: the leader's snapshot is larger than this node can hold; it cannot catch up",
      );
      return;
    }
    if (typeof result === "number") {
      this.send({ type: "snapResp", to: m.from, snapshotIndex: m.metadata.index, nextOffset: result });
      return;
    }
    const { index, term } = result.metadata;
    if (index <= this.log.committed) {
      // Already have it (a duplicate final chunk): report how far we are.
    } else if (this.log.matchTerm(index, term)) {
      this.log.commitTo(index); // our log already contains the snapshot's last entry: fast-forward
    } else {
      this.log.restore(result);
      this.conf = copyConf(result.metadata.conf);
      this.config.logger.info(
        { id: this.id, term: this.term, index, bytes: result.data.byteLength },
        "raft: restored a snapshot from the leader",
      );
      this.send({ type: "appResp", to: m.from, index: this.log.lastIndex(), reject: false, rejectHint: 0, logTerm: 0 });
      return;
    }
    this.send({ type: "appResp", to: m.from, index: this.log.committed, reject: false, rejectHint: 0, logTerm: 0 });
  }

  // ---- leader ---------------------------------------------------------------------------------

  private stepLeader(m: Message): void {
    switch (m.type) {
      case "app":
      case "heartbeat":
      case "snap":
        return assert(false, `election safety: two leaders in term ${this.term} (${this.id}, ${m.from})`);
      case "appResp":
        this.handleAppendResponse(m);
        return;
      case "heartbeatResp":
        this.handleHeartbeatResponse(m);
        return;
      case "snapResp":
        this.handleSnapshotResponse(m);
        return;
      case "readIndex":
        if (!this.handleReadIndex(m.from, m.context)) this.refuseRead(m.from, m.context);
        return;
      case "transferLeader":
        this.handleTransferLeader(m.transferee);
        return;
      case "voteResp":
      case "timeoutNow":
      case "readIndexResp":
      case "vote":
        return;
      default:
        unreachable(m);
    }
  }

  private handleAppendResponse(m: Extract<Message, { type: "appResp" }>): void {
    const pr = this.progress.get(m.from);
    if (pr === undefined) return;
    pr.recentActive = true;
    if (m.reject) {
      const hint = m.logTerm > 0 ? this.log.findConflictByTerm(m.rejectHint, m.logTerm).index : m.rejectHint;
      if (pr.maybeDecrTo(m.index, hint)) {
        if (pr.state === "replicate") pr.becomeProbe();
        this.sendAppend(m.from, true);
      }
      return;
    }
    const wasPaused = pr.isPaused();
    if (!pr.maybeUpdate(m.index)) return;
    switch (pr.state) {
      case "probe":
        pr.becomeReplicate();
        break;
      case "snapshot":
        if (pr.match >= pr.pendingSnapshot) {
          this.snapshotsSending.delete(m.from);
          pr.becomeProbe();
          pr.becomeReplicate();
        }
        break;
      case "replicate":
        pr.inflights.freeLE(m.index);
        break;
      default:
        unreachable(pr.state);
    }
    if (this.maybeCommit())
      this.broadcastPending = true; // one commit notice per Ready, not per ack
    else if (wasPaused) this.sendAppend(m.from, true);
    while (this.sendAppend(m.from, false)) {
      // Pipelining: keep sending batches until caught up or the in-flight window is full.
    }
    if (m.from === this.leadTransferee && pr.match === this.log.lastIndex()) this.sendTimeoutNow(m.from);
  }

  private handleHeartbeatResponse(m: Extract<Message, { type: "heartbeatResp" }>): void {
    const pr = this.progress.get(m.from);
    if (pr === undefined) return;
    pr.recentActive = true;
    pr.probeSent = false;
    if (pr.state === "replicate" && pr.inflights.full()) pr.inflights.freeFirstOne();
    // In snapshot state nothing is resent here: the transfer has its own acknowledgements and timer
    // (handleSnapshotResponse, tickSnapshotTransfers); resending the window per heartbeat flooded the link.
    if (pr.state !== "snapshot" && pr.match < this.log.lastIndex()) this.sendAppend(m.from, true);
    if (m.context === null) return;
    for (const read of this.readOnly.ack(m.context, m.from, this.conf.voters)) {
      this.releaseRead(read.from, read.index, read.context);
    }
  }

  private handleSnapshotResponse(m: Extract<Message, { type: "snapResp" }>): void {
    const pr = this.progress.get(m.from);
    if (pr === undefined) return;
    pr.recentActive = true;
    if (pr.state !== "snapshot" || pr.pendingSnapshot !== m.snapshotIndex) return;
    const acked = pr.snapshotAckedOffset;
    if (m.nextOffset === acked) {
      // A gap: the chunk at `acked` was lost, and the follower drops chunks past a gap, so every
      // chunk after it in flight is lost too. Resend the window from there, once per gap: each of
      // those later chunks reports the same gap.
      if (pr.snapshotSentOffset > acked && pr.snapshotResentOffset !== acked)
        this.resendSnapshotFrom(pr, m.from, acked);
      return;
    }
    if (m.nextOffset < acked) {
      // The follower lost what it had (a restart, or a delayed chunk of an older transfer made it
      // start over): go back to where it is, once per offset (a reordered stale report costs one window).
      if (pr.snapshotResentOffset !== m.nextOffset) this.resendSnapshotFrom(pr, m.from, m.nextOffset);
      return;
    }
    if (m.nextOffset > pr.snapshotSentOffset) {
      pr.snapshotSentOffset = m.nextOffset; // it kept more of this snapshot from an earlier transfer: go on from there
      pr.snapshotAllSent = false;
    }
    pr.snapshotAckedOffset = m.nextOffset;
    pr.snapshotIdleTicks = 0;
    pr.snapshotIdleTicksMax = 0;
    pr.snapshotResentOffset = -1;
    this.sendSnapshotChunks(m.from);
  }

  /** Goes back to `offset` (the follower has exactly the bytes before it) and sends the window from there. */
  private resendSnapshotFrom(pr: Progress, to: NodeId, offset: number): void {
    pr.snapshotAckedOffset = offset;
    pr.snapshotSentOffset = offset;
    pr.snapshotAllSent = false;
    pr.snapshotResentOffset = offset;
    pr.snapshotIdleTicks = 0;
    this.sendSnapshotChunks(to);
  }

  /**
   * Leader, every tick: a transfer whose acknowledged offset has not moved for an election timeout
   * lost its chunks and every report of the gap (or the follower restarted): resend the window
   * from the acknowledged offset. At most one window per election timeout, and half as often after
   * each resend that brought no progress (a link slower than a window per timeout).
   */
  private tickSnapshotTransfers(): void {
    for (const [id, pr] of this.progress) {
      if (pr.state !== "snapshot") continue;
      pr.snapshotIdleTicks++;
      const limit = pr.snapshotIdleTicksMax === 0 ? this.config.electionTicks : pr.snapshotIdleTicksMax;
      if (pr.snapshotIdleTicks < limit) continue;
      pr.snapshotIdleTicksMax = Math.min(2 * limit, snapshotIdleTicksCeiling * this.config.electionTicks);
      this.resendSnapshotFrom(pr, id, pr.snapshotAckedOffset);
    }
  }

  /** Commits the highest index on a quorum, but only an entry of the current term (Figure 8). */
  private maybeCommit(): boolean {
    const index = committedIndex(this.conf.voters, (id) => this.progress.get(id)?.match ?? 0);
    const committed = this.log.maybeCommit(index, this.term);
    if (committed) this.releaseDeferredReads();
    return committed;
  }

  private appendEntries(entries: Entry[]): void {
    assert(this.role === "leader", "only a leader appends its own entries");
    // The leader's own match advances in advance(), once these entries are persisted: its appends
    // go out before (or while) it writes them (Ready.messagesBeforePersist), so counting itself now
    // could commit an entry that only one disk holds.
    this.log.append(entries);
    for (const entry of entries) this.uncommittedBytes += entryBytes(entry);
  }

  /** Sends the next append to `to` if flow control allows. Returns whether a message went out. */
  private sendAppend(to: NodeId, sendIfEmpty: boolean): boolean {
    const pr = this.progress.get(to);
    if (pr === undefined || to === this.id || pr.isPaused()) return false;
    const prevIndex = pr.next - 1;
    const prevTerm = this.log.term(prevIndex);
    let entries: Entry[] | null = null;
    if (prevTerm !== null && prevIndex >= this.log.firstIndex() - 1) {
      entries = this.log.slice(pr.next, this.log.lastIndex() + 1, this.config.maxSizePerMsgBytes);
    }
    if (prevTerm === null || entries === null) {
      this.startSnapshot(to, pr);
      return false;
    }
    if (entries.length === 0 && !sendIfEmpty) return false;
    this.send({ type: "app", to, index: prevIndex, logTerm: prevTerm, entries, commit: this.log.committed });
    pr.commitSent = this.log.committed;
    const last = entries[entries.length - 1];
    pr.sentEntries(last?.index ?? prevIndex, entries.length);
    return true;
  }

  private startSnapshot(to: NodeId, pr: Progress): void {
    const snapshot = this.log.snapshot();
    assert(snapshot.metadata.index >= this.log.firstIndex() - 1, "storage snapshot must cover the compacted log");
    assert(snapshot.metadata.index > 0, "a compacted log needs a snapshot");
    pr.becomeSnapshot(snapshot.metadata.index);
    this.snapshotsSending.set(to, snapshot);
    this.sendSnapshotChunks(to);
  }

  /**
   * Streams chunks [acked, ...) of the snapshot, keeping at most maxInflightMsgs chunks unacknowledged.
   * Chunks travel in order on a healthy link; a lost chunk is resent on the next heartbeat response.
   */
  private sendSnapshotChunks(to: NodeId): void {
    const pr = this.progress.get(to);
    const snapshot = this.snapshotsSending.get(to);
    if (pr === undefined || snapshot === undefined) return;
    const total = snapshot.totalBytes;
    const windowBytes = this.snapshotWindowBytes();
    let offset = Math.min(pr.snapshotSentOffset, total);
    if (pr.snapshotAllSent && offset === total) return; // everything is in flight; wait for acks or a retransmit
    // Never more than the window past the acknowledged offset: the transport's per-peer queue is
    // sized to hold it (RaftNode checks), so flow control, not the queue, decides what waits.
    while (!(pr.snapshotAllSent && offset === total) && offset - pr.snapshotAckedOffset < windowBytes) {
      offset = this.sendSnapshotChunk(to, offset);
      pr.snapshotSentOffset = offset;
      pr.snapshotAllSent = offset === total;
    }
    assert(
      pr.snapshotSentOffset - pr.snapshotAckedOffset <= windowBytes + this.config.maxSnapshotChunkBytes,
      "snapshot window overrun",
    );
  }

  /** Bytes of snapshot data allowed unacknowledged per follower: the byte bound, at most maxInflightMsgs chunks, at least one. */
  private snapshotWindowBytes(): number {
    const chunkBytes = this.config.maxSnapshotChunkBytes;
    return Math.max(
      chunkBytes,
      Math.min(this.config.maxSnapshotInflightBytes, chunkBytes * this.config.maxInflightMsgs),
    );
  }

  /**
   * Sends the chunk of the snapshot being sent to `to` that starts at `offset`; returns the offset
   * after it. The chunk goes out as a reference: the driver reads its bytes from storage.
   */
  private sendSnapshotChunk(to: NodeId, offset: number): number {
    const snapshot = this.snapshotsSending.get(to);
    assert(snapshot !== undefined, "snapshot chunk without a snapshot being sent");
    const total = snapshot.totalBytes;
    assert(offset >= 0 && offset <= total, "snapshot chunk offset out of range");
    const end = Math.min(offset + this.config.maxSnapshotChunkBytes, total);
    this.send({ type: "snapRef", to, metadata: snapshot.metadata, offset, totalBytes: total, length: end - offset });
    return end;
  }

  /** Sends every follower what it lacks (or an empty append carrying the commit index), filling its window. */
  private broadcastAppend(): void {
    for (const [id, pr] of this.progress) {
      if (id === this.id || !this.sendAppend(id, pr.commitSent < this.log.committed)) continue;
      while (this.sendAppend(id, false)) {
        // Pipelining: more batches while the in-flight window allows.
      }
    }
  }

  private broadcastHeartbeat(context: Uint8Array | null): void {
    for (const [id, pr] of this.progress) {
      if (id === this.id) continue;
      const commit = Math.min(pr.match, this.log.committed);
      this.send({ type: "heartbeat", to: id, commit, context });
    }
  }

  private quorumActive(): boolean {
    const active = new Set<NodeId>([this.id]);
    for (const [id, pr] of this.progress) {
      if (pr.recentActive) active.add(id);
      if (id !== this.id) pr.recentActive = false;
    }
    return hasQuorum(this.conf.voters, active);
  }

  /** Returns false when the read could not be queued. */
  private handleReadIndex(from: NodeId, context: Uint8Array): boolean {
    if (this.conf.voters.length === 1 && this.conf.voters[0] === this.id) {
      this.releaseRead(from, this.log.committed, context);
      return true;
    }
    if (this.log.term(this.log.committed) !== this.term) {
      // Our commit index may lag the true one until an entry of our term commits (dissertation 6.4).
      if (this.deferredReads.length + this.readOnly.size() >= pendingReadIndexMax) return false;
      this.deferredReads.push({ context, from });
      return true;
    }
    const round = this.readOnly.add(this.log.committed, context, from, this.id);
    if (round === null) return false;
    this.broadcastHeartbeat(round);
    return true;
  }

  /** Tells a follower its forwarded read will not be answered (etcd would let it time out). */
  private refuseRead(to: NodeId, context: Uint8Array): void {
    this.send({ type: "readIndexResp", to, index: 0, context, reject: true });
  }

  private releaseDeferredReads(): void {
    if (this.deferredReads.length === 0 || this.log.term(this.log.committed) !== this.term) return;
    const deferred = this.deferredReads;
    this.deferredReads = [];
    for (const read of deferred) this.handleReadIndex(read.from, read.context);
  }

  private releaseRead(from: NodeId, index: number, context: Uint8Array): void {
    if (from === this.id) this.addReadState({ index, context });
    else this.send({ type: "readIndexResp", to: from, index, context, reject: false });
  }

  private addReadState(read: ReadState): void {
    if (this.readStates.length < readStatesMax) this.readStates.push(read);
  }

  private addDroppedRead(context: Uint8Array): void {
    if (this.droppedReads.length < readStatesMax) this.droppedReads.push(context);
  }

  private handleTransferLeader(to: NodeId): void {
    if (to === this.id || !this.conf.voters.includes(to) || to === this.leadTransferee) return;
    this.abortLeaderTransfer();
    this.electionElapsed = 0; // the transfer must finish within one election timeout
    this.leadTransferee = to;
    const pr = this.progress.get(to);
    if (pr !== undefined && pr.match === this.log.lastIndex()) this.sendTimeoutNow(to);
    else this.sendAppend(to, true);
  }

  private sendTimeoutNow(to: NodeId): void {
    this.send({ type: "timeoutNow", to });
  }

  private abortLeaderTransfer(): void {
    this.leadTransferee = "";
  }

  // ---- elections ------------------------------------------------------------------------------

  private promotable(): boolean {
    return this.conf.voters.includes(this.id);
  }

  private campaign(kind: CampaignKind): void {
    if (!this.promotable() || this.hasUnappliedConfChanges()) return;
    let voteTerm: number;
    if (kind === "preElection") {
      this.becomePreCandidate();
      voteTerm = this.term + 1;
    } else {
      this.becomeCandidate();
      voteTerm = this.term;
    }
    const lastLogIndex = this.log.lastIndex();
    const lastLogTerm = this.log.lastTerm();
    for (const id of this.conf.voters) {
      if (id === this.id) continue;
      const preVote = kind === "preElection";
      this.send({
        type: "vote",
        to: id,
        term: voteTerm,
        preVote,
        lastLogIndex,
        lastLogTerm,
        transfer: kind === "transfer",
      });
    }
    this.recordVote(this.id, true);
  }

  private recordVote(from: NodeId, granted: boolean): void {
    if (!this.votes.has(from)) this.votes.set(from, granted);
    const result = voteResult(this.conf.voters, this.votes);
    switch (result) {
      case "won":
        if (this.role === "preCandidate") this.campaign("election");
        else this.becomeLeader();
        return;
      case "lost":
        this.becomeFollower(this.term, "");
        return;
      case "pending":
        return;
      default:
        unreachable(result);
    }
  }

  private hasUnappliedConfChanges(): boolean {
    for (let lo = this.log.applied + 1; lo <= this.log.committed;) {
      const lowest = Math.max(lo, this.log.firstIndex());
      const entries = this.log.slice(lowest, this.log.committed + 1, this.config.maxCommittedSizePerReadyBytes);
      if (entries.some((entry) => entry.type === "conf")) return true;
      lo = lowest + entries.length;
    }
    return false;
  }

  private reset(term: number): void {
    assert(term >= this.term, `term must not go back (${this.term} -> ${term})`);
    if (term !== this.term) {
      this.term = term;
      this.vote = "";
    }
    this.leader = "";
    this.electionElapsed = 0;
    this.heartbeatElapsed = 0;
    this.randomizedElectionTimeout = this.config.electionTicks + this.config.random.intBelow(this.config.electionTicks);
    this.abortLeaderTransfer();
    this.votes.clear();
    this.progress.clear();
    this.snapshotsSending.clear();
    this.readOnly.clear();
    this.deferredReads = [];
    this.pendingConfIndex = 0;
    this.uncommittedBytes = 0;
    this.broadcastPending = false;
  }

  private becomeFollower(term: number, leader: NodeId): void {
    if (this.role === "leader") this.config.logger.info({ id: this.id, term, leader }, "raft: leader stepping down");
    this.reset(term);
    this.leader = leader;
    this.role = "follower";
  }

  private becomePreCandidate(): void {
    assert(this.role !== "leader", "a leader cannot become a pre-candidate");
    // Pre-vote changes neither term nor vote: a partitioned node cannot disrupt on rejoin.
    this.votes.clear();
    this.leader = "";
    this.role = "preCandidate";
  }

  private becomeCandidate(): void {
    assert(this.role !== "leader", "a leader cannot become a candidate");
    this.reset(this.term + 1);
    this.vote = this.id;
    this.role = "candidate";
  }

  private becomeLeader(): void {
    assert(this.role === "candidate", "only a candidate becomes leader");
    this.reset(this.term);
    this.leader = this.id;
    this.role = "leader";
    this.config.logger.info({ id: this.id, term: this.term, lastIndex: this.log.lastIndex() }, "raft: became leader");
    const next = this.log.lastIndex() + 1;
    for (const id of this.conf.voters) this.progress.set(id, new Progress(next, this.config.maxInflightMsgs, false));
    for (const id of this.conf.learners) this.progress.set(id, new Progress(next, this.config.maxInflightMsgs, true));
    const self = this.progress.get(this.id);
    assert(self !== undefined, "a leader is a voter");
    self.maybeUpdate(this.persistedLastIndex());
    self.becomeReplicate();
    self.recentActive = true;
    // Conf changes wait until everything before this term is applied (single-server change safety).
    this.pendingConfIndex = this.log.lastIndex();
    // The no-op commits entries of earlier terms and lets reads proceed (dissertation 6.4).
    this.appendEntries([{ term: this.term, index: next, type: "normal", data: new Uint8Array(0) }]);
    this.broadcastAppend();
  }

  // ---- membership -----------------------------------------------------------------------------

  private applyConfEntry(entry: Entry): void {
    const change = decodeConfChange(entry.data);
    this.conf = applyConfChange(this.conf, change);
    this.config.logger.info(
      { id: this.id, term: this.term, index: entry.index, change, conf: this.conf },
      "raft: applied a membership change",
    );
    if (this.role !== "leader") return;
    const next = this.log.lastIndex() + 1;
    for (const id of [...this.progress.keys()]) {
      if (!this.conf.voters.includes(id) && !this.conf.learners.includes(id)) {
        this.progress.delete(id);
        this.snapshotsSending.delete(id);
      }
    }
    const added: NodeId[] = [];
    for (const id of this.conf.voters) {
      const pr = this.progress.get(id);
      if (pr !== undefined) pr.learner = false;
      else {
        this.progress.set(id, new Progress(next, this.config.maxInflightMsgs, false));
        added.push(id);
      }
    }
    for (const id of this.conf.learners) {
      if (this.progress.has(id)) continue;
      this.progress.set(id, new Progress(next, this.config.maxInflightMsgs, true));
      added.push(id);
    }
    if (this.leadTransferee !== "" && !this.conf.voters.includes(this.leadTransferee)) this.abortLeaderTransfer();
    if (!this.conf.voters.includes(this.id)) {
      // Removed leader: tell everyone the commit index, then step down; the rest elect a new leader.
      this.broadcastAppend();
      this.becomeFollower(this.term, "");
      return;
    }
    // Fewer voters can mean a quorum already has later entries; a new member needs the log.
    if (this.maybeCommit()) this.broadcastAppend();
    else for (const id of added) this.sendAppend(id, true);
  }

  /** The last index known durable: storage's, below any unstable suffix that will replace it. */
  private persistedLastIndex(): number {
    const stored = this.log.storage.lastIndex();
    const unstable = this.log.unstable;
    if (unstable.snapshot !== null) return Math.min(stored, unstable.snapshot.metadata.index - 1, unstable.offset - 1);
    return unstable.entries.length > 0 ? Math.min(stored, unstable.offset - 1) : stored;
  }

  // ---- ready ----------------------------------------------------------------------------------

  private send(m: Outgoing): void {
    const message = { ...m, from: this.id, term: m.term ?? this.term } as ReadyMessage;
    assert(message.to !== this.id, "a node never messages itself");
    if (this.messages.length >= messagesPerReadyMax) {
      this.droppedMessages++;
      return;
    }
    this.messages.push(message);
  }

  private softState(): SoftState {
    return { leader: this.leader, role: this.role };
  }

  private hardState(): HardState {
    return { term: this.term, vote: this.vote, commit: this.log.committed };
  }

  hasReady(): boolean {
    const soft = this.softState();
    const hard = this.hardState();
    return (
      this.broadcastPending ||
      this.messages.length > 0 ||
      this.readStates.length > 0 ||
      this.droppedReads.length > 0 ||
      soft.leader !== this.prevSoftState.leader ||
      soft.role !== this.prevSoftState.role ||
      !hardStateEqual(hard, this.prevHardState) ||
      this.log.unstable.entries.length > 0 ||
      this.log.unstable.snapshot !== null ||
      this.log.hasNextCommittedEntries()
    );
  }

  takeReady(): Ready {
    if (this.broadcastPending) {
      this.broadcastPending = false;
      assert(this.role === "leader", "a pending broadcast outlived leadership");
      this.broadcastAppend();
    }
    const soft = this.softState();
    const hard = this.hardState();
    const entries = [...this.log.unstable.entries];
    const hardChanged = !hardStateEqual(hard, this.prevHardState);
    const messagesBeforePersist: ReadyMessage[] = [];
    const messages: ReadyMessage[] = [];
    for (const message of this.messages)
      (sendableBeforePersist(message, this.prevHardState.term) ? messagesBeforePersist : messages).push(message);
    const ready: Ready = {
      hardState: hardChanged ? hard : null,
      entries,
      snapshot: this.log.unstable.snapshot,
      committedEntries: this.log.nextCommittedEntries(this.config.maxCommittedSizePerReadyBytes),
      messagesBeforePersist,
      messages,
      mustSync: entries.length > 0 || hard.term !== this.prevHardState.term || hard.vote !== this.prevHardState.vote,
      readStates: this.readStates,
      droppedReads: this.droppedReads,
    };
    if (soft.leader !== this.prevSoftState.leader || soft.role !== this.prevSoftState.role) ready.softState = soft;
    this.messages = [];
    this.readStates = [];
    this.droppedReads = [];
    return ready;
  }

  advance(ready: Ready): void {
    if (ready.softState !== undefined) this.prevSoftState = ready.softState;
    if (ready.hardState !== null) this.prevHardState = ready.hardState;
    if (ready.snapshot !== null) {
      this.log.unstable.stableSnapshotTo(ready.snapshot.metadata.index);
      this.log.appliedTo(ready.snapshot.metadata.index);
    }
    const lastEntry = ready.entries[ready.entries.length - 1];
    if (lastEntry !== undefined) {
      this.log.unstable.stableTo(lastEntry.index, lastEntry.term);
      // Now durable here too: the leader counts itself (see appendEntries). Followers may have acknowledged first.
      const self = this.role === "leader" ? this.progress.get(this.id) : undefined;
      if (self !== undefined && self.maybeUpdate(lastEntry.index) && this.maybeCommit()) this.broadcastPending = true;
    }
    let appliedBytes = 0;
    for (const entry of ready.committedEntries) {
      this.log.appliedTo(entry.index);
      appliedBytes += entryBytes(entry);
      if (entry.type === "conf") this.applyConfEntry(entry);
    }
    if (this.role === "leader") this.uncommittedBytes = Math.max(0, this.uncommittedBytes - appliedBytes);
  }

  status(): Status {
    const progress: Status["progress"] = {};
    if (this.role === "leader") for (const [id, pr] of this.progress) progress[id] = pr.toStatus();
    return {
      id: this.id,
      role: this.role,
      term: this.term,
      vote: this.vote,
      leader: this.leader,
      commit: this.log.committed,
      applied: this.log.applied,
      lastIndex: this.log.lastIndex(),
      conf: copyConf(this.conf),
      leadTransferee: this.leadTransferee,
      droppedMessages: this.droppedMessages,
      progress,
    };
  }

  confState(): ConfState {
    return copyConf(this.conf);
  }

  /** Indexes of the snapshots this leader is sending (their bytes must stay readable until the transfers end). */
  snapshotsInTransfer(): number[] {
    const indexes = new Set<number>();
    for (const snapshot of this.snapshotsSending.values()) indexes.add(snapshot.metadata.index);
    return [...indexes].sort((a, b) => a - b);
  }
}

function copyConf(conf: ConfState): ConfState {
  return { voters: [...conf.voters], learners: [...conf.learners] };
}

/**
 * A leader's append, heartbeat or snapshot chunk promises nothing about this node's disk beyond its
 * term (and its vote in it), and that is durable when the last persisted hard state has reached the
 * message's term: it may go out before this Ready's write (Raft dissertation 10.2.1; etcd's leader
 * sends MsgApp while it persists). Everything else (votes, acknowledgements) waits for the write.
 */
function sendableBeforePersist(message: ReadyMessage, persistedTerm: number): boolean {
  const type = message.type;
  return (
    (type === "app" || type === "heartbeat" || type === "snap" || type === "snapRef") && message.term <= persistedTerm
  );
}

function hardStateEqual(a: HardState, b: HardState): boolean {
  return a.term === b.term && a.vote === b.vote && a.commit === b.commit;
}
