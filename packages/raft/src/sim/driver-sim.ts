// The driver simulation: the real RaftNode (its inbox, deferred hard state, message coalescing,
// asynchronous snapshot writes, read waiters), not a loop written for the simulator, with a fake
// clock, a fake transport over the simulated network, and storage whose writes complete when the
// simulation says so and whose unsynced writes a crash loses. Safety is checked by the same
// SafetyChecker; reads are checked when RaftNode resolves them.

import { isDeepStrictEqual } from "node:util";
import { RaftError } from "../core/errors.js";
import type { Message } from "../core/messages.js";
import { Xoshiro128 } from "../core/prng.js";
import { joinSnapshotData } from "../core/snapshot-data.js";
import type {
  ConfState,
  Entry,
  HardState,
  NodeId,
  RaftStorage,
  RaftStorageWriter,
  Snapshot,
  SnapshotData,
  SnapshotDataReader,
  SnapshotInfo,
} from "../core/types.js";
import type { DriverClock } from "../driver/clock.js";
import type { DriverTransport } from "../driver/options.js";
import { MemoryIdentityStore } from "../driver/peer-identity.js";
import type { IdentityRefusal, PeerIdentity } from "../transport/handshake.js";
import type { StateMachine } from "../driver/state-machine.js";
import { RaftNodeError } from "../errors.js";
import { RaftNode } from "../node.js";
import type { TransportStats } from "../transport/transport.js";
import { SimApp } from "./app.js";
import { SafetyChecker, SafetyViolation } from "./checker.js";
import { SimNetwork } from "./network.js";
import { SimStorage } from "./sim-storage.js";

const tickMs = 10;
const electionTicks = 10;
/** Outstanding storage operations of one process; more would mean the driver issued overlapping writes without bound. */
const pendingWritesMax = 1_024;

export interface DriverSimOptions {
  seed: number;
  steps: number;
  trace?: (line: string) => void;
  /**
   * Whether nodes carry an identity (cluster, incarnation) checked in every handshake. Default true;
   * false shows what a wiped data directory does without it (the tests keep such seeds).
   */
  identityChecks?: boolean;
  /**
   * Whether nodes state their durable state (term, vote, last index) in the handshake, so that peers
   * can refuse a data directory rolled back behind what it told them. Default true; false is what a
   * node of an earlier release states (the tests keep seeds that fail without it).
   */
  rollbackChecks?: boolean;
}

export interface DriverSimResult {
  seed: number;
  ok: boolean;
  failure?: string;
  stats: {
    /** Voters of the cluster (one to five). */
    voters: number;
    /** Messages held across a partition or a crash (or delayed past an election timeout) and delivered later. */
    heldDelivered: number;
    terms: number;
    appliedMax: number;
    crashes: number;
    readsChecked: number;
    proposals: number;
    /** Crashes after which the node came back with an empty data directory (a new incarnation). */
    wipes: number;
    /** Starts that RaftNode refused (RAFT_ERR_IDENTITY_REFUSED): a peer knew another incarnation. */
    refusedStarts: number;
    /** Crashes after which the node came back on an older copy of its own data directory. */
    rollbacks: number;
    /** Starts refused, or running processes stopped, with RAFT_ERR_ROLLED_BACK. */
    rollbacksRefused: number;
  };
}

/** One timer list per process, over the simulation's shared time: a crash clears that process's timers. */
class ProcessClock implements DriverClock {
  private readonly timers = new Map<number, { callback: () => void; intervalMs: number; nextMs: number }>();
  private nextHandle = 1;

  constructor(private readonly time: { nowMs: number }) {}

  nowMs(): number {
    return this.time.nowMs;
  }

  setInterval(callback: () => void, intervalMs: number): unknown {
    const handle = this.nextHandle++;
    this.timers.set(handle, { callback, intervalMs, nextMs: this.time.nowMs + intervalMs });
    return handle;
  }

  clearInterval(handle: unknown): void {
    this.timers.delete(handle as number);
  }

  /** Fires every timer due by now (at most once per call: ticks do not pile up). */
  fireDue(): void {
    for (const timer of [...this.timers.values()]) {
      if (timer.nextMs > this.time.nowMs) continue;
      timer.nextMs += timer.intervalMs;
      timer.callback();
    }
  }

  clear(): void {
    this.timers.clear();
  }
}

