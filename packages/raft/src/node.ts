// RaftNode: the one driver of the Ready contract, and the only code that touches the clock, the
// sockets and the disk. Inputs (ticks, received messages, proposals, reads, membership changes)
// are buffered in a bounded inbox and fed to the core between Readies; each Ready is handled
// exactly as docs/raft-core.md says:
//   1. persist snapshot, then entries + hard state in one batch (fsynced when mustSync);
//   2. send messages;  3. hand the snapshot / committed entries to the applier;  4. advance.
// The applier installs and applies what it is handed, in order, while the loop goes on with the
// next Readies: a long install or a bulk import never holds up heartbeats, appends or commits.
// Proposals that arrive while a Ready is being persisted are appended together in the next one:
// that is the group commit that makes many concurrent proposers cheap.

import { randomBytes } from "node:crypto";
import { RaftAssertionError, unreachable } from "./core/assert.js";
import type { Message, ReadyMessage, SnapshotChunkRef } from "./core/messages.js";
import { RaftError } from "./core/errors.js";
import { RawNode } from "./core/raw-node.js";
import { Xoshiro128, seedFromString } from "./core/prng.js";
import type { Ready, Role } from "./core/ready.js";
import type {
  ConfChange,
  ConfState,
  Entry,
  HardState,
  NodeId,
  RaftStorage,
  RaftStorageWriter,
  Snapshot,
  SnapshotData,
  SnapshotDataReader,
} from "./core/types.js";
import { snapshotDataBytes } from "./core/snapshot-data.js";
import {
  resolveSnapshotFlow,
  driverLimits,
  resolveNodeOptions,
  type DriverTransport,
  type RaftNodeOptions,
  type ResolvedNodeOptions,
} from "./driver/options.js";
import type { StateMachine } from "./driver/state-machine.js";
import { coalesceAppends } from "./driver/coalesce.js";
import { buildNodeStatus, type NodeStatus } from "./driver/status.js";
import { ProposalWaiters, ReadWaiters, type Waiter } from "./driver/waiters.js";
import {
  fromCoreError,
  NotLeaderError,
  RaftNodeError,
  ShuttingDownError,
  StorageError,
  TimeoutError,
} from "./errors.js";
import { silentLogger, type Logger } from "./logger.js";
import { defaultTransportLimits, WsTransport } from "./transport/ws-transport.js";
import type { TransportStats } from "./transport/transport.js";
import { systemClock, type DriverClock } from "./driver/clock.js";
import { applicationMessageType, isApplicationMessage, type WireMessage } from "./driver/app-message.js";
import { ReadContexts, readContextNonceBytes } from "./driver/read-context.js";
import { PeerIdentities } from "./driver/peer-identity.js";
import type { DurableState, PeerIdentity } from "./transport/handshake.js";
import { applyConfChange, bootstrapTerm, decodeConfChange } from "./core/confchange.js";
import { ApplyQueue, type ApplyWork } from "./driver/apply-queue.js";
import { SnapshotChunkFiller } from "./driver/snapshot-chunks.js";

type Input =
  | { kind: "message"; message: Message }
  | { kind: "propose"; data: Uint8Array; waiter: Waiter<{ index: number }> }
  | { kind: "confChange"; change: ConfChange; waiter: Waiter<{ index: number }> }
  | { kind: "read"; context: Uint8Array; waiter: Waiter<void> }
  | { kind: "transfer"; to: NodeId; waiter: Waiter<void> }
  | { kind: "unreachable"; id: NodeId }
  | { kind: "snapshotFailed"; id: NodeId };

type State = "new" | "running" | "stopping" | "stopped";

/** A Ready taking longer than this is logged: it delays heartbeats and may cost the leadership. */
const slowReadyMs = 100;
/** Applying committed entries yields to the event loop after this much work (see handleReady). */
const applySliceMs = 20;
/** How often a founder waiting for its founding peers to accept it says whom it waits for. */
const admissionLogEveryMs = 5_000;

/** Cumulative counters of the Ready loop. */
export interface NodeMetrics {
  readies: number;
  entriesPersisted: number;
  /** Appends fsynced (mustSync) and not. */
  syncedWrites: number;
  unsyncedWrites: number;
  messagesSent: number;
  entriesApplied: number;
  /** Wall time spent waiting for storage appends, and handling Readies overall (ms). */
  persistMs: number;
  loopMs: number;
  /** The longest Ready turn (persist, send, hand over) so far (ms): how long heartbeats could wait. */
  readyMsMax: number;
  /** Times the loop waited for the applier to work its backlog down (applyQueueLimits), and for how long in all (ms). */
  applyWaits: number;
  applyWaitMs: number;
  /** Times this node saw the leader change (including to "none"). */
  leaderChanges: number;
  /** Vote and pre-vote requests this node sent (campaigns x peers). */
  voteRequests: number;
  /** Application messages sent, received (delivered to onAppMessage) and dropped on receipt (no handler, malformed payload, not running). */
  appMessagesSent: number;
  appMessagesReceived: number;
  appMessagesDropped: number;
}

/** A snapshot captured at `index` whose bytes the state machine is still encoding (`data` null until then). */
interface SnapshotInFlight {
  index: number;
  conf: ConfState;
  startMs: number;
  data: SnapshotData | null;
}

