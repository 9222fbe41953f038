import { RaftError } from "../core/errors.js";
import { Xoshiro128 } from "../core/prng.js";
import type { RaftConfig } from "../core/config.js";
import type { ConfChange, NodeId } from "../core/types.js";
import { SafetyChecker, SafetyViolation } from "./checker.js";
import { SimNetwork, type LinkShape, type NetworkFaults } from "./network.js";
import { contextKey, SimNode } from "./sim-node.js";

export interface SimOptions {
  seed: number;
  /** Steps (ticks) of the fault phase. */
  steps: number;
  /** Steps allowed after healing for a leader to commit a new proposal. Default 60 election timeouts + 2 per backlog entry. */
  livenessSteps?: number;
  /** Receives a line per notable event (crash, partition, leader, conf change ...). */
  trace?: (line: string) => void;
}

export interface SimStats {
  nodes: number;
  /** Founding voters (one- and two-voter clusters included). */
  voters: number;
  /** Whether links were byte-bounded and rate-limited (the transport's queue on a slow link). */
  slowLinks: boolean;
  terms: number;
  appliedMax: number;
  crashes: number;
  /** Crashes that lost a write whose entries a leader had already sent (appends go out before the write). */
  crashesLosingSentEntries: number;
  partitions: number;
  confChanges: number;
  snapshotsTaken: number;
  readsChecked: number;
  pauses: number;
  /** Messages held past a partition, a crash or an election timeout, then delivered. */
  messagesHeld: number;
  /** Messages the byte-bounded links dropped because their queue was full. */
  linkDropped: number;
  /** Steps the liveness phase took for every member to catch up with the committed proposal. */
  catchUpSteps: number;
  messagesSent: number;
  messagesDropped: number;
  livenessSteps: number;
}

export interface SimResult {
  seed: number;
  ok: boolean;
  failure?: string;
  stats: SimStats;
}

const electionTicks = 10;

/** Per-seed knobs, all drawn from the seed so a run is fully described by (seed, steps). */
function drawParameters(random: Xoshiro128) {
  const base = {
    voters: 3 + random.intBelow(3),
    spares: random.intBelow(3),
    heartbeatTicks: 1 + random.intBelow(2),
    preVote: random.chance(0.8),
    checkQuorum: random.chance(0.8),
    maxInflightMsgs: 1 + random.intBelow(8),
    maxSizePerMsgBytes: random.chance(0.3) ? 1 : 8 + random.intBelow(128),
    maxSnapshotChunkBytes: 64 + random.intBelow(512),
    snapshotPaddingBytes: random.intBelow(2048),
    /** Entries a snapshot keeps before its index (0: compact everything it covers). */
    keepEntries: random.chance(0.5) ? 0 : random.intBelow(20),
    writeLatencyMax: random.intBelow(3),
    faults: {
      dropRate: random.nextFloat() * 0.15,
      duplicateRate: random.nextFloat() * 0.05,
      delayMax: random.intBelow(5),
      holdRate: 0,
      longDelayMax: 0,
    } as NetworkFaults,
    proposeRate: 0.1 + random.nextFloat() * 0.4,
    crashRate: random.nextFloat() * 0.02,
    /** Leader churn: crashing or cutting off the leader is what exposes commitment bugs (Figure 8). */
    leaderFaultRate: random.nextFloat() * 0.1,
    partitionRate: random.nextFloat() * 0.02,
    confChangeRate: random.nextFloat() * 0.03,
    snapshotRate: random.nextFloat() * 0.05,
  };
  // Drawn after the knobs above, so those keep their values per seed.
  if (random.chance(0.15)) base.voters = 1 + random.intBelow(2); // one- and two-voter clusters
  // With neither pre-vote nor check-quorum, a voter removed while cut off (it never learns it)
  // campaigns forever and deposes every leader (Raft dissertation 4.2.3): no liveness to check.
  if (!base.preVote && !base.checkQuorum) base.checkQuorum = true;
  if (random.chance(0.4)) {
    // Messages held across partitions and restarts, for longer than an election timeout.
    base.faults.holdRate = random.nextFloat() * 0.3;
    base.faults.longDelayMax = electionTicks * (1 + random.intBelow(4));
  }
  /** The transport's byte-bounded per-peer queue on a slow link, with snapshots many chunks long. */
  const links: LinkShape | null = random.chance(0.2)
    ? { bytesMax: (8 + random.intBelow(24)) << 10, bytesPerStep: 256 + random.intBelow(4096) }
    : null;
  if (links !== null || random.chance(0.1)) base.snapshotPaddingBytes = 8_192 + random.intBelow(24 << 10);
  return {
    ...base,
    links,
    /** Snapshot bytes in flight per follower: a quarter of the link's queue (the driver's rule), else the default. */
    maxSnapshotInflightBytes: links === null ? undefined : Math.max(1024, links.bytesMax >> 2),
    /** Long pauses: a node stops (a GC pause, a stalled VM) for one to four election timeouts. */
    pauseRate: random.nextFloat() * 0.01,
  };
}