/** What the handshake of a real connection does with identities (transport/handshake.ts), for the simulation to model. */
interface SimHandshake {
  identity?: () => PeerIdentity;
  checkIdentity?: (peer: NodeId, identity: PeerIdentity) => IdentityRefusal | null;
  onIdentityRefused?: (peer: NodeId, rolledBack: boolean) => void;
}

/** The transport RaftNode sees: sends go into the simulated network; the simulation delivers. */
class SimTransport implements DriverTransport {
  closed = false;

  constructor(
    private readonly id: NodeId,
    private readonly sim: DriverSimulation,
    readonly onMessage: (message: Message, incarnation: string) => void,
    readonly handshake: SimHandshake,
  ) {}

  start(): Promise<{ port: number }> {
    return Promise.resolve({ port: 0 });
  }

  send(messages: readonly { type: string; to: NodeId }[]): number {
    if (this.closed) return 0;
    for (const message of messages) this.sim.send(message as Message, this);
    return messages.length;
  }

  flushNow(): void {}

  addPeer(): void {}

  removePeer(): void {}

  isConnected(id: NodeId): boolean {
    return !this.closed && this.sim.reachable(this.id, id) && this.sim.accepted(this, id);
  }

  stats(): TransportStats {
    return {
      peers: {},
      refusedConnections: 0,
      authFailures: 0,
      identityRefusals: 0,
      rollbackRefusals: 0,
      invalidMessages: 0,
      droppedUnknownPeer: 0,
    };
  }

  close(): Promise<void> {
    this.closed = true;
    return Promise.resolve();
  }
}

/**
 * Storage of one process: reads go to the node's SimStorage; writes complete (in order) only when
 * the simulation completes them. A crash abandons the writes in flight (their promises never
 * settle, as the process is gone) and the SimStorage loses everything not synced.
 */
class ProcessStorage implements RaftStorage, RaftStorageWriter, SnapshotDataReader {
  private pending: { completeAtStep: number; run: () => void; resolve: () => void }[] = [];

  constructor(
    readonly durable: SimStorage,
    private readonly sim: DriverSimulation,
    private readonly id: NodeId,
  ) {}

  initialState(): { hardState: HardState; conf: ConfState } {
    return this.durable.initialState();
  }
  entries(lo: number, hi: number, maxBytes: number): Entry[] {
    return this.durable.entries(lo, hi, maxBytes);
  }
  term(index: number): number {
    return this.durable.term(index);
  }
  firstIndex(): number {
    return this.durable.firstIndex();
  }
  lastIndex(): number {
    return this.durable.lastIndex();
  }
  snapshot(): SnapshotInfo {
    return this.durable.snapshot();
  }
  readSnapshotData(index: number, offset: number, length: number): Promise<Uint8Array> {
    return this.durable.readSnapshotData(index, offset, length);
  }
  pinSnapshots(indexes: readonly number[]): void {
    this.durable.pinSnapshots(indexes);
  }

  append(entries: readonly Entry[], hardState: HardState | null, sync: boolean): Promise<void> {
    return this.enqueue(() => {
      this.durable.appendSync(entries, hardState, sync);
      this.sim.checker.observePersisted(this.id, entries, this.durable);
    });
  }
  applySnapshot(snapshot: Snapshot): Promise<void> {
    return this.enqueue(() => this.durable.applySnapshotSync(snapshot));
  }
  createSnapshot(index: number, conf: ConfState, data: SnapshotData): Promise<void> {
    const bytes = joinSnapshotData(data);
    return this.enqueue(() => this.durable.createSnapshotSync(index, conf, bytes));
  }
  compact(): Promise<void> {
    return Promise.resolve();
  }
  close(): Promise<void> {
    return Promise.resolve();
  }

  /** Completes the writes due at `step`, in the order they were issued. */
  completeDue(step: number): void {
    while (this.pending.length > 0 && (this.pending[0]?.completeAtStep ?? Infinity) <= step) {
      const write = this.pending.shift();
      write?.run();
      write?.resolve();
    }
  }

  abandon(): void {
    this.pending = [];
  }

  private enqueue(run: () => void): Promise<void> {
    if (this.pending.length >= pendingWritesMax)
      throw new Error(`${this.id}: more than ${pendingWritesMax} writes pending`);
    const last = this.pending[this.pending.length - 1]?.completeAtStep ?? 0;
    const completeAtStep = Math.max(last, this.sim.step + this.sim.writeLatency());
    return new Promise((resolve) => this.pending.push({ completeAtStep, run, resolve }));
  }
}