export class RaftNode {
  readonly id: NodeId;
  private readonly config: ResolvedNodeOptions;
  private readonly logger: Logger;
  private readonly storage: RaftStorage & RaftStorageWriter & SnapshotDataReader;
  /** Reads the leader's snapshot chunks from storage and sends them (the core names them, without bytes). */
  private readonly snapshotChunks: SnapshotChunkFiller;
  /** The snapshots last pinned in storage (RawNode.snapshotsInTransfer). */
  private pinnedSnapshots: number[] = [];
  private readonly stateMachine: StateMachine;
  private readonly transport: DriverTransport;
  private rawNode: RawNode | null = null;
  private state: State = "new";
  private inbox: Input[] = [];
  private ticksPending = 0;
  private droppedInputs = 0;
  private wakeLoop: (() => void) | null = null;
  private loopDone: Promise<void> = Promise.resolve();
  /** Snapshots and committed entries handed over by the loop, waiting for the applier. */
  private readonly applyQueue = new ApplyQueue();
  private wakeApplier: (() => void) | null = null;
  /** Called by the applier after each piece of work (the loop may be waiting for its backlog to shrink). */
  private applierProgressed: (() => void) | null = null;
  private applierDone: Promise<void> = Promise.resolve();
  /** The membership as of `applied` (the core's runs ahead of it while the applier catches up): recorded with snapshots. */
  private appliedConf: ConfState = { voters: [], learners: [] };
  /** The write of a snapshot this node took, in the storage's queue (the loop does not wait for it). */
  private snapshotWrite: Promise<void> | null = null;
  private tickTimer: unknown = null;
  private readonly clock: DriverClock;
  /** Snapshot chunk size and window, fitted to the transport's limits. */
  private readonly snapshotFlow: { maxSnapshotChunkBytes: number; maxSnapshotInflightBytes: number };
  private readonly proposals: ProposalWaiters<{ index: number }>;
  private readonly confChanges: ProposalWaiters<{ index: number }>;
  private readonly reads: ReadWaiters;
  private readonly transfers = new Map<NodeId, Waiter<void>[]>();
  private readonly readContexts: ReadContexts;
  /** This node's cluster and incarnation, and those of the peers it has met (null: no identity checks). */
  private readonly identities: PeerIdentities | null;
  /** Peers that refused this node's identity in a handshake. */
  private readonly refusedBy = new Set<NodeId>();
  /** Peers that refused this node because its data directory holds less than it told them (a restored copy). */
  private readonly rolledBackFor = new Set<NodeId>();

  /** True while a founder's new data directory waits for every founding peer to accept it (awaitAdmission). */
  private admitting = false;
  /** Ticks since the peers' marks were last saved (driver/peer-identity.ts flushMarks). */
  private ticksSinceMarksFlush = 0;
  private applied = 0;
  private role: Role = "follower";
  private leader: NodeId = "";
  private boundPort = 0;
  /** A commit-only hard state not yet written (see persist). */
  private deferredHardState: HardState | null = null;
  private stopped: Promise<void> | null = null;
  /** The snapshot the state machine is encoding (at most one); the loop writes it once its bytes are ready. */
  private snapshotInFlight: SnapshotInFlight | null = null;
  /** Data bytes of the entries applied since the last snapshot was captured or installed. */
  private bytesSinceSnapshot = 0;
  private readonly counters: NodeMetrics = {
    readies: 0,
    entriesPersisted: 0,
    syncedWrites: 0,
    unsyncedWrites: 0,
    messagesSent: 0,
    entriesApplied: 0,
    persistMs: 0,
    loopMs: 0,
    readyMsMax: 0,
    applyWaits: 0,
    applyWaitMs: 0,
    leaderChanges: 0,
    voteRequests: 0,
    appMessagesSent: 0,
    appMessagesReceived: 0,
    appMessagesDropped: 0,
  };

  constructor(private readonly options: RaftNodeOptions) {
    this.id = options.id;
    this.config = resolveNodeOptions(options);
    this.snapshotFlow = resolveSnapshotFlow(options.raft, { ...defaultTransportLimits, ...options.transport.limits });
    this.logger = options.logger ?? silentLogger;
    this.storage = options.storage;
    this.stateMachine = options.stateMachine;
    this.snapshotChunks = new SnapshotChunkFiller(
      this.storage,
      (chunk) => {
        if (this.state !== "running") return;
        this.transport.send([chunk]);
        this.counters.messagesSent++;
      },
      (ref, error) => this.onSnapshotReadFailed(ref, error),
    );
    this.proposals = new ProposalWaiters(this.config.pendingProposalsMax);
    this.confChanges = new ProposalWaiters(64);
    this.reads = new ReadWaiters(this.config.pendingReadsMax);
    this.readContexts = new ReadContexts(
      options.id,
      options.readContextNonce ?? new Uint8Array(randomBytes(readContextNonceBytes)),
    );
    this.identities =
      options.identity === undefined
        ? null
        : new PeerIdentities(options.identity.store, options.identity.cluster, options.id);
    const identities = this.identities;
    this.clock = options.clock ?? systemClock;
    const makeTransport =
      options.transportFactory ?? ((transportOptions) => new WsTransport<WireMessage>(transportOptions));
    this.transport = makeTransport({
      id: options.id,
      secret: options.transport.secret,
      ...(options.transport.previousSecret === undefined ? {} : { previousSecret: options.transport.previousSecret }),
      ...(options.transport.tls === undefined ? {} : { tls: options.transport.tls }),
      ...(options.transport.host === undefined ? {} : { host: options.transport.host }),
      port: options.transport.port ?? 0,
      peers: options.transport.peers,
      onMessage: (message, incarnation) => {
        if (isApplicationMessage(message)) return this.receiveAppMessage(message.from, message.payload);
        // A frame still in flight from an incarnation since replaced: what it says (a vote, an
        // acknowledgement) the new one knows nothing of.
        if (identities !== null && !identities.isCurrent(message.from, incarnation)) return;
        identities?.observe(message.from, incarnation, message);
        this.push({ kind: "message", message });
      },
      onPeerChange: (id, connected) => {
        if (!connected) this.push({ kind: "unreachable", id });
      },
      logger: this.logger,
      ...(options.transport.limits === undefined ? {} : { limits: options.transport.limits }),
      ...(identities === null
        ? {}
        : {
            identity: (): PeerIdentity => ({
              ...identities.own,
              durable: this.durableState(),
              ...(this.admitting ? { admitting: true } : {}),
            }),
            checkIdentity: (peer: NodeId, identity: PeerIdentity) => {
              const refused = identities.check(peer, identity);
              // A peer whose own data directory was replaced keeps nothing of what this node's
              // earlier incarnation (if any) told it: it has no word to give on admission.
              if (refused?.replaced === true && this.admitting) identities.admitBy(peer);
              return refused;
            },
            onIdentityRefused: (peer: NodeId, rolledBack: boolean) => this.onIdentityRefused(peer, rolledBack),
          }),
    });
  }

  /** The leader this node knows of ("" when none), as of the last Ready; cheaper than status(). */
  get leaderId(): NodeId {
    return this.leader;
  }

