// One member of a keyraft cluster: the Raft node on LevelDB, the key-state machine it replicates,
// the command log the routes write through, the leader RPC (forwarded writes, membership), the
// staleness monitor and the learner promoter. A node without KEYRAFT_PEERS is a one-member
// cluster built exactly the same way.
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import type { CommandOutcome, KeyCommand } from "@keyraft/core";
import { join } from "node:path";
import {
  foundingClusterId,
  IdentityFile,
  LevelStorage,
  RaftNode,
  type NodeId,
  type NodeMetrics,
  type NodeStatus,
} from "@keyraft/raft";
import { RaftTimings } from "../metrics/raft-timings.js";
import type { Logger } from "pino";
import type { ReplicatedStateMachine } from "../store/types.js";
import { ClusterCommandLog, proposeLocally } from "./cluster-command-log.js";
import { clampCommandTimes } from "./command-time.js";
import { peerUrl, type ClusterConfig } from "./config.js";
import {
  addNodeOnLeader,
  appliedAnswer,
  LearnerPromoter,
  learnerAppliedOf,
  notLeaderMessage,
  removeNodeOnLeader,
} from "./membership.js";
import { ReplicatedKeyMachine } from "./replicated-machine.js";
import { ClusterRpc, type PeerProgress, type RpcRequest, type RpcResult } from "./rpc.js";
import { StalenessMonitor } from "./staleness.js";
import { AppliedWaiters } from "./applied-waiters.js";
import { ApplyTimes } from "./apply-times.js";
import { TurnBatcher } from "./turn-batcher.js";
import type { VerificationFilter, VerificationSeries } from "@keyraft/core";
import { answerAnalytics, type AnalyticsPeerLink } from "../analytics/cluster-peers.js";
import { RaftNodeError } from "@keyraft/raft";
import type { CounterReply, CounterRequest, CounterTransport } from "../counters/ratelimit/wire.js";
import { ForwardedSpendUnknown, type CreditTransport, type ForwardedSpendReply } from "../counters/credits/forward.js";

export interface ClusterNodeOptions {
  config: ClusterConfig;
  /** Directory of the Raft LevelDB database. */
  raftDir: string;
  machine: ReplicatedStateMachine<KeyCommand, CommandOutcome>;
  /** Snapshot + compaction every this many applied entries. */
  snapshotEntries: number;
  /** Also snapshot + compact once the entries since the last snapshot carry this many bytes (0: never by bytes). */
  snapshotBytes: number;
  /** Most admin writes waiting at once on this node. */
  pendingMax: number;
  logger: Logger;
  nowMs(): number;
  onFatal(error: unknown): void;
}

/** What GET /v1/cluster.status answers. */
export interface ClusterStatus {
  nodeId: NodeId;
  role: string;
  term: number;
  leader: NodeId | null;
  commitIndex: number;
  appliedIndex: number;
  lastIndex: number;
  snapshotIndex: number;
  stalenessMs: number;
  maxStalenessMs: number;
  stale: boolean;
  stalePolicy: string;
  voters: NodeId[];
  learners: NodeId[];
  /** Every other member: its lag as the leader sees it (null when the leader could not be asked). */
  peers: {
    id: NodeId;
    address: string | null;
    voter: boolean;
    match: number | null;
    lag: number | null;
    connected: boolean | null;
    state: string | null;
  }[];
  pendingWrites: number;
  /** This node's lag behind the leader's last index, as the leader sees it (null when unknown). */
  selfLag: number | null;
}

const promoteIntervalMs = 200;
/**
 * A node that is not serving starts to after a read-index probe completes within this (capped at
 * the staleness bound): it applied the leader's commit index of at most this long ago
 * (staleness.ts). A probe takes a heartbeat round, a few ms, on a node that keeps up.
 */
const caughtUpProbeMsMax = 2_000;
const retryDelayMs = 25;
/** A follower's status asks the leader for the peers' progress, waiting at most this long. */
const progressAskTimeoutMs = 500;
/**
 * A follower asks the leader for progress at most once per this interval: statuses in between
 * reuse the last answer (or share the one in flight), so status requests never cost one RPC each.
 */
export const progressCacheMs = 1000;

type LeaderProgress = Record<NodeId, PeerProgress>;