/**
 * The application: SimApp's digest. RaftNode hands it normal, non-empty entries only. Some applies
 * and installs take several steps (`later` says how many; the driver's loop goes on meanwhile): the
 * work happens when the simulation completes it, and a crash abandons it.
 */
class SimMachine implements StateMachine {
  readonly app = new SimApp();
  /** Calls in progress: the driver must never start one before the last finished. */
  private busy = false;

  constructor(
    private readonly id: NodeId,
    private readonly checker: SafetyChecker,
    private readonly later: (run: () => void) => Promise<void> | null,
  ) {}

  apply(entry: Entry): void | Promise<void> {
    return this.run(() => {
      this.app.appliedIndex = entry.index - 1; // empty and conf entries do not reach the machine
      this.app.apply(entry);
      this.checker.observeApplied(this.id, entry, this.app.digest);
    });
  }

  takeSnapshot(): Promise<Uint8Array> {
    if (this.busy) throw new Error(`${this.id}: takeSnapshot while an apply or install is in progress`);
    return Promise.resolve(this.app.encode(256)); // bytes handed over later: the asynchronous path
  }

  installSnapshot(snapshot: Snapshot): void | Promise<void> {
    return this.run(() => {
      const { appliedIndex, digest } = SimApp.decode(snapshot.data);
      this.app.appliedIndex = appliedIndex;
      this.app.digest = digest;
      if (this.checker.appliedEntry(appliedIndex) !== undefined)
        this.checker.observeSnapshotInstalled(this.id, appliedIndex, digest);
    });
  }

  private run(work: () => void): void | Promise<void> {
    if (this.busy) throw new Error(`${this.id}: a state machine call began before the previous one finished`);
    const pending = this.later(() => {
      work();
      this.busy = false;
    });
    if (pending === null) return work();
    this.busy = true;
    return pending;
  }
}

interface Process {
  id: NodeId;
  node: RaftNode;
  clock: ProcessClock;
  transport: SimTransport;
  storage: ProcessStorage;
  machine: SimMachine;
  /** Set once start() resolved (it installs the stored snapshot first, which may take steps). */
  started: boolean;
  /** State machine calls that take steps: run at `completeAtStep` (a crash abandons them). */
  machineWork: { completeAtStep: number; run: () => void; resolve: () => void }[];
}

export class DriverSimulation {
  readonly checker = new SafetyChecker();
  step = 0;
  private readonly random: Xoshiro128;
  /** Draws of the rolled-back-disk fault (copies and restores), apart from `random`. */
  private readonly rollbackRandom: Xoshiro128;
  private readonly network: SimNetwork;
  private readonly time = { nowMs: 1_000_000 };
  private readonly ids: NodeId[];
  private readonly disks = new Map<NodeId, SimStorage>();
  /** Each data directory's identity file (peer-identity.ts): wiped with the disk, kept across crashes. */
  private readonly identityStores = new Map<NodeId, MemoryIdentityStore>();
  /** Nodes whose data directory was wiped (at most one per run, in clusters of three voters or more). */
  private readonly wiped = new Set<NodeId>();
  /** Nodes restarted on an older copy of their data directory (at most one per run, and only where nothing was wiped), with the step of the copy. */
  private readonly rolledBack = new Map<NodeId, number>();
  /** The step of each node's last crash. */
  private readonly crashSteps = new Map<NodeId, number>();
  /** The last copy taken of each node's data directory (disk and identity file, as of one step). */
  private readonly backups = new Map<NodeId, { disk: SimStorage; identity: MemoryIdentityStore; step: number }>();
  /** Handshakes between two transports (by object), as a real connection would do once: accepted or not. */
  private readonly handshakes = new Map<SimTransport, Map<SimTransport, boolean>>();
  /** Who sent each message in flight, as stated then (a held message may outlive its sender's process). */
  private readonly senders = new WeakMap<
    Message,
    { transport: SimTransport; identity: PeerIdentity | null; receiverIncarnation: string | null }
  >();
  /** The incarnation of each peer a transport last connected to: what it queues is for that incarnation. */
  private readonly connectedIncarnations = new Map<SimTransport, Map<NodeId, string>>();
  private readonly processes = new Map<NodeId, Process>();
  private readonly failures: string[] = [];
  private readonly trace: (line: string) => void;
  private readonly writeLatencyMax: number;
  /** Share of state machine calls (applies, installs) that take 1..slowMachineStepsMax steps. */
  private readonly slowMachineRate: number;
  private readonly slowMachineStepsMax: number;
  private readonly stats = {
    voters: 0,
    heldDelivered: 0,
    terms: 0,
    appliedMax: 0,
    crashes: 0,
    readsChecked: 0,
    proposals: 0,
    wipes: 0,
    refusedStarts: 0,
    rollbacks: 0,
    rollbacksRefused: 0,
  };
  private readonly leaders = new Map<number, NodeId>();
  private proposalCounter = 0;