/** One run of the deterministic simulator: a fault phase checked after every step, then a liveness phase. */
export class Simulation {
  private readonly random: Xoshiro128;
  private readonly params: ReturnType<typeof drawParameters>;
  private readonly nodes = new Map<NodeId, SimNode>();
  private readonly network: SimNetwork;
  private readonly checker = new SafetyChecker();
  private readonly trace: (line: string) => void;
  private step = 0;
  /** Until this step, the next leader caught between sending its appends and finishing its write crashes (-1: off). */
  private crashMidWriteUntilStep = -1;
  private proposalCounter = 0;
  private readonly stats: SimStats;
  private readonly leaderSeen = new Map<NodeId, number>();

  constructor(private readonly options: SimOptions) {
    this.random = new Xoshiro128(options.seed);
    this.params = drawParameters(this.random);
    this.trace = options.trace ?? (() => {});
    this.network = new SimNetwork(new Xoshiro128(this.random.nextUint32()), this.params.faults, this.params.links);
    const voterIds = Array.from({ length: this.params.voters }, (_, i) => `n${i + 1}`);
    const spareIds = Array.from({ length: this.params.spares }, (_, i) => `n${this.params.voters + i + 1}`);
    for (const id of [...voterIds, ...spareIds]) {
      const nodeRandom = new Xoshiro128(this.random.nextUint32());
      const makeConfig = (): RaftConfig => this.nodeConfig(id, voterIds.includes(id) ? voterIds : []);
      this.nodes.set(id, new SimNode(id, makeConfig, nodeRandom, this.params.writeLatencyMax, this.params.keepEntries));
    }
    this.stats = {
      nodes: this.nodes.size,
      voters: this.params.voters,
      slowLinks: this.params.links !== null,
      terms: 0,
      appliedMax: 0,
      crashes: 0,
      crashesLosingSentEntries: 0,
      partitions: 0,
      confChanges: 0,
      snapshotsTaken: 0,
      readsChecked: 0,
      pauses: 0,
      messagesHeld: 0,
      linkDropped: 0,
      catchUpSteps: 0,
      messagesSent: 0,
      messagesDropped: 0,
      livenessSteps: 0,
    };
    this.trace(`seed ${options.seed} params ${JSON.stringify(this.params)}`);
  }

  private nodeConfig(id: NodeId, voters: NodeId[]): RaftConfig {
    const p = this.params;
    return {
      id,
      voters,
      electionTicks,
      heartbeatTicks: p.heartbeatTicks,
      preVote: p.preVote,
      checkQuorum: p.checkQuorum,
      maxInflightMsgs: p.maxInflightMsgs,
      maxSizePerMsgBytes: p.maxSizePerMsgBytes,
      maxSnapshotChunkBytes: p.maxSnapshotChunkBytes,
      ...(p.maxSnapshotInflightBytes === undefined ? {} : { maxSnapshotInflightBytes: p.maxSnapshotInflightBytes }),
      random: new Xoshiro128(this.random.nextUint32()),
    };
  }

  run(): SimResult {
    try {
      for (let i = 0; i < this.options.steps; i++) {
        this.injectFaults();
        this.advanceOneStep(true);
        this.maybeCrashLeaderMidWrite();
      }
      this.checkLiveness();
      return this.result(true);
    } catch (error) {
      const failure =
        error instanceof SafetyViolation
          ? error.message
          : `${error instanceof Error ? (error.stack ?? error.message) : String(error)}`;
      return this.result(false, `step ${this.step}: ${failure}`);
    }
  }