export class ClusterNode {
  readonly raft: RaftNode;
  readonly commandLog: ClusterCommandLog;
  readonly staleness: StalenessMonitor;
  readonly applyTimes = new ApplyTimes();
  /** Forwarded verifications waiting for this node to apply the forwarding node's index. */
  private readonly appliedWaiters = new AppliedWaiters();
  /** Append, fsync and snapshot durations, measured around the storage (GET /metrics). */
  readonly raftTimings = new RaftTimings();
  private readonly rpc: ClusterRpc;
  /** The leader's proposals: this node's writes and the forwarded ones of one loop turn in one entry. */
  private readonly proposer: TurnBatcher<{ index: number }>;
  private readonly replicated: ReplicatedKeyMachine;
  private readonly addresses = new Map<NodeId, string>();
  private promoter: NodeJS.Timeout | null = null;
  private rpcSweep: NodeJS.Timeout | null = null;
  private promoting = false;
  /**
   * Whether this node's gateway has started serving (markServing). Until then it tells a leader
   * asking what it applied that it is starting: its start (restoring counters, the credit journal,
   * compiling the HTTP routes) takes whole seconds of the loop at a million keys, and a learner
   * promoted meanwhile stalled for 0.9 s as a voter and cost a two-voter cluster its leader.
   */
  private serving = false;
  private learnerPromoter: LearnerPromoter | null = null;
  /** The leader's last progress answer (progressCacheMs), and the ask in flight. */
  private progressCache: { leader: NodeId; atMs: number; progress: LeaderProgress | null } | null = null;
  private progressAsk: Promise<LeaderProgress | null> | null = null;
  /** Progress RPCs this node sent for its status (cluster.metrics: statusProgressAsks). */
  private progressAsks = 0;
  /** This node's analytics for a peer's query (op "analytics"); null until the app is built. */
  private analyticsSource: ((filter: VerificationFilter) => VerificationSeries[]) | null = null;
  private countersHandler: ((from: NodeId, request: CounterRequest) => Promise<CounterReply>) | null = null;
  private creditsHandler: ((keyId: string, cost: number) => Promise<ForwardedSpendReply>) | null = null;

  private constructor(
    private readonly options: ClusterNodeOptions,
    storage: LevelStorage,
  ) {
    const { config, logger } = options;
    const origin = `${config.nodeId}/${randomBytes(8).toString("hex")}`;
    for (const peer of config.peers) if (peer.port !== 0) this.addresses.set(peer.id, peerUrl(peer));
    let commandLog: ClusterCommandLog | null = null;
    this.replicated = new ReplicatedKeyMachine(options.machine, {
      origin,
      onOwnApplied: (seq, outcome) => commandLog?.onOwnApplied(seq, outcome),
      onPeer: (id, url) => this.onPeerAddress(id, url),
      onApplied: (index) => {
        this.applyTimes.record(index, performance.timeOrigin + performance.now());
        this.appliedWaiters.applied(index);
      },
      onSnapshotStarted: () => this.raftTimings.snapshotStarted(),
    });
    this.raftTimings.observeStorage(storage);
    const self = config.peers.find((peer) => peer.id === config.nodeId);
    // A one-member cluster has no peers to authenticate: a random secret nobody knows.
    const secret = config.secret ?? randomBytes(32);
    const voters = config.join ? [] : config.peers.map((peer) => peer.id);
    this.raft = new RaftNode({
      id: config.nodeId,
      storage,
      stateMachine: this.replicated,
      voters,
      // Inside the Raft data directory, so wiping it gives the node a new incarnation its peers refuse.
      identity: {
        store: new IdentityFile(join(options.raftDir, "IDENTITY.json")),
        cluster: config.join ? "" : foundingClusterId(voters, secret),
      },
      transport: {
        secret,
        ...(config.previousSecret === null ? {} : { previousSecret: config.previousSecret }),
        // Read at start: a missing or unreadable file fails the start with its path.
        ...(config.tls === null
          ? {}
          : {
              tls: {
                cert: readFileSync(config.tls.certFile),
                key: readFileSync(config.tls.keyFile),
                ca: readFileSync(config.tls.caFile),
              },
            }),
        host: config.raftListenHost,
        port: self?.port ?? 0,
        peers: Object.fromEntries(
          config.peers.filter((peer) => peer.id !== config.nodeId).map((peer) => [peer.id, peerUrl(peer)]),
        ),
      },
      tickMs: config.tickMs,
      electionTicks: config.electionTicks,
      heartbeatTicks: config.heartbeatTicks,
      snapshotEntries: options.snapshotEntries,
      snapshotBytes: options.snapshotBytes,
      requestTimeoutMs: config.requestTimeoutMs,
      pendingProposalsMax: Math.max(options.pendingMax, 1024),
      logger: logger.child({ component: "raft" }),
      onFatal: options.onFatal,
      // The application channel (forwarded writes, membership, counters, analytics) rides the
      // authenticated Raft connection; RPC payloads never reach the Raft core.
      onAppMessage: (from: NodeId, payload: Uint8Array) => this.rpc.receive(from, payload),
    });
    const raftNode = this.raft;
    this.rpc = new ClusterRpc(
      { send: (to, payload) => raftNode.sendAppMessage(to, payload) },
      { pendingMax: options.pendingMax, timeoutMs: config.requestTimeoutMs },
    );
    this.rpc.serve((from, request) => this.serve(from, request));
    const raft = this.raft;
    const proposalsMax = Math.max(options.pendingMax, 1024);
    this.proposer = new TurnBatcher(
      (_key, data) => raft.propose(data),
      proposalsMax,
      () =>
        new RaftNodeError("RAFT_ERR_PENDING_FULL", "too many proposals waiting for the next entry", {
          leader: raft.status().leader,
        }),
    );
    commandLog = new ClusterCommandLog({
      raft: this.batchedRaft(),
      rpc: this.rpc,
      origin,
      appliedIndex: () => this.replicated.appliedIndex,
      pendingMax: options.pendingMax,
      timeoutMs: config.requestTimeoutMs,
      retryDelayMs,
      nowMs: options.nowMs,
    });
    this.commandLog = commandLog;
    this.staleness = new StalenessMonitor({
      readIndex: () => raft.readIndex(),
      // Monotonic: a wall-clock step (NTP) must not make a stale node look fresh.
      nowMs: () => performance.now(),
      probeIntervalMs: Math.max(10, Math.min(100, Math.floor(config.maxStalenessMs / 10))),
      maxStalenessMs: config.maxStalenessMs,
      caughtUpProbeMsMax: Math.min(config.maxStalenessMs, caughtUpProbeMsMax),
    });
  }