  constructor(private readonly options: DriverSimOptions) {
    this.random = new Xoshiro128(options.seed);
    this.rollbackRandom = new Xoshiro128((options.seed ^ 0x5bd1e995) >>> 0);
    this.trace = options.trace ?? (() => {});
    const voters = 1 + this.random.intBelow(5);
    this.ids = Array.from({ length: voters }, (_, i) => `n${i + 1}`);
    this.writeLatencyMax = this.random.intBelow(4);
    this.network = new SimNetwork(new Xoshiro128(this.random.nextUint32()), {
      dropRate: this.random.nextFloat() * 0.1,
      duplicateRate: this.random.nextFloat() * 0.03,
      delayMax: this.random.intBelow(4),
      holdRate: this.random.chance(0.5) ? this.random.nextFloat() * 0.2 : 0,
      longDelayMax: electionTicks * (1 + this.random.intBelow(3)),
    });
    for (const id of this.ids) {
      this.disks.set(id, new SimStorage(undefined, this.random.intBelow(10)));
      this.identityStores.set(id, new MemoryIdentityStore());
    }
    this.slowMachineRate = this.random.chance(0.5) ? this.random.nextFloat() * 0.3 : 0;
    // Up to three election timeouts: a follower installing or applying that long must not stall its loop.
    this.slowMachineStepsMax = 1 + this.random.intBelow(3 * electionTicks);
    this.trace(
      `seed ${options.seed}: ${voters} voters, write latency <= ${this.writeLatencyMax} steps, ` +
        `${(this.slowMachineRate * 100).toFixed(0)}% of state machine calls take up to ${this.slowMachineStepsMax} steps`,
    );
  }

  writeLatency(): number {
    return this.random.intBelow(this.writeLatencyMax + 1);
  }

  send(message: Message, from: SimTransport): void {
    this.senders.set(message, {
      transport: from,
      identity: from.handshake.identity?.() ?? null,
      receiverIncarnation: this.connectedIncarnations.get(from)?.get(message.to) ?? null,
    });
    this.network.send(message, this.step);
  }

  reachable(from: NodeId, to: NodeId): boolean {
    return this.processes.has(to) && this.network.connected(from, to);
  }

  /** Whether `from` and the running process of `to` accepted each other's identity (see handshake). */
  accepted(from: SimTransport, to: NodeId): boolean {
    const other = this.processes.get(to)?.transport;
    return other !== undefined && this.handshakes.get(from)?.get(other) === true;
  }

  /**
   * The identity check of a real connection's handshake, once per pair of processes that can reach
   * each other: each side checks the other's identity (recording a first incarnation durably), and
   * a side refused is told so, as the close code tells a real dialer.
   */
  private handshake(a: Process, b: Process): void {
    if (this.handshakes.get(a.transport)?.has(b.transport) === true) return;
    const identityOf = (p: Process) => p.transport.handshake.identity?.() ?? null;
    const check = (checker: Process, peer: Process): IdentityRefusal | null => {
      const identity = identityOf(peer);
      return identity === null ? null : (checker.transport.handshake.checkIdentity?.(peer.id, identity) ?? null);
    };
    const aRefuses = check(a, b);
    const bRefuses = check(b, a);
    if (bRefuses !== null) a.transport.handshake.onIdentityRefused?.(b.id, bRefuses.rolledBack);
    if (aRefuses !== null) b.transport.handshake.onIdentityRefused?.(a.id, aRefuses.rolledBack);
    const ok = aRefuses === null && bRefuses === null;
    if (ok)
      for (const [x, y] of [
        [a, b],
        [b, a],
      ] as const) {
        const incarnation = identityOf(y)?.incarnation;
        if (incarnation === undefined) continue;
        const row = this.connectedIncarnations.get(x.transport) ?? new Map<NodeId, string>();
        row.set(y.id, incarnation);
        this.connectedIncarnations.set(x.transport, row);
      }
    for (const [x, y] of [
      [a, b],
      [b, a],
    ] as const) {
      const row = this.handshakes.get(x.transport) ?? new Map<SimTransport, boolean>();
      row.set(y.transport, ok);
      this.handshakes.set(x.transport, row);
    }
    if (!ok) this.trace(`step ${this.step}: ${a.id} and ${b.id} refuse each other's identity`);
  }