  private result(ok: boolean, failure?: string): SimResult {
    this.stats.appliedMax = this.checker.appliedMax;
    this.stats.messagesSent = this.network.sent;
    this.stats.messagesDropped = this.network.dropped;
    this.stats.messagesHeld = this.network.heldDelivered;
    this.stats.linkDropped = this.network.linkDropped;
    return failure === undefined
      ? { seed: this.options.seed, ok, stats: this.stats }
      : { seed: this.options.seed, ok, failure, stats: this.stats };
  }

  private advanceOneStep(randomTicks: boolean): void {
    this.step++;
    const isUp = (id: NodeId) => this.nodes.get(id)?.alive() ?? false;
    for (const message of this.network.deliverDue(this.step, isUp)) this.nodes.get(message.to)?.receive(message);
    for (const { from, to, snapshot } of this.network.unreachable) {
      if (this.random.chance(0.2)) this.nodes.get(from)?.reportUnreachable(to, snapshot);
    }
    this.network.unreachable = [];
    for (const node of this.nodes.values()) {
      node.run(this.step, randomTicks ? this.random.chance(0.95) : true, this.network, this.checker);
    }
    this.observeLeaders();
  }

  private observeLeaders(): void {
    for (const node of this.nodes.values()) {
      if (node.raw === null) continue;
      const status = node.raw.status();
      if (status.role !== "leader") continue;
      this.checker.observeLeader(node.id, status.term, node.storage);
      if (this.leaderSeen.get(node.id) !== status.term) {
        this.leaderSeen.set(node.id, status.term);
        this.stats.terms++;
        this.trace(`step ${this.step}: ${node.id} leader of term ${status.term} conf ${JSON.stringify(status.conf)}`);
      }
    }
  }

  private maybeCrashLeaderMidWrite(): void {
    if (this.step > this.crashMidWriteUntilStep) return;
    for (const node of this.nodes.values()) {
      if (node.raw === null || node.raw.status().role !== "leader" || !node.writingSentEntries()) continue;
      node.crash();
      this.stats.crashes++;
      this.stats.crashesLosingSentEntries++;
      this.crashMidWriteUntilStep = -1;
      this.trace(`step ${this.step}: crash leader ${node.id} mid-write (its appends already sent)`);
      return;
    }
  }

  private leader(): SimNode | null {
    let best: SimNode | null = null;
    let bestTerm = -1;
    for (const node of this.nodes.values()) {
      if (node.raw === null || node.busy()) continue;
      const status = node.raw.status();
      if (status.role === "leader" && status.term > bestTerm) {
        best = node;
        bestTerm = status.term;
      }
    }
    return best;
  }

  private pick<T>(items: readonly T[]): T | undefined {
    return items.length === 0 ? undefined : items[this.random.intBelow(items.length)];
  }

  private injectFaults(): void {
    const p = this.params;
    const all = [...this.nodes.values()];
    if (this.random.chance(p.proposeRate)) this.propose();
    if (this.random.chance(p.crashRate)) {
      const victim = this.pick(all.filter((n) => n.alive()));
      if (victim !== undefined) {
        if (victim.crash()) this.stats.crashesLosingSentEntries++;
        this.stats.crashes++;
        this.trace(`step ${this.step}: crash ${victim.id}`);
      }
    }
    if (this.random.chance(0.05)) {
      const dead = this.pick(all.filter((n) => !n.alive()));
      if (dead !== undefined) {
        dead.start();
        this.trace(`step ${this.step}: restart ${dead.id}`);
      }
    }
    if (this.random.chance(p.leaderFaultRate)) this.faultLeader();
    if (this.random.chance(p.partitionRate)) {
      const groups = new Map(all.map((n) => [n.id, this.random.intBelow(2)] as const));
      this.network.partition(groups);
      this.stats.partitions++;
      this.trace(`step ${this.step}: partition ${JSON.stringify([...groups])}`);
    }
    if (this.network.isPartitioned() && this.random.chance(0.02)) {
      this.network.heal();
      this.trace(`step ${this.step}: heal`);
    }
    if (this.random.chance(p.confChangeRate)) this.changeMembership();
    if (this.random.chance(p.snapshotRate)) this.takeSnapshot(this.pick(all));
    if (this.random.chance(0.005)) this.transferLeadership();
    if (this.random.chance(0.03)) this.startRead(this.pick(all));
    if (this.random.chance(p.pauseRate)) {
      const paused = this.pick(all.filter((n) => n.alive()));
      if (paused !== undefined) {
        const untilStep = this.step + electionTicks * (1 + this.random.intBelow(4));
        paused.pauseUntil(untilStep);
        this.stats.pauses++;
        this.trace(`step ${this.step}: pause ${paused.id} until step ${untilStep}`);
      }
    }
  }