  static async open(options: ClusterNodeOptions): Promise<ClusterNode> {
    const storage = await LevelStorage.open({
      path: options.raftDir,
      keepEntries: options.config.keepEntries,
      keepBytes: options.config.keepBytes,
      snapshotPieceBytes: options.config.snapshotPieceBytes,
    });
    return new ClusterNode(options, storage);
  }

  get nodeId(): NodeId {
    return this.options.config.nodeId;
  }

  get raftPort(): number {
    return this.raft.port;
  }

  async start(): Promise<void> {
    await this.raft.start();
    this.staleness.start();
    this.promoter = setInterval(() => void this.promote(), promoteIntervalMs);
    this.promoter.unref();
    this.rpcSweep = setInterval(() => this.rpc.expire(this.options.nowMs()), 100);
    this.rpcSweep.unref();
  }

  /** Resolves once this node has been confirmed fresh (a completed read-index), or rejects after `timeoutMs`. */
  async waitFresh(timeoutMs: number): Promise<void> {
    const deadline = this.options.nowMs() + timeoutMs;
    while (!this.staleness.everConfirmed) {
      if (this.options.nowMs() > deadline)
        throw new Error(`no leader backed by a quorum answered within ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  isLeader(): boolean {
    return this.leaderId() === this.nodeId;
  }

  /** Adds a node (runs on the leader; forwarded there from any member). */
  addNode(id: NodeId, url: string): Promise<RpcResult> {
    return this.onLeader({ op: "addNode", id, url });
  }

  removeNode(id: NodeId): Promise<RpcResult> {
    return this.onLeader({ op: "removeNode", id });
  }

  /** status(), with the peers' progress asked from the leader when this node is a follower. */
  async statusWithProgress(): Promise<ClusterStatus> {
    const local = this.status();
    if (local.role === "leader" || local.leader === null) return local;
    const progress = await this.leaderProgress(local.leader);
    if (progress === null) return local;
    return {
      ...local,
      peers: local.peers.map((peer) => {
        const seen = progress[peer.id];
        return seen === undefined
          ? peer
          : { ...peer, match: seen.match, lag: seen.lag, connected: seen.connected, state: seen.state };
      }),
      selfLag: progress[this.nodeId]?.lag ?? null,
    };
  }

  /** The leader's view of the peers' progress: cached for progressCacheMs, one ask in flight at most. */
  private leaderProgress(leader: NodeId): Promise<LeaderProgress | null> {
    const nowMs = this.options.nowMs();
    const cached = this.progressCache;
    if (cached !== null && cached.leader === leader && nowMs - cached.atMs < progressCacheMs)
      return Promise.resolve(cached.progress);
    if (this.progressAsk !== null) return this.progressAsk;
    this.progressAsks += 1;
    let timer: NodeJS.Timeout | undefined;
    const ask = Promise.race([
      this.rpc.call(leader, { op: "progress" }, nowMs).catch(() => null),
      new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), progressAskTimeoutMs))),
    ]).then((answer) => {
      clearTimeout(timer);
      const progress = answer === null || !answer.ok || answer.progress === undefined ? null : answer.progress;
      this.progressCache = { leader, atMs: this.options.nowMs(), progress };
      this.progressAsk = null;
      return progress;
    });
    this.progressAsk = ask;
    return ask;
  }

  /** The Raft driver's counters (GET /metrics reads them at scrape time). */
  raftCounters(): NodeMetrics {
    return this.raft.metrics();
  }

  /** Counters for diagnostics and benchmarks (GET /v1/cluster.metrics). */
  metrics(): Record<string, unknown> {
    return {
      nodeId: this.nodeId,
      raft: this.raft.metrics(),
      transport: this.raft.transportStats(),
      proposals: { entries: this.proposer.groupsSent, writes: this.proposer.itemsSent },
      forwarded: this.commandLog.forwarded,
      statusProgressAsks: this.progressAsks,
    };
  }

  status(): ClusterStatus {
    const raft = this.raft.status();
    const { config } = this.options;
    const members = [...raft.conf.voters, ...raft.conf.learners].filter((id) => id !== this.nodeId);
    const stalenessMs = this.staleness.stalenessMs();
    return {
      nodeId: this.nodeId,
      role: raft.role,
      term: raft.term,
      leader: raft.leader === "" ? null : raft.leader,
      commitIndex: raft.commit,
      appliedIndex: raft.applied,
      lastIndex: raft.lastIndex,
      snapshotIndex: raft.snapshotIndex,
      stalenessMs,
      maxStalenessMs: config.maxStalenessMs,
      stale: this.staleness.isStale(),
      stalePolicy: config.stalePolicy,
      voters: raft.conf.voters,
      learners: raft.conf.learners,
      peers: members.map((id) => peerStatus(id, raft, this.addresses.get(id) ?? null)),
      pendingWrites: this.commandLog.pending,
      selfLag: raft.role === "leader" ? 0 : null,
    };
  }

  /**
   * A leader that is about to stop hands its leadership to the voter that is most caught up and
   * connected, and waits for it to lead (at most two election timeouts): a planned stop then costs
   * the cluster a round trip instead of an election timeout without a leader, during which
   * followers' replicas grow stale and writes wait. Returns the new leader, or null when this node
   * did not lead, had no voter to hand over to, or the hand-over did not finish in time (the stop
   * goes on as a crash would, and the others elect a leader).
   */
  async handOffLeadership(): Promise<NodeId | null> {
    const status = this.raft.status();
    if (status.role !== "leader") return null;
    const candidates = status.conf.voters
      .filter((id) => id !== this.nodeId && status.peers[id]?.connected === true)
      .sort((a, b) => status.peers[a]!.lag - status.peers[b]!.lag || (a < b ? -1 : a > b ? 1 : 0));
    const target = candidates[0];
    if (target === undefined) return null;
    const { tickMs, electionTicks } = this.options.config;
    const waitMs = 2 * tickMs * electionTicks;
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), waitMs);
    });
    const handedOver = this.raft.transferLeadership(target).then(
      () => true,
      () => false,
    );
    const done = await Promise.race([handedOver, timedOut]);
    clearTimeout(timer);
    this.options.logger.info(
      { id: this.nodeId, to: target, handedOver: done, waitMs },
      done ? "cluster node: leadership handed over before stopping" : "cluster node: leadership hand-over timed out",
    );
    return done ? target : null;
  }

  async close(): Promise<void> {
    if (this.promoter !== null) clearInterval(this.promoter);
    if (this.rpcSweep !== null) clearInterval(this.rpcSweep);
    this.staleness.stop();
    await this.commandLog.close();
    this.rpc.close();
    await this.raft.stop();
  }

  private async onLeader(request: RpcRequest): Promise<RpcResult> {
    const deadline = this.options.nowMs() + this.options.config.requestTimeoutMs;
    for (;;) {
      const leader = this.raft.status().leader;
      let result: RpcResult;
      if (leader === "") result = { ok: false, retry: true, message: "no leader is known" };
      else if (leader === this.nodeId) result = await this.serveLocally(request);
      else {
        try {
          result = await this.rpc.call(leader, request, this.options.nowMs());
        } catch (error) {
          return {
            ok: false,
            retry: false,
            message: `no answer from the leader ${leader}: ${(error as Error).message}`,
          };
        }
      }
      if (result.ok || !result.retry || this.options.nowMs() + retryDelayMs >= deadline) return result;
      await new Promise((resolve) => setTimeout(resolve, retryDelayMs));
    }
  }

  /** The cluster rate limits' view of the cluster (counters/ratelimit): membership and calls to any member. */
  counterTransport(): CounterTransport {
    return {
      nodeId: this.nodeId,
      voters: () => this.raft.status().conf.voters,
      appliedIndex: () => this.replicated.appliedIndex,
      waitApplied: (index, timeoutMs) => this.appliedWaiters.waitFor(index, timeoutMs),
      call: async (peer, request) => {
        const result = await this.rpc.call(peer, { op: "counters", m: request }, this.options.nowMs());
        if (result.ok && result.counters !== undefined) return result.counters;
        if (!result.ok && result.retry) return "notSent";
        throw new Error(result.ok ? "no counters reply" : result.message);
      },
      serve: (handler) => {
        this.countersHandler = handler;
      },
    };
  }

  /** Answers peers' analytics queries from `select` (this node's recorder), and asks theirs through the link. */
  analyticsPeers(select: (filter: VerificationFilter) => VerificationSeries[]): AnalyticsPeerLink {
    this.analyticsSource = select;
    return {
      members: () => {
        const { conf } = this.raft.status();
        return [...conf.voters, ...conf.learners].filter((id) => id !== this.nodeId);
      },
      ask: (peer, filter) => this.rpc.call(peer, { op: "analytics", filter }, this.options.nowMs()),
    };
  }

  /** Credit spends forwarded to this node as the owner of a key's last credits (counters/credits). */
  creditTransport(): CreditTransport {
    return {
      call: async (peer, keyId, cost) => {
        let result: RpcResult;
        try {
          result = await this.rpc.call(peer, { op: "credits", keyId, cost }, this.options.nowMs());
        } catch (error) {
          // Sent, and no answer before the deadline: the owner may have spent.
          throw new ForwardedSpendUnknown(peer, error instanceof Error ? error.message : String(error));
        }
        if (result.ok && result.credits !== undefined) return result.credits;
        // Not sent (no connection, too many waiting) or not served there: nothing was spent.
        if (!result.ok && (result.retry || result.overloaded === true))
          return { t: "undecided", message: result.message };
        throw new ForwardedSpendUnknown(peer, result.ok ? "no credits reply" : result.message);
      },
      serve: (handler) => {
        this.creditsHandler = handler;
      },
    };
  }

  private async serveCredits(keyId: string, cost: number): Promise<RpcResult> {
    const handler = this.creditsHandler;
    if (handler === null) return { ok: false, retry: true, message: `${this.nodeId} does not serve credits yet` };
    return { ok: true, index: 0, credits: await handler(keyId, cost) };
  }

  private async serveCounters(from: NodeId, request: CounterRequest): Promise<RpcResult> {
    const handler = this.countersHandler;
    const counters: CounterReply =
      handler === null
        ? { t: "refused", message: `${this.nodeId} does not serve rate limits yet` }
        : await handler(from, request);
    return { ok: true, index: 0, counters };
  }

  private serve(from: NodeId, request: RpcRequest): Promise<RpcResult> {
    if (request.op === "counters") return this.serveCounters(from, request.m);
    if (request.op === "analytics") return Promise.resolve(answerAnalytics(this.analyticsSource, request.filter));
    if (request.op === "credits") return this.serveCredits(request.keyId, request.cost);
    if (request.op === "applied") return Promise.resolve(this.appliedAnswer());
    if (!this.isLeader()) return Promise.resolve({ ok: false, retry: true, message: notLeaderMessage(this.nodeId) });
    return this.serveLocally(request);
  }

  private serveLocally(request: RpcRequest): Promise<RpcResult> {
    switch (request.op) {
      case "propose":
        // A forwarded command's time is clamped to this leader's clock (command-time.ts).
        return proposeLocally(this.batchedRaft(), clampCommandTimes(request.data, this.options.nowMs()));
      case "addNode":
        return addNodeOnLeader(this.membershipRaft(), request.id, request.url);
      case "removeNode":
        return removeNodeOnLeader(this.membershipRaft(), request.id);
      case "counters":
        return this.serveCounters(this.nodeId, request.m);
      case "analytics":
        return Promise.resolve(answerAnalytics(this.analyticsSource, request.filter));
      case "credits":
        return this.serveCredits(request.keyId, request.cost);
      case "applied":
        return Promise.resolve(this.appliedAnswer());
      case "progress": {
        const status = this.raft.status();
        const progress: Record<NodeId, PeerProgress> = {};
        for (const [id, peer] of Object.entries(status.peers))
          progress[id] = { match: peer.match, lag: peer.lag, connected: peer.connected, state: peer.state };
        progress[this.nodeId] = { match: status.lastIndex, lag: 0, connected: true, state: "leader" };
        return Promise.resolve({ ok: true, index: status.commit, progress });
      }
      default: {
        const unknown: never = request;
        return Promise.resolve({ ok: false, retry: false, message: `unknown request ${String(unknown)}` });
      }
    }
  }

  /** The Raft link of writes: proposals go through the turn batcher. */
  private batchedRaft() {
    const raft = this.raft;
    return {
      id: this.nodeId,
      leader: () => this.leaderId(),
      propose: (data: Uint8Array) => this.proposer.submit("", data),
    };
  }

  /** The known leader ("" if none), without building a whole status (it is asked on every write). */
  private leaderId(): NodeId {
    return this.raft.leaderId;
  }

  private membershipRaft() {
    const raft = this.raft;
    return {
      id: this.nodeId,
      leader: () => raft.status().leader,
      propose: (data: Uint8Array) => raft.propose(data),
      status: () => raft.status(),
      addLearner: (id: NodeId, url?: string) => raft.addLearner(id, url),
      promote: (id: NodeId) => raft.promote(id),
      remove: (id: NodeId) => raft.remove(id),
    };
  }

  private async promote(): Promise<void> {
    if (this.promoting) return;
    if (!this.isLeader()) {
      this.learnerPromoter?.forget(); // a leader again counts its passes afresh
      return;
    }
    this.promoting = true;
    try {
      this.learnerPromoter ??= new LearnerPromoter(this.membershipRaft(), (id) => this.learnerApplied(id));
      const promoted = await this.learnerPromoter.pass();
      if (promoted !== null)
        this.options.logger.info({ nodeId: promoted }, "cluster: learner caught up and promoted to voter");
    } finally {
      this.promoting = false;
    }
  }

  /** The gateway serves requests now: a leader may count this node as caught up (see `serving`). */
  markServing(): void {
    this.serving = true;
  }

  private appliedAnswer(): RpcResult {
    return appliedAnswer(this.nodeId, this.serving, this.replicated.appliedIndex);
  }

  /** What a learner's state machine applied (membership.ts, LearnerApplied). */
  private async learnerApplied(id: NodeId): Promise<number | "unknown" | null> {
    const startMs = performance.now();
    const answer = await this.rpc.call(id, { op: "applied" }, this.options.nowMs()).catch(() => null);
    return learnerAppliedOf(id, answer, performance.now() - startMs);
  }

  private onPeerAddress(id: NodeId, url: string | null): void {
    if (url === null) {
      this.addresses.delete(id);
      return;
    }
    this.addresses.set(id, url);
    this.raft.setPeerAddress(id, url);
  }
}

function peerStatus(id: NodeId, raft: NodeStatus, address: string | null): ClusterStatus["peers"][number] {
  const progress = raft.peers[id];
  return {
    id,
    address,
    voter: raft.conf.voters.includes(id),
    match: progress?.match ?? null,
    lag: progress?.lag ?? null,
    connected: progress?.connected ?? null,
    state: progress?.state ?? null,
  };
}