  /**
   * Sends an application payload to member `to` on the authenticated Raft connection (received
   * by `to`'s onAppMessage, never by its Raft core). Best effort like every message: false, and
   * nothing queued, when this node is not running, has no authenticated open connection to `to`,
   * or the encoded message exceeds the transport's messageBytesMax. Payloads to one peer arrive in
   * the order sent, while the connection stays up.
   */
  sendAppMessage(to: NodeId, payload: Uint8Array): boolean {
    if (this.state !== "running" || to === this.id || !this.transport.isConnected(to)) return false;
    const queued = this.transport.send([{ type: applicationMessageType, from: this.id, to, term: 0, payload }]);
    if (queued === 0) return false;
    this.counters.appMessagesSent++;
    return true;
  }

  /** The port the transport listens on (after start). */
  get port(): number {
    return this.boundPort;
  }

  /** Restores the application from the stored snapshot, starts the transport, the ticker and the loop. */
  async start(): Promise<void> {
    if (this.state !== "new") throw new RaftNodeError("RAFT_ERR_SHUTTING_DOWN", "a RaftNode starts once");
    const { metadata, totalBytes } = this.storage.snapshot();
    // Read from disk for this install only: storage does not keep a snapshot's bytes in memory.
    if (metadata.index > 0)
      await this.stateMachine.installSnapshot({
        metadata,
        data: await this.storage.readSnapshotData(metadata.index, 0, totalBytes),
      });
    this.applied = metadata.index;
    // Stated from the first handshake on (connections state their identity once).
    this.admitting = this.awaitsAdmission();
    this.boundPort = (await this.transport.start()).port;
    try {
      await this.probePeers();
    } catch (error) {
      await this.transport.close();
      throw error;
    }
    const { raft, voters, learners } = this.options;
    this.rawNode = new RawNode(
      {
        random: new Xoshiro128(seedFromString(`${this.id}/${randomBytes(8).toString("hex")}`)),
        ...raft,
        ...this.snapshotFlow,
        id: this.id,
        ...(voters === undefined ? {} : { voters }),
        ...(learners === undefined ? {} : { learners }),
        electionTicks: this.config.electionTicks,
        heartbeatTicks: this.config.heartbeatTicks,
        applied: this.applied,
      },
      this.storage,
    );
    this.appliedConf = this.rawNode.confState(); // the core replayed the conf entries up to `applied`
    this.state = "running";
    this.tickTimer = this.clock.setInterval(() => this.onTick(), this.config.tickMs);
    this.loopDone = this.loop().catch((error: unknown) => this.fatal(error));
    this.applierDone = this.applyLoop().catch((error: unknown) => this.fatal(error));
    this.logger.info({ id: this.id, port: this.boundPort, applied: this.applied }, "raft node started");
  }

  /**
   * Before it takes part, a node with an identity asks its peers (the handshake) whether they accept
   * it, and waits until every peer answered or foundingProbeMs passed (peers down: nobody to ask):
   * - a founding member with an empty log would bootstrap a cluster of its own: if a peer knew
   *   another incarnation of it, its data directory was wiped and it must not found anything;
   * - a node with a log is refused if a peer was told more than its data directory holds (a copy
   *   restored from earlier): it could vote twice in a term or lose acknowledged entries.
   * Either way it rejoins only as a new member (remove, empty its directory, addLearner).
   * A joining node with an empty log has nothing to check.
   */
  private async probePeers(): Promise<void> {
    const founding = (this.options.voters?.length ?? 0) > 0;
    const { hardState } = this.storage.initialState();
    const emptyLog = hardState.term === 0 && this.storage.lastIndex() === 0;
    if (this.identities === null) return;
    const peers = Object.keys(this.options.transport.peers).filter((id) => id !== this.id);
    if (!this.identities.admitted) {
      if (this.awaitsAdmission()) {
        await this.awaitAdmission(peers);
        this.identities.admit();
        return;
      }
      // A joining node is let in by the membership change that adds it (which forgets an old
      // incarnation of its id everywhere); until then its peers check it as they always do.
      this.identities.admit();
    }
    if (emptyLog && !founding) return;
    const electionMs = this.config.electionTicks * this.config.tickMs;
    const deadlineMs = this.clock.nowMs() + (this.options.identity?.foundingProbeMs ?? 2 * electionMs);
    const refused = () => this.rolledBackFor.size > 0 || (emptyLog && this.refusedBy.size > 0);
    // A dialer is authenticated one frame before its peer checks it: once every peer is connected,
    // a refusal can still be on its way, so wait a little longer for it.
    let allConnectedAtMs: number | null = null;
    while (this.clock.nowMs() < deadlineMs && !refused()) {
      if (allConnectedAtMs === null && peers.every((id) => this.transport.isConnected(id)))
        allConnectedAtMs = this.clock.nowMs();
      if (allConnectedAtMs !== null && this.clock.nowMs() - allConnectedAtMs >= Math.min(electionMs, 100)) break;
      await this.nextTick();
    }
    if (this.rolledBackFor.size > 0) throw this.rolledBackError();
    if (!emptyLog || this.refusedBy.size === 0) return;
    throw this.refusedFoundingError();
  }

  /** A founder with an empty log whose data directory's incarnation no founding peer has yet all accepted. */
  private awaitsAdmission(): boolean {
    if (this.identities === null || this.identities.admitted || (this.options.voters?.length ?? 0) === 0) return false;
    const { hardState } = this.storage.initialState();
    return hardState.term === 0 && this.storage.lastIndex() === 0;
  }