  /**
   * A message is delivered only to the incarnation its sender was connected to (if any), and over an
   * accepted connection, or, from a process gone since, to a receiver that accepts who sent it.
   */
  private deliverable(message: Message, to: Process): boolean {
    const sender = this.senders.get(message);
    if (sender === undefined) return true;
    // Queued for another incarnation of the receiver: a real transport drops it when the new one connects.
    const incarnation = to.transport.handshake.identity?.().incarnation;
    if (sender.receiverIncarnation !== null && incarnation !== sender.receiverIncarnation) return false;
    const live = this.processes.get(message.from);
    if (live !== undefined && live.transport === sender.transport) return this.accepted(sender.transport, to.id);
    // From a process gone since: once the receiver accepted the sender's next process, the real
    // transport has replaced the old connection with the new one, and nothing more arrives on it.
    if (live !== undefined && this.accepted(live.transport, to.id)) return false;
    if (sender.identity === null) return true;
    // Its connection was checked when it opened; only who sent it matters now, not what its disk held.
    const { cluster, incarnation: senderIncarnation } = sender.identity;
    return (
      (to.transport.handshake.checkIdentity?.(message.from, { cluster, incarnation: senderIncarnation }) ?? null) ===
      null
    );
  }

  async run(): Promise<DriverSimResult> {
    try {
      // Not awaited: a founding member first probes its peers' handshakes, which takes steps.
      for (const id of this.ids) this.launch(id);
      for (let i = 0; i < this.options.steps; i++) {
        this.injectFaults();
        await this.advance();
      }
      await this.checkLiveness();
      if (this.failures.length > 0) throw new SafetyViolation(this.failures[0]);
      return this.result(true);
    } catch (error) {
      const failure = error instanceof Error ? (error.stack ?? error.message) : String(error);
      return this.result(false, `step ${this.step}: ${failure}`);
    } finally {
      for (const id of [...this.processes.keys()]) this.crash(id, false);
    }
  }

  private result(ok: boolean, failure?: string): DriverSimResult {
    this.stats.appliedMax = this.checker.appliedMax;
    this.stats.voters = this.ids.length;
    this.stats.heldDelivered = this.network.heldDelivered;
    const result: DriverSimResult = { seed: this.options.seed, ok, stats: { ...this.stats } };
    if (failure !== undefined) result.failure = failure;
    return result;
  }

  /** Starts a process without waiting for it (its start completes over later steps); a failure is a failure of the run. */
  private launch(id: NodeId): void {
    this.startProcess(id).catch((error: unknown) =>
      this.failures.push(`${id} failed to start: ${error instanceof Error ? error.stack : String(error)}`),
    );
  }