  /** Crashes the leader, or cuts it off with at most one follower. */
  private faultLeader(): void {
    const leader = this.leader();
    if (leader === null) return;
    if (this.random.chance(0.5)) {
      // Half of the leader crashes wait for the worst moment: its appends are out, its own write is not done.
      if (this.random.chance(0.5)) {
        this.crashMidWriteUntilStep = this.step + 3 * electionTicks;
        return;
      }
      if (leader.crash()) this.stats.crashesLosingSentEntries++;
      this.stats.crashes++;
      this.trace(`step ${this.step}: crash leader ${leader.id}`);
      return;
    }
    const buddy = this.pick([...this.nodes.keys()].filter((id) => id !== leader.id));
    const groups = new Map(
      [...this.nodes.keys()].map(
        (id) => [id, id === leader.id || (id === buddy && this.random.chance(0.5)) ? 1 : 0] as const,
      ),
    );
    this.network.partition(groups);
    this.stats.partitions++;
    this.trace(`step ${this.step}: cut off leader ${JSON.stringify([...groups])}`);
  }

  private propose(): { index: number; term: number } | null {
    const leader = this.leader();
    if (leader?.raw == null) return null;
    const counter = ++this.proposalCounter;
    const data = new Uint8Array([
      counter & 0xff,
      (counter >> 8) & 0xff,
      (counter >> 16) & 0xff,
      this.random.intBelow(256),
    ]);
    try {
      return leader.raw.propose(data);
    } catch (error) {
      if (error instanceof RaftError) return null;
      throw error;
    }
  }

  private changeMembership(): void {
    const leader = this.leader();
    if (leader?.raw == null) return;
    const conf = leader.raw.confState();
    const outsiders = [...this.nodes.keys()].filter((id) => !conf.voters.includes(id) && !conf.learners.includes(id));
    const choices: ConfChange[] = [
      ...outsiders.map((node): ConfChange => ({ type: "addLearner", node })),
      ...conf.learners.map((node): ConfChange => ({ type: "promote", node })),
      ...conf.learners.map((node): ConfChange => ({ type: "remove", node })),
      ...(conf.voters.length > 2 ? conf.voters.map((node): ConfChange => ({ type: "remove", node })) : []),
    ];
    const change = this.pick(choices);
    if (change === undefined) return;
    try {
      leader.raw.proposeConfChange(change);
      this.stats.confChanges++;
      this.trace(`step ${this.step}: ${leader.id} proposes ${change.type} ${change.node}`);
    } catch (error) {
      if (!(error instanceof RaftError)) throw error;
    }
  }

  private takeSnapshot(node: SimNode | undefined): void {
    if (node?.raw == null || node.busy()) return;
    const index = node.app.appliedIndex;
    if (index < node.storage.firstIndex()) return;
    node.storage.createSnapshotSync(index, node.raw.confState(), node.app.encode(this.params.snapshotPaddingBytes));
    this.stats.snapshotsTaken++;
  }

  private transferLeadership(): void {
    const leader = this.leader();
    if (leader?.raw == null) return;
    const target = this.pick(leader.raw.confState().voters.filter((id) => id !== leader.id));
    if (target === undefined) return;
    leader.raw.transferLeadership(target);
    this.trace(`step ${this.step}: transfer ${leader.id} -> ${target}`);
  }

  private startRead(node: SimNode | undefined): void {
    if (node?.raw == null || node.busy()) return;
    const context = node.readContexts.next(); // as RaftNode makes them: id, per-process nonce, counter
    try {
      node.raw.readIndex(context);
      node.reads.set(contextKey(context), { context, appliedMaxAtStart: this.checker.appliedMax });
      this.stats.readsChecked++;
    } catch (error) {
      if (!(error instanceof RaftError)) throw error;
    }
  }