  /**
   * A founder whose data directory is new takes part only once every founding peer has accepted
   * its incarnation, however long that takes: a founder wiped after it took part must not found
   * again, and only the peers its messages reached can tell (they hold a mark of it and refuse the
   * new incarnation); with any of them down, a deadline would let it found with the others. A peer
   * counts once it stayed connected for a moment without refusing (a refusal is one frame behind
   * the connection), and the count is saved, so a restart does not start it over. Meanwhile the
   * handshake states `admitting`: a peer that only met an earlier incarnation which never took part
   * (never sent it a Raft message) lets this one replace it (driver/peer-identity.ts).
   */
  private async awaitAdmission(peers: readonly NodeId[]): Promise<void> {
    const identities = this.identities;
    if (identities === null) return;
    const electionMs = this.config.electionTicks * this.config.tickMs;
    const settleMs = Math.min(electionMs, 100);
    const connectedSinceMs = new Map<NodeId, number>();
    let loggedAtMs = this.clock.nowMs();
    this.admitting = true;
    try {
      for (;;) {
        if (this.state !== "new") throw new ShuttingDownError("start");
        if (this.refusedBy.size > 0 || this.rolledBackFor.size > 0) throw this.refusedFoundingError();
        const nowMs = this.clock.nowMs();
        for (const id of peers) {
          if (!this.transport.isConnected(id)) {
            connectedSinceMs.delete(id);
            continue;
          }
          const sinceMs = connectedSinceMs.get(id) ?? nowMs;
          connectedSinceMs.set(id, sinceMs);
          if (nowMs - sinceMs >= settleMs) identities.admitBy(id);
        }
        const accepted = identities.admittedBy;
        const waiting = peers.filter((id) => !accepted.has(id));
        if (waiting.length === 0) return;
        if (nowMs - loggedAtMs >= admissionLogEveryMs) {
          loggedAtMs = nowMs;
          this.logger.warn(
            { id: this.id, waitingFor: waiting },
            "raft node: a new data directory founds only once every founding member has accepted it: waiting for them",
          );
        }
        await this.nextTick();
      }
    } finally {
      this.admitting = false;
    }
  }

  private refusedFoundingError(): RaftNodeError {
    if (this.rolledBackFor.size > 0) return this.rolledBackError();
    return new RaftNodeError(
      "RAFT_ERR_IDENTITY_REFUSED",
      `refusing to found a cluster: ${[...this.refusedBy].join(", ")} knew another incarnation of ${this.id} ` +
        `(its data directory was replaced); add it back as a new member instead`,
    );
  }