  private async startProcess(id: NodeId): Promise<void> {
    const disk = this.disks.get(id);
    if (disk === undefined || this.processes.has(id)) return;
    const clock = new ProcessClock(this.time);
    const storage = new ProcessStorage(disk, this, id);
    const machineWork: Process["machineWork"] = [];
    const machine = new SimMachine(id, this.checker, (run) => {
      if (!this.random.chance(this.slowMachineRate)) return null;
      const completeAtStep = this.step + 1 + this.random.intBelow(this.slowMachineStepsMax);
      return new Promise((resolve) => machineWork.push({ completeAtStep, run, resolve }));
    });
    const built: { transport: SimTransport | null } = { transport: null };
    const identityStore = this.identityStores.get(id);
    if (identityStore === undefined) return;
    const nonce = new Uint8Array(8).map(() => this.random.intBelow(256));
    const node = new RaftNode({
      id,
      voters: this.ids,
      storage,
      stateMachine: machine,
      transport: {
        secret: "driver simulation secret",
        peers: Object.fromEntries(this.ids.filter((peer) => peer !== id).map((peer) => [peer, `sim://${peer}`])),
      },
      ...(this.options.identityChecks === false
        ? {}
        : { identity: { store: identityStore, cluster: "driver-simulation" } }),
      tickMs,
      electionTicks,
      heartbeatTicks: 1 + this.random.intBelow(2),
      snapshotEntries: 5 + this.random.intBelow(40),
      requestTimeoutMs: 200 * tickMs,
      raft: {
        random: new Xoshiro128(this.random.nextUint32()),
        maxSizePerMsgBytes: 16 + this.random.intBelow(256),
        maxSnapshotChunkBytes: 64 + this.random.intBelow(256),
        maxInflightMsgs: 1 + this.random.intBelow(8),
      },
      readContextNonce: nonce,
      clock,
      transportFactory: (options) => {
        const handshake: SimHandshake = {};
        if (options.identity !== undefined) handshake.identity = options.identity;
        if (options.checkIdentity !== undefined) handshake.checkIdentity = options.checkIdentity;
        if (options.onIdentityRefused !== undefined) handshake.onIdentityRefused = options.onIdentityRefused;
        const stated = options.identity;
        // A node of an earlier release states no durable state: peers cannot tell a rolled-back copy.
        if (this.options.rollbackChecks === false && stated !== undefined)
          handshake.identity = () => {
            const { cluster, incarnation } = stated();
            return { cluster, incarnation };
          };
        built.transport = new SimTransport(
          id,
          this,
          (message, incarnation) => options.onMessage(message, incarnation),
          handshake,
        );
        return built.transport;
      },
      onFatal: (error) => {
        if (error instanceof RaftNodeError && error.code === "RAFT_ERR_ROLLED_BACK") {
          // Refused once running: the process stops itself; the simulation takes it down with it.
          this.crash(id, false);
          this.refusedAsRolledBack(id);
          return;
        }
        this.failures.push(`${id} stopped on a fatal error: ${error instanceof Error ? error.stack : String(error)}`);
      },
    });
    const transport = built.transport;
    if (transport === null) throw new Error("RaftNode built no transport");
    const process: Process = { id, node, clock, transport, storage, machine, machineWork, started: false };
    this.processes.set(id, process);
    try {
      await node.start();
    } catch (error) {
      if (this.processes.get(id) === process) this.processes.delete(id);
      if (error instanceof RaftNodeError && error.code === "RAFT_ERR_ROLLED_BACK") {
        this.refusedAsRolledBack(id);
        return;
      }
      if (!(error instanceof RaftNodeError) || error.code !== "RAFT_ERR_IDENTITY_REFUSED") throw error;
      // A peer knew another incarnation: only a wiped data directory may be refused.
      this.stats.refusedStarts++;
      this.trace(`step ${this.step}: ${id} refuses to found a cluster (a peer knew another incarnation)`);
      if (!this.wiped.has(id)) this.failures.push(`${id} was refused at start though its disk was never wiped`);
      return;
    }
    process.started = true;
    this.trace(`step ${this.step}: start ${id}`);
  }

  /**
   * A rolled-back node is started only when the detection (driver/peer-identity.ts) promises to
   * refuse it: the peers that were told what the copy lacks (the leader it acknowledged, the
   * candidate it voted for, the followers it led) must check it, so every other member is up and
   * reachable from it; and they must still hold their marks, which a crash loses for up to one flush
   * interval, so none crashed since the copy was taken.
   */
  private mayStart(id: NodeId): boolean {
    const copyStep = this.rolledBack.get(id);
    if (copyStep === undefined) return true;
    return this.ids.every(
      (other) =>
        other === id ||
        (this.processes.has(other) &&
          this.network.connected(id, other) &&
          (this.crashSteps.get(other) ?? -1) < copyStep),
    );
  }

  /**
   * Whether the victim's data directory promised nothing since its copy (say a founder that never
   * took part): the same Raft state on disk and the same marks of its peers (what it learned of
   * them; which peers it met, or had accepted it, may differ). Restarting on the copy is then no
   * rollback, and the simulation does not hold its start back for a refusal with nothing to find.
   */
  private unchangedSince(id: NodeId, backup: { disk: SimStorage; identity: MemoryIdentityStore }): boolean {
    const disk = this.disks.get(id);
    const now = this.identityStores.get(id)?.load();
    const then = backup.identity.load();
    return (
      disk !== undefined &&
      disk.sameDurableState(backup.disk) &&
      now !== null &&
      now !== undefined &&
      then !== null &&
      now.incarnation === then.incarnation &&
      isDeepStrictEqual(now.marks ?? {}, then.marks ?? {}) &&
      (now.admitted !== false) === (then.admitted !== false)
    );
  }

  /** A peer was told more than this data directory holds: only a rolled-back one may be refused so. */
  private refusedAsRolledBack(id: NodeId): void {
    this.stats.rollbacksRefused++;
    this.trace(`step ${this.step}: ${id} refused: its data directory is older than what it told a peer`);
    if (!this.rolledBack.has(id)) this.failures.push(`${id} was refused as rolled back though it never was`);
  }