  /** After the faults heal, a leader must be elected and commit a new proposal within a bound. */
  private checkLiveness(): void {
    this.network.heal();
    this.network.faults = { dropRate: 0, duplicateRate: 0, delayMax: 1 };
    for (const node of this.nodes.values()) if (!node.alive()) node.start();
    this.trace(`step ${this.step}: healed; liveness phase`);
    // 60 election timeouts, plus time to replicate the uncommitted backlog left by the fault phase
    // (with a 1-entry message size and a 1-message window that is one round trip per entry).
    let backlog = 0;
    for (const node of this.nodes.values()) {
      const status = node.raw?.status();
      if (status !== undefined) backlog = Math.max(backlog, status.lastIndex - status.commit);
    }
    // A voter may need a snapshot before a quorum can commit again.
    const bound = this.options.livenessSteps ?? 60 * electionTicks + 2 * backlog + this.snapshotTransferSteps();
    let proposal: { index: number; term: number; leader: NodeId } | null = null;
    for (let i = 0; i < bound; i++) {
      this.advanceOneStep(false);
      this.stats.livenessSteps = i + 1;
      const leader = this.leader();
      if (leader?.raw == null) continue;
      const term = leader.raw.status().term;
      if (proposal === null || proposal.term !== term || proposal.leader !== leader.id) {
        const id = this.propose();
        if (id !== null) proposal = { ...id, leader: leader.id };
        continue;
      }
      const applied = this.checker.appliedEntry(proposal.index);
      if (applied !== undefined && applied.term === proposal.term && leader.app.appliedIndex >= proposal.index) {
        this.checkCatchUp(proposal.index);
        return;
      }
      if (applied !== undefined && applied.term !== proposal.term) proposal = null; // lost; propose again
    }
    throw new SafetyViolation(`liveness: no leader committed a new proposal within ${bound} steps after healing`);
  }

  /** Steps a healed network needs to send the largest snapshot: a window per round trip, no faster than the link. */
  private snapshotTransferSteps(): number {
    const p = this.params;
    const snapshotBytes = p.snapshotPaddingBytes + 1024;
    const inflightBytes = p.maxSnapshotInflightBytes ?? snapshotBytes;
    const windowBytes = Math.max(
      p.maxSnapshotChunkBytes,
      Math.min(inflightBytes, p.maxSnapshotChunkBytes * p.maxInflightMsgs),
    );
    const linkSteps = p.links === null ? 0 : 4 * Math.ceil(snapshotBytes / p.links.bytesPerStep);
    return 6 * Math.ceil(snapshotBytes / windowBytes) + linkSteps;
  }

  /**
   * Not only "some leader commits": every member (voters and learners, however far behind, by log
   * or by snapshot) must apply `index` within a bound: a lagging follower or a new learner catches up.
   */
  private checkCatchUp(index: number): void {
    const p = this.params;
    let lastIndex = 0;
    for (const node of this.nodes.values()) lastIndex = Math.max(lastIndex, node.raw?.status().lastIndex ?? 0);
    const snapshotSteps = this.snapshotTransferSteps();
    const bound = 60 * electionTicks + 4 * lastIndex + snapshotSteps;
    for (let i = 0; i < bound; i++) {
      const leader = this.leader();
      const conf = leader?.raw?.confState();
      if (conf !== undefined) {
        const members = [...conf.voters, ...conf.learners];
        const behind = members.filter((id) => (this.nodes.get(id)?.app.appliedIndex ?? 0) < index);
        if (behind.length === 0) {
          this.stats.catchUpSteps = i;
          return;
        }
      }
      this.advanceOneStep(false);
    }
    const conf = this.leader()?.raw?.confState();
    const members = conf === undefined ? [...this.nodes.keys()] : [...conf.voters, ...conf.learners];
    const behind = members.filter((id) => (this.nodes.get(id)?.app.appliedIndex ?? 0) < index);
    const progress = behind.map((id) => {
      const node = this.nodes.get(id);
      const status = node?.raw?.status();
      const progress = JSON.stringify(this.leader()?.raw?.status().progress[id] ?? null);
      return `${id}: ${progress} own ${JSON.stringify({ ...status, progress: undefined, conf: undefined })}`;
    });
    throw new SafetyViolation(
      `liveness: members ${behind.join(",")} did not apply ${index} within ${bound} steps (leader's view: ${progress.join("; ")})`,
    );
  }
}

export function runSimulation(options: SimOptions): SimResult {
  return new Simulation(options).run();
}