  /** Resolves at the next tick of the driver's clock (so the driver simulation runs the waits too). */
  private nextTick(): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = this.clock.setInterval(() => {
        this.clock.clearInterval(timer);
        resolve();
      }, this.config.tickMs);
    });
  }

  private rolledBackError(): RaftNodeError {
    return new RaftNodeError(
      "RAFT_ERR_ROLLED_BACK",
      `${[...this.rolledBackFor].join(", ")} were told more than this data directory holds: it was restored ` +
        `from an older copy of ${this.id}'s; remove ${this.id}, empty its directory and add it back as a new member`,
    );
  }

  /** What this node's data directory holds, stated in the handshake (driver/peer-identity.ts compares it). */
  private durableState(): DurableState {
    const { hardState } = this.storage.initialState();
    return { term: hardState.term, vote: hardState.vote, lastIndex: this.storage.lastIndex() };
  }

  private onIdentityRefused(peer: NodeId, rolledBack: boolean): void {
    (rolledBack ? this.rolledBackFor : this.refusedBy).add(peer);
    this.logger.error(
      { id: this.id, peer, incarnation: this.identities?.own.incarnation, rolledBack },
      rolledBack
        ? "raft node: a peer refused this node's data directory as older than what it was told (restored from a copy)"
        : "raft node: a peer refused this node's identity (another cluster, or this data directory replaced a member's)",
    );
    // Refused once running (the peer was unreachable during the probe): stop before it votes or
    // acknowledges anything more on a state that forgot what it promised.
    if (rolledBack && this.state === "running") this.fatal(this.rolledBackError());
  }

  /**
   * A conf entry reached the applier: the membership as of `applied` follows it (the core applied
   * it at advance()), and a change that removes or adds `node` anew forgets its recorded incarnation.
   */
  private onConfEntry(entry: Entry): void {
    if (entry.index <= this.applied) return; // covered by an installed snapshot
    const change = decodeConfChange(entry.data);
    this.appliedConf = applyConfChange(this.appliedConf, change);
    // The founding membership's entries add every founder once, at the start: they are no rejoin,
    // and forgetting there would drop the incarnations the founding probe just recorded (a wiped
    // founder would then be let back in as if it were new).
    if (this.identities === null || entry.term === bootstrapTerm) return;
    if (change.type === "remove" || change.type === "addLearner") this.identities.forget(change.node, entry.index);
  }

  /** Replicates `data`; resolves once it is committed and applied on this node. Only the leader accepts proposals. */
  propose(data: Uint8Array): Promise<{ index: number }> {
    return this.request("propose", (waiter) => ({ kind: "propose", data, waiter }), this.proposals.full);
  }

  /** Linearizable read barrier: resolves once this node has applied everything committed before the call. */
  readIndex(): Promise<void> {
    const context = this.readContexts.next();
    return this.request("readIndex", (waiter) => ({ kind: "read", context, waiter }), this.reads.full);
  }

  /** Adds or updates a peer's address in the transport's address book (only known ids may connect). */
  setPeerAddress(id: NodeId, url: string): void {
    if (id !== this.id) this.transport.addPeer(id, url);
  }

  /** Adds `id` as a learner (it receives the log but does not vote). `url` registers its address here. */
  addLearner(id: NodeId, url?: string): Promise<{ index: number }> {
    if (url !== undefined) this.transport.addPeer(id, url);
    return this.changeMembership({ type: "addLearner", node: id });
  }

  /** Makes learner `id` a voter; do it once it has caught up (see status().peers[id].lag). */
  promote(id: NodeId): Promise<{ index: number }> {
    return this.changeMembership({ type: "promote", node: id });
  }

  /** Removes `id` (the leader may remove itself; it steps down once the change applies). */
  remove(id: NodeId): Promise<{ index: number }> {
    return this.changeMembership({ type: "remove", node: id });
  }

  /** Hands leadership to `to`; resolves when this node sees `to` as the leader. */
  transferLeadership(to: NodeId): Promise<void> {
    return this.request("transferLeadership", (waiter) => ({ kind: "transfer", to, waiter }), false);
  }

  status(): NodeStatus {
    if (this.rawNode === null) throw new RaftNodeError("RAFT_ERR_NOT_STARTED", "status() before start()");
    return buildNodeStatus(this.rawNode.status(), this.applied, this.storage.snapshot().metadata.index, (id) =>
      this.transport.isConnected(id),
    );
  }

  /** Cumulative counters of the Ready loop (for benchmarks and dashboards). */
  metrics(): NodeMetrics {
    return { ...this.counters };
  }

  transportStats(): TransportStats & { droppedInputs: number } {
    return { ...this.transport.stats(), droppedInputs: this.droppedInputs };
  }

  /** Stops cleanly: pending requests are rejected (ShuttingDown), the loop finishes its Ready, then transport and storage close. Idempotent. */
  stop(): Promise<void> {
    this.stopped ??= this.shutdown(() => new ShuttingDownError("request"));
    return this.stopped;
  }

  private async shutdown(error: () => RaftNodeError): Promise<void> {
    const wasRunning = this.state === "running";
    this.state = "stopping";
    if (this.tickTimer !== null) this.clock.clearInterval(this.tickTimer);
    this.rejectEverything(error);
    this.snapshotChunks.clear();
    this.wakeLoop?.();
    this.wakeApplier?.();
    this.applierProgressed?.();
    if (wasRunning) await Promise.all([this.loopDone, this.applierDone]);
    try {
      await this.snapshotWrite;
      await this.transport.close();
      this.identities?.flushMarks();
      if (this.deferredHardState !== null) await this.storage.append([], this.deferredHardState, true);
    } finally {
      await this.storage.close();
      this.state = "stopped";
      this.logger.info({ id: this.id }, "raft node stopped");
    }
  }

  private changeMembership(change: ConfChange): Promise<{ index: number }> {
    return this.request(change.type, (waiter) => ({ kind: "confChange", change, waiter }), this.confChanges.full);
  }

  private request<T>(what: string, input: (waiter: Waiter<T>) => Input, full: boolean): Promise<T> {
    if (this.state === "new")
      return Promise.reject(new RaftNodeError("RAFT_ERR_NOT_STARTED", `${what} before start()`));
    if (this.state !== "running") return Promise.reject(new ShuttingDownError(what));
    if (full || this.inbox.length >= driverLimits.inboxMax) {
      return Promise.reject(
        new RaftNodeError("RAFT_ERR_PENDING_FULL", `${what}: too many pending requests`, { leader: this.leader }),
      );
    }
    return new Promise<T>((resolve, reject) => {
      this.push(input({ resolve, reject, deadlineMs: this.clock.nowMs() + this.config.requestTimeoutMs }));
    });
  }

  private push(input: Input): void {
    if (this.state !== "running") return;
    if (this.inbox.length >= driverLimits.inboxMax) {
      this.droppedInputs++; // only messages get here when full (requests are refused above); raft resends
      return;
    }
    this.inbox.push(input);
    this.wakeLoop?.();
  }

  private receiveAppMessage(from: NodeId, payload: unknown): void {
    const handler = this.options.onAppMessage;
    if (this.state !== "running" || handler === undefined || !(payload instanceof Uint8Array)) {
      this.counters.appMessagesDropped++;
      return;
    }
    this.counters.appMessagesReceived++;
    try {
      handler(from, payload);
    } catch (error) {
      // The application's bug must not take the transport's receive loop down with it.
      this.logger.error(
        { id: this.id, from, err: error instanceof Error ? error.message : String(error) },
        "raft node: onAppMessage threw",
      );
    }
  }

  private onTick(): void {
    if (this.ticksPending < driverLimits.ticksPendingMax) this.ticksPending++;
    // Peers' log indexes are saved in batches: one small write per election timeout at most.
    if (++this.ticksSinceMarksFlush >= this.config.electionTicks) {
      this.ticksSinceMarksFlush = 0;
      this.identities?.flushMarks();
    }
    const nowMs = this.clock.nowMs();
    const timeout = (what: string) => () => new TimeoutError(what, this.config.requestTimeoutMs, this.leader);
    this.proposals.expire(nowMs, timeout("propose"));
    this.confChanges.expire(nowMs, timeout("membership change"));
    this.reads.expire(nowMs, timeout("readIndex"));
    for (const [to, waiters] of this.transfers) {
      const alive = waiters.filter((waiter) => waiter.deadlineMs > nowMs);
      for (const waiter of waiters) if (waiter.deadlineMs <= nowMs) waiter.reject(timeout(`transfer to ${to}`)());
      if (alive.length === 0) this.transfers.delete(to);
      else this.transfers.set(to, alive);
    }
    this.wakeLoop?.();
  }

  private async loop(): Promise<void> {
    const rawNode = this.rawNode;
    if (rawNode === null) throw new RaftAssertionError("loop without a RawNode");
    while (this.state === "running") {
      if (this.snapshotInFlight?.data) this.writeSnapshot();
      this.drain(rawNode);
      if (!rawNode.hasReady()) {
        await new Promise<void>((resolve) => (this.wakeLoop = resolve));
        this.wakeLoop = null;
        continue;
      }
      const ready = rawNode.ready();
      this.pinSnapshotsInTransfer(rawNode);
      const startMs = performance.now();
      await this.handleReady(ready);
      // Step 3, then 4, with nothing awaited in between: the applier starts on this work only
      // after advance(), so the core has applied a conf entry's change before its waiter settles.
      this.handToApplier(ready);
      rawNode.advance(ready);
      this.counters.readies++;
      const readyMs = performance.now() - startMs;
      this.counters.loopMs += readyMs;
      this.counters.readyMsMax = Math.max(this.counters.readyMsMax, readyMs);
      if (this.applyQueue.backlogged) await this.waitForApplier();
      if (readyMs > slowReadyMs)
        this.logger.warn(
          {
            id: this.id,
            readyMs: Math.round(readyMs),
            entries: ready.entries.length,
            committed: ready.committedEntries.length,
          },
          "raft node: slow Ready",
        );
    }
  }

  /**
   * Feeds buffered inputs to the core. Only called while no Ready is outstanding. Messages go
   * first and at most ticksPerDrainMax ticks follow: after the loop was busy (a long fsync, a
   * snapshot), the leader's heartbeats waiting in the inbox must count before the missed ticks,
   * or a healthy follower would campaign. Dropping missed ticks only lengthens timeouts.
   */
  private drain(rawNode: RawNode): void {
    const inputs = this.inbox;
    this.inbox = [];
    for (const input of inputs) this.feed(rawNode, input);
    for (let tick = 0; tick < Math.min(this.ticksPending, driverLimits.ticksPerDrainMax); tick++) rawNode.tick();
    this.ticksPending = 0;
  }

  private feed(rawNode: RawNode, input: Input): void {
    switch (input.kind) {
      case "message":
        return this.step(rawNode, input.message);
      case "unreachable":
        return rawNode.reportUnreachable(input.id);
      case "snapshotFailed":
        return rawNode.reportSnapshot(input.id, false);
      case "propose":
        return this.attempt(input.waiter, () => {
          if (this.proposals.full)
            throw new RaftNodeError("RAFT_ERR_PENDING_FULL", "too many proposals pending", { leader: this.leader });
          const id = rawNode.propose(input.data);
          this.proposals.add(id.index, id.term, input.waiter, this.overwritten(id.index));
        });
      case "confChange":
        return this.attempt(input.waiter, () => {
          if (this.confChanges.full)
            throw new RaftNodeError("RAFT_ERR_PENDING_FULL", "too many membership changes pending", {
              leader: this.leader,
            });
          const id = rawNode.proposeConfChange(input.change);
          this.confChanges.add(id.index, id.term, input.waiter, this.overwritten(id.index));
        });
      case "read":
        return this.attempt(input.waiter, () => {
          if (this.reads.full)
            throw new RaftNodeError("RAFT_ERR_PENDING_FULL", "too many reads pending", { leader: this.leader });
          rawNode.readIndex(input.context);
          this.reads.add(contextKey(input.context), input.waiter);
        });
      case "transfer":
        return this.attempt(input.waiter, () => {
          if (this.leader === input.to) return input.waiter.resolve();
          rawNode.transferLeadership(input.to);
          this.transfers.set(input.to, [...(this.transfers.get(input.to) ?? []), input.waiter]);
        });
      default:
        return unreachable(input);
    }
  }

  /** A message the core refuses with an operating error (not a bug) is dropped: raft tolerates loss. */
  private step(rawNode: RawNode, message: Message): void {
    try {
      rawNode.step(message);
    } catch (error) {
      if (!(error instanceof RaftError)) throw error;
      this.logger.debug(
        { id: this.id, from: message.from, type: message.type, code: error.code },
        "raft node: message refused by the core",
      );
    }
  }

  /** Runs one core call for a waiter: an operating error (not leader, dropped, ...) rejects it; a bug propagates. */
  private attempt<T>(waiter: Waiter<T>, call: () => void): void {
    if (waiter.deadlineMs <= this.clock.nowMs())
      return waiter.reject(new TimeoutError("request", this.config.requestTimeoutMs, this.leader));
    try {
      call();
    } catch (error) {
      waiter.reject(fromCoreError(error, this.leader));
    }
  }

  /** Steps 0-2 of the Ready contract, and the read states (step 3 is handToApplier). */
  private async handleReady(ready: Ready): Promise<void> {
    if (ready.softState !== undefined) this.onSoftState(ready.softState.role, ready.softState.leader);
    // A leader's appends go out before its own write, so the followers' fsyncs overlap it.
    // A Ready that writes to disk flushes its messages at once: the appends must be on the wire
    // before this node spends the write (and the acknowledgements before the apply). Others wait
    // for the end of the turn, where a commit notice shares its frame with the next round's appends.
    const writes = ready.mustSync || ready.snapshot !== null;
    this.send(coalesceAppends(ready.messagesBeforePersist), writes);
    if (ready.snapshot !== null) await this.storage.applySnapshot(ready.snapshot);
    await this.persist(ready);
    this.send(coalesceAppends(ready.messages), writes);
    for (const readState of ready.readStates) this.reads.confirm(contextKey(readState.context), readState.index);
    for (const context of ready.droppedReads) {
      const refused = new RaftNodeError("RAFT_ERR_READ_INDEX_DROPPED", "the leader did not take the read", {
        leader: this.leader,
      });
      this.reads.reject(contextKey(context), refused);
    }
    this.reads.resolveUpTo(this.applied);
  }

  /**
   * Step 3, asynchronously: the snapshot and the committed entries go to the applier, in log order,
   * and the loop does not wait for them. This is the Ready contract's allowance (as in etcd, whose
   * application may advance while it applies): the core counts them as applied at advance(), which
   * only lets it hand out later entries and apply membership changes, while everything answered to
   * callers (proposals, reads, status().applied, snapshots taken here) follows what the state
   * machine has really applied.
   */
  private handToApplier(ready: Ready): void {
    if (ready.snapshot === null && ready.committedEntries.length === 0) return;
    if (ready.snapshot !== null) this.applyQueue.push({ kind: "snapshot", snapshot: ready.snapshot });
    this.applyQueue.push({ kind: "entries", entries: ready.committedEntries });
    this.wakeApplier?.();
  }

  /** Backpressure: the applier fell applyQueueLimits behind; no Ready is taken until it is back under them. */
  private async waitForApplier(): Promise<void> {
    const startMs = performance.now();
    this.counters.applyWaits++;
    while (this.applyQueue.backlogged && this.state === "running") {
      await new Promise<void>((resolve) => (this.applierProgressed = resolve));
      this.applierProgressed = null;
    }
    const waitedMs = performance.now() - startMs;
    this.counters.applyWaitMs += waitedMs;
    const fields = { id: this.id, waitedMs: Math.round(waitedMs), backlog: this.applyQueue.entries };
    const message = "raft node: the loop waited for the state machine to catch up";
    if (waitedMs > slowReadyMs) this.logger.warn(fields, message);
    else this.logger.debug(fields, message);
  }

  /** The applier: installs and applies what the loop handed over, one piece at a time, in order. */
  private async applyLoop(): Promise<void> {
    while (this.state === "running") {
      const work = this.applyQueue.shift();
      if (work === undefined) {
        await new Promise<void>((resolve) => (this.wakeApplier = resolve));
        this.wakeApplier = null;
        continue;
      }
      await this.applyWork(work);
      this.reads.resolveUpTo(this.applied);
      this.applierProgressed?.();
      if (this.state === "running") this.maybeSnapshot();
    }
  }

  private async applyWork(work: ApplyWork): Promise<void> {
    if (work.kind === "snapshot") {
      this.bytesSinceSnapshot = 0;
      return this.installSnapshot(work.snapshot);
    }
    let sliceStartMs = this.clock.nowMs();
    for (const entry of work.entries) {
      // A long batch (a bulk import) yields to the event loop now and then, so the transport keeps
      // answering pings and handshakes and the Ready loop keeps its heartbeats while it applies.
      if (this.clock.nowMs() - sliceStartMs >= applySliceMs) {
        await new Promise((resolve) => setImmediate(resolve));
        if (this.state !== "running") return; // the rest is applied again from the log after a restart
        sliceStartMs = this.clock.nowMs();
      }
      // Awaited only when the state machine is asynchronous: no promise and no microtask per entry otherwise.
      const applying = this.applyEntry(entry);
      if (applying !== undefined) await applying;
      if (entry.type === "conf") this.onConfEntry(entry);
      this.settleEntry(entry);
      this.bytesSinceSnapshot += entry.data.byteLength;
    }
  }

  /**
   * Entries and hard state in one append, fsynced when mustSync. A commit-only hard state (no
   * entries, no term/vote change) is not written on its own: it rides along with the next write.
   * That is safe because commit needs no durability (a restarted node re-learns it from the
   * leader) and it saves one LevelDB write per commit advance; stop() writes what is left.
   */
  private async persist(ready: Ready): Promise<void> {
    if (ready.entries.length === 0 && !ready.mustSync && ready.hardState !== null) {
      this.deferredHardState = ready.hardState;
      return;
    }
    if (ready.entries.length === 0 && ready.hardState === null) return;
    const hardState = ready.hardState ?? this.deferredHardState;
    this.deferredHardState = null;
    const startMs = performance.now();
    await this.storage.append(ready.entries, hardState, ready.mustSync);
    this.counters.persistMs += performance.now() - startMs;
    this.counters.entriesPersisted += ready.entries.length;
    if (ready.mustSync) this.counters.syncedWrites++;
    else this.counters.unsyncedWrites++;
  }

  /** Sends a Ready's messages; its snapshot chunks go to the filler, which sends each once read from storage. */
  private send(readyMessages: readonly ReadyMessage[], flushNow: boolean): void {
    if (readyMessages.length === 0) return;
    const messages: Message[] = [];
    for (const message of readyMessages) {
      if (message.type === "snapRef") this.snapshotChunks.push(message);
      else messages.push(message);
    }
    if (messages.length === 0) return;
    this.transport.send(messages);
    if (flushNow) this.transport.flushNow();
    this.counters.messagesSent += messages.length;
    const unreachable = new Set<NodeId>();
    for (const message of messages) {
      // etcd's ReportUnreachable: the leader stops pipelining to a peer it cannot reach.
      if (message.type === "app" && !this.transport.isConnected(message.to)) unreachable.add(message.to);
      if (message.type === "vote") this.counters.voteRequests++;
    }
    for (const id of unreachable) this.push({ kind: "unreachable", id });
  }

  private async installSnapshot(snapshot: Snapshot): Promise<void> {
    if (snapshot.metadata.index <= this.applied) return; // defensive: the queue hands only newer snapshots
    await this.stateMachine.installSnapshot(snapshot);
    this.applied = snapshot.metadata.index;
    this.appliedConf = { voters: [...snapshot.metadata.conf.voters], learners: [...snapshot.metadata.conf.learners] };
    this.identities?.forgetNonMembers(snapshot.metadata.conf, snapshot.metadata.index);
    const lost = () =>
      new RaftNodeError("RAFT_ERR_LEADERSHIP_LOST", "a snapshot replaced the log; the outcome is unknown", {
        leader: this.leader,
      });
    this.proposals.rejectUpTo(this.applied, lost);
    this.confChanges.rejectUpTo(this.applied, lost);
    this.logger.info({ id: this.id, index: this.applied }, "raft node: installed a snapshot from the leader");
  }

  /** Hands a normal entry to the state machine; returns its promise if it is asynchronous. */
  private applyEntry(entry: Entry): Promise<void> | undefined {
    if (entry.index <= this.applied) return undefined; // already covered by an installed snapshot
    if (entry.index !== this.applied + 1)
      throw new RaftAssertionError(`apply: entry ${entry.index} after applied ${this.applied}`);
    if (entry.type !== "normal" || entry.data.byteLength === 0) return undefined;
    const applying = this.stateMachine.apply(entry);
    return applying instanceof Promise ? applying : undefined;
  }

  /** After applyEntry: advances `applied` and settles the entry's waiter. */
  private settleEntry(entry: Entry): void {
    if (entry.index <= this.applied) return;
    this.applied = entry.index;
    this.counters.entriesApplied++;
    const overwritten = this.overwritten(entry.index);
    if (entry.type === "normal") {
      const done = this.proposals.take(entry.index, entry.term);
      if (done !== null)
        done.committed ? done.waiter.resolve({ index: entry.index }) : done.waiter.reject(overwritten());
      return;
    }
    const done = this.confChanges.take(entry.index, entry.term);
    if (done !== null) done.committed ? done.waiter.resolve({ index: entry.index }) : done.waiter.reject(overwritten());
  }

  private overwritten(index: number): () => RaftNodeError {
    return () =>
      new RaftNodeError("RAFT_ERR_LEADERSHIP_LOST", `entry ${index} was overwritten by a new leader`, {
        leader: this.leader,
      });
  }

  /**
   * Pins in storage the snapshots the core is sending, as soon as a Ready names their chunks: a
   * transfer goes on with the snapshot it began with, so a newer one taken meanwhile (every few
   * seconds under a bulk import) must not delete the bytes under it.
   */
  private pinSnapshotsInTransfer(rawNode: RawNode): void {
    const indexes = rawNode.snapshotsInTransfer();
    const same =
      indexes.length === this.pinnedSnapshots.length && indexes.every((index, i) => index === this.pinnedSnapshots[i]);
    if (same) return;
    this.pinnedSnapshots = indexes;
    this.storage.pinSnapshots(indexes);
  }

  /**
   * A chunk's bytes could not be read: the snapshot was replaced by a newer one meanwhile (the core
   * then sends that one), or its bytes are missing from disk. Either way that peer's transfer fails
   * and begins again from a probe.
   */
  private onSnapshotReadFailed(ref: SnapshotChunkRef, error: unknown): void {
    const replaced = error instanceof StorageError && error.code === "RAFT_ERR_SNAPSHOT_OUT_OF_DATE";
    const fields = {
      id: this.id,
      peer: ref.to,
      index: ref.metadata.index,
      offset: ref.offset,
      err: error instanceof Error ? error.message : String(error),
    };
    const message = "raft node: a snapshot chunk could not be read; the transfer to this peer starts again";
    if (replaced) this.logger.debug(fields, message);
    else this.logger.warn(fields, message);
    this.push({ kind: "snapshotFailed", id: ref.to });
  }

  private onSoftState(role: Role, leader: NodeId): void {
    if (leader !== this.leader) {
      this.counters.leaderChanges++;
      this.logger.info({ id: this.id, role, leader }, "raft node: leader changed");
      this.reads.rejectUnconfirmed(() => new NotLeaderError(leader));
      for (const waiter of this.transfers.get(leader) ?? []) waiter.resolve();
      this.transfers.delete(leader);
    }
    if (role !== "leader") this.snapshotChunks.clear();
    this.role = role;
    this.leader = leader;
  }

  /**
   * Snapshot policy: every snapshotEntries applied entries, or once the entries applied since the
   * last snapshot carry snapshotBytes (counted by applyWork, so a restart that replays the log counts
   * them again), the application snapshots and storage compacts. Called by the applier between two
   * pieces of work, so the state machine is at rest at `applied`: it captures its state now and may
   * take its time to encode it. The loop goes on (heartbeats, appends, applies) and queues the write
   * when the bytes are ready (writeSnapshot) without waiting for it, so a large state never stalls
   * replication or causes an election.
   */
  private maybeSnapshot(): void {
    if (this.snapshotInFlight !== null || this.snapshotWrite !== null) return;
    const { snapshotEntries, snapshotBytes } = this.config;
    const entriesSince = this.applied - this.storage.snapshot().metadata.index;
    const byEntries = snapshotEntries > 0 && entriesSince >= snapshotEntries;
    const byBytes = snapshotBytes > 0 && entriesSince > 0 && this.bytesSinceSnapshot >= snapshotBytes;
    if (!byEntries && !byBytes) return;
    this.bytesSinceSnapshot = 0;
    const status = this.rawNode?.status();
    // Paired with the core: once the applier has caught up, its membership is the core's.
    if (status !== undefined && status.applied === this.applied)
      assertSameConf(this.appliedConf, status.conf, this.applied);
    const taken: SnapshotInFlight = {
      index: this.applied,
      conf: { voters: [...this.appliedConf.voters], learners: [...this.appliedConf.learners] },
      startMs: performance.now(),
      data: null,
    };
    this.snapshotInFlight = taken;
    Promise.resolve(this.stateMachine.takeSnapshot()).then(
      (data) => {
        taken.data = data;
        this.wakeLoop?.();
      },
      (error: unknown) => {
        if (this.state === "running") this.fatal(error);
      },
    );
  }

  /**
   * Queues the snapshot's write in storage and goes on: the storage runs its writes one at a time in
   * the order issued, so the loop's appends follow it, and no Ready waits for it to be issued.
   */
  private writeSnapshot(): void {
    const taken = this.snapshotInFlight;
    if (taken === null || taken.data === null) throw new RaftAssertionError("writeSnapshot without encoded bytes");
    this.snapshotInFlight = null;
    // A snapshot from the leader installed meanwhile is newer: this one is of no use.
    if (taken.index <= this.storage.snapshot().metadata.index) return;
    const data = taken.data;
    // Nothing here holds the bytes past this call: storage lets each part go once it is written.
    taken.data = null;
    const { index, startMs } = taken;
    const bytes = snapshotDataBytes(data);
    const writeStartMs = performance.now();
    this.snapshotWrite = this.storage.createSnapshot(index, taken.conf, data).then(
      () => {
        this.snapshotWrite = null;
        const durationMs = Math.round(performance.now() - startMs);
        const writeMs = Math.round(performance.now() - writeStartMs);
        this.logger.info(
          { id: this.id, index, bytes, durationMs, writeMs },
          "raft node: snapshot taken, log compacted",
        );
      },
      (error: unknown) => {
        this.snapshotWrite = null;
        // A snapshot from the leader, written after this one was issued, made it useless.
        if (error instanceof StorageError && error.code === "RAFT_ERR_SNAPSHOT_OUT_OF_DATE") return;
        if (this.state === "running") this.fatal(error);
      },
    );
  }

  private rejectEverything(error: () => RaftNodeError): void {
    for (const input of this.inbox) {
      if (input.kind !== "message" && input.kind !== "unreachable" && input.kind !== "snapshotFailed")
        input.waiter.reject(error());
    }
    this.inbox = [];
    this.proposals.rejectAll(error);
    this.confChanges.rejectAll(error);
    this.reads.rejectAll(error);
    for (const waiters of this.transfers.values()) for (const waiter of waiters) waiter.reject(error());
    this.transfers.clear();
  }

  private fatal(error: unknown): void {
    this.logger.error(
      { id: this.id, err: error instanceof Error ? error.message : String(error) },
      "raft node: fatal error, stopping",
    );
    this.deferredHardState = null; // the storage may be what failed: write nothing more
    this.loopDone = Promise.resolve();
    this.stopped ??= this.shutdown(
      () => new RaftNodeError("RAFT_ERR_SHUTTING_DOWN", "the node stopped on a fatal error", { cause: error }),
    ).catch(() => undefined);
    this.options.onFatal?.(error);
  }
}

function assertSameConf(applied: ConfState, core: ConfState, index: number): void {
  const same = (a: readonly NodeId[], b: readonly NodeId[]) =>
    a.length === b.length && [...a].sort().every((id, i) => id === [...b].sort()[i]);
  if (!same(applied.voters, core.voters) || !same(applied.learners, core.learners))
    throw new RaftAssertionError(
      `membership at applied ${index}: ${JSON.stringify(applied)} differs from the core's ${JSON.stringify(core)}`,
    );
}

function contextKey(context: Uint8Array): string {
  return Buffer.from(context.buffer, context.byteOffset, context.byteLength).toString("hex");
}