  /** Power loss: timers, the inbox, writes in flight and everything unsynced are gone; the node is not stopped. */
  private crash(id: NodeId, loseUnsynced = true): void {
    const process = this.processes.get(id);
    if (process === undefined) return;
    this.processes.delete(id);
    this.crashSteps.set(id, this.step);
    process.clock.clear();
    process.transport.closed = true;
    process.storage.abandon();
    if (loseUnsynced) process.storage.durable.crash();
  }

  private async advance(): Promise<void> {
    this.step++;
    this.time.nowMs += tickMs;
    const isUp = (id: NodeId) => this.processes.has(id);
    const up = [...this.processes.values()];
    for (const a of up) for (const b of up) if (a.id < b.id && this.network.connected(a.id, b.id)) this.handshake(a, b);
    for (const message of this.network.deliverDue(this.step, isUp)) {
      const process = this.processes.get(message.to);
      if (process !== undefined && !process.transport.closed && this.deliverable(message, process))
        process.transport.onMessage(message, this.senders.get(message)?.identity?.incarnation ?? "");
    }
    for (const process of this.processes.values()) {
      if (this.random.chance(0.95)) process.clock.fireDue();
      process.storage.completeDue(this.step);
      const due = process.machineWork.filter((work) => work.completeAtStep <= this.step);
      process.machineWork.splice(0, process.machineWork.length, ...process.machineWork.filter((w) => !due.includes(w)));
      for (const work of due) {
        work.run();
        work.resolve();
      }
    }
    // Let every loop run until it waits for a write, a message or a tick (no real I/O is pending).
    for (let i = 0; i < 3; i++) await new Promise((resolve) => setImmediate(resolve));
    this.observeLeaders();
    if (this.failures.length > 0) throw new SafetyViolation(this.failures[0]);
  }

  private observeLeaders(): void {
    for (const [id, process] of this.processes) {
      if (!process.started) continue;
      const status = process.node.status();
      if (status.role !== "leader") continue;
      this.checker.observeLeader(id, status.term, process.storage.durable);
      if (this.leaders.get(status.term) !== id) {
        this.leaders.set(status.term, id);
        this.stats.terms++;
        this.trace(`step ${this.step}: ${id} leads term ${status.term}`);
      }
    }
  }

  private leader(): Process | null {
    let best: Process | null = null;
    let bestTerm = -1;
    for (const process of this.processes.values()) {
      if (!process.started) continue;
      const status = process.node.status();
      if (status.role === "leader" && status.term > bestTerm) {
        best = process;
        bestTerm = status.term;
      }
    }
    return best;
  }

  private injectFaults(): void {
    if (this.random.chance(0.3)) this.propose();
    if (this.random.chance(0.05)) this.read();
    if (this.random.chance(0.01)) {
      const victim = this.pick([...this.processes.keys()]);
      if (victim !== undefined) {
        this.crash(victim);
        this.stats.crashes++;
        this.trace(`step ${this.step}: crash ${victim}`);
        // Its data directory is lost (it comes back empty, with a new incarnation) or replaced by an
        // older copy of itself. One such node per run, and only where the others still make a majority.
        // (Rollbacks draw from their own generator, so the runs of seeds without one stay as they were.)
        const wipe = this.ids.length >= 3 && this.wiped.size === 0 && this.random.chance(0.2);
        const backup = this.backups.get(victim);
        if (wipe && this.rolledBack.size === 0) {
          this.wiped.add(victim);
          this.disks.set(victim, new SimStorage(undefined, this.random.intBelow(10)));
          this.identityStores.set(victim, new MemoryIdentityStore());
          this.stats.wipes++;
          this.trace(`step ${this.step}: wipe ${victim}'s data directory`);
        } else if (
          this.ids.length >= 3 &&
          this.wiped.size === 0 &&
          this.rolledBack.size === 0 &&
          backup !== undefined &&
          this.rollbackRandom.chance(0.3) &&
          !this.unchangedSince(victim, backup)
        ) {
          // Restarted on an older copy of its own data directory (a restored backup, a VM snapshot):
          // the same incarnation, with the votes and entries written since the copy gone.
          this.rolledBack.set(victim, backup.step);
          this.disks.set(victim, backup.disk.copyDurable());
          this.identityStores.set(victim, copyIdentityStore(backup.identity));
          this.stats.rollbacks++;
          this.trace(`step ${this.step}: roll ${victim}'s data directory back to its copy of step ${backup.step}`);
        }
      }
    }
    if (this.random.chance(0.04)) {
      const down = this.pick(this.ids.filter((id) => !this.processes.has(id)));
      if (down !== undefined && this.mayStart(down)) this.launch(down);
    }
    if (this.rollbackRandom.chance(0.02) && this.rolledBack.size === 0 && this.wiped.size === 0) {
      // A copy of a running node's data directory as it is on disk now (unsynced writes are not in it).
      const ids = [...this.processes.keys()];
      const id = ids[this.rollbackRandom.intBelow(Math.max(1, ids.length))];
      const disk = id === undefined ? undefined : this.disks.get(id);
      const identity = id === undefined ? undefined : this.identityStores.get(id);
      if (id !== undefined && disk !== undefined && identity !== undefined) {
        this.backups.set(id, { disk: disk.copyDurable(), identity: copyIdentityStore(identity), step: this.step });
        this.trace(`step ${this.step}: copy ${id}'s data directory`);
      }
    }
    if (this.random.chance(0.01)) {
      const groups = new Map(this.ids.map((id) => [id, this.random.intBelow(2)] as const));
      this.network.partition(groups);
      this.trace(`step ${this.step}: partition ${JSON.stringify([...groups])}`);
    }
    if (this.network.isPartitioned() && this.random.chance(0.03)) this.network.heal();
  }

  private pick<T>(items: readonly T[]): T | undefined {
    return items.length === 0 ? undefined : items[this.random.intBelow(items.length)];
  }

  private propose(): void {
    const leader = this.leader();
    if (leader === null) return;
    const counter = ++this.proposalCounter;
    const data = new Uint8Array([counter & 0xff, (counter >> 8) & 0xff, (counter >> 16) & 0xff, 1]);
    this.stats.proposals++;
    leader.node.propose(data).catch((error: unknown) => this.expectOperatingError(error));
  }

  /** A read that resolves must see every write applied anywhere before it began. */
  private read(): void {
    const process = this.pick([...this.processes.values()].filter((p) => p.started));
    if (process === undefined) return;
    const appliedMaxAtStart = this.checker.appliedMax;
    process.node.readIndex().then(
      () => {
        if (!process.transport.closed) {
          this.stats.readsChecked++;
          const applied = process.node.status().applied;
          if (applied < appliedMaxAtStart)
            this.failures.push(`linearizable read: applied ${applied} < ${appliedMaxAtStart} applied before the read`);
        }
      },
      (error: unknown) => this.expectOperatingError(error),
    );
  }

  private expectOperatingError(error: unknown): void {
    if (!(error instanceof RaftNodeError) && !(error instanceof RaftError))
      this.failures.push(`a request failed with a bug: ${error instanceof Error ? error.stack : String(error)}`);
  }

  /** After healing, a leader must commit a new proposal and every member must apply it. */
  private async checkLiveness(): Promise<void> {
    this.network.heal();
    this.network.faults = { dropRate: 0, duplicateRate: 0, delayMax: 1 };
    // Not awaited: a start installs the stored snapshot first, which may take steps to complete.
    for (const id of this.ids) if (!this.processes.has(id) && this.mayStart(id)) this.launch(id);
    const bound = 100 * electionTicks;
    let committed: number | null = null;
    let proposing = false;
    for (let i = 0; i < bound; i++) {
      await this.advance();
      for (const id of this.rolledBack.keys()) if (!this.processes.has(id) && this.mayStart(id)) this.launch(id);
      const leader = this.leader();
      if (committed === null && leader !== null && !proposing) {
        proposing = true;
        leader.node.propose(new Uint8Array([0xff, 0xff, 0xff, 2])).then(
          ({ index }) => void (committed = index),
          () => void (proposing = false),
        );
      }
      const target = committed;
      if (
        target !== null &&
        [...this.processes.values()].every(
          (p) => this.wiped.has(p.id) || this.rolledBack.has(p.id) || (p.started && p.node.status().applied >= target),
        )
      )
        return;
    }
    throw new SafetyViolation(`liveness: no new proposal committed and applied everywhere within ${bound} steps`);
  }
}

function copyIdentityStore(store: MemoryIdentityStore): MemoryIdentityStore {
  const copy = new MemoryIdentityStore();
  const record = store.load();
  if (record !== null) copy.save(record);
  return copy;
}

export function runDriverSimulation(options: DriverSimOptions): Promise<DriverSimResult> {
  return new DriverSimulation(options).run();
}
