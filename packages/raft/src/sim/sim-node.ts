import { assert } from "../core/assert.js";
import type { RaftConfig } from "../core/config.js";
import type { Message, ReadyMessage } from "../core/messages.js";
import type { Xoshiro128 } from "../core/prng.js";
import { RawNode } from "../core/raw-node.js";
import type { Ready } from "../core/ready.js";
import type { NodeId } from "../core/types.js";
import { ReadContexts, readContextNonceBytes } from "../driver/read-context.js";
import { SimApp } from "./app.js";
import type { SafetyChecker } from "./checker.js";
import type { SimNetwork } from "./network.js";
import { SimStorage } from "./sim-storage.js";

/** Messages a busy node buffers; past it they are dropped (as a full socket buffer would). */
export const inboxMax = 1_024;
/** Ticks a busy node remembers; it catches up on them after its write completes. */
export const pendingTicksMax = 8;
/** Readies processed back to back in one step. */
const readiesPerStepMax = 16;

export interface PendingRead {
  context: Uint8Array;
  appliedMaxAtStart: number;
}

/** One simulated server: the real RawNode, simulated storage, the digest app, and a Ready loop with write latency. */
export class SimNode {
  readonly id: NodeId;
  readonly storage: SimStorage;
  raw: RawNode | null = null;
  app = new SimApp();
  private inbox: Message[] = [];
  /** Peers the transport failed to reach, reported to the core on the next run (bounded like the inbox). */
  private unreachable: { peer: NodeId; snapshot: boolean }[] = [];
  private pendingTicks = 0;
  private pending: { ready: Ready; completeAtStep: number } | null = null;
  readonly reads = new Map<string, PendingRead>();
  /** Read contexts of the current process (a new nonce at every start, as RaftNode draws one). */
  readContexts: ReadContexts;
  /** Paused (a stalled process) until this step: it neither ticks nor handles messages meanwhile. */
  private pausedUntilStep = 0;

  constructor(
    id: NodeId,
    private readonly makeConfig: () => RaftConfig,
    private readonly random: Xoshiro128,
    private readonly writeLatencyMax: number,
    keepEntries: number,
  ) {
    this.id = id;
    this.storage = new SimStorage(undefined, keepEntries);
    this.readContexts = this.newReadContexts();
    this.start();
  }

  alive(): boolean {
    return this.raw !== null;
  }

  /** Stops this process until `step` (no ticks, no messages handled; its inbox fills, then drops). */
  pauseUntil(step: number): void {
    this.pausedUntilStep = Math.max(this.pausedUntilStep, step);
  }

  private newReadContexts(): ReadContexts {
    const nonce = new Uint8Array(readContextNonceBytes);
    for (let i = 0; i < nonce.length; i++) nonce[i] = this.random.intBelow(256);
    return new ReadContexts(this.id, nonce);
  }

  busy(): boolean {
    return this.pending !== null;
  }

  /** A write is in flight whose entries already left in appends (a leader between send and persist). */
  writingSentEntries(): boolean {
    const ready = this.pending?.ready;
    return (
      ready !== undefined &&
      ready.entries.length > 0 &&
      ready.messagesBeforePersist.some((m) => m.type === "app" && m.entries.length > 0)
    );
  }

  /** Boots (or reboots) from whatever storage holds durably; the app is rebuilt from the snapshot. */
  start(): void {
    assert(this.raw === null, "start: already running");
    this.app = new SimApp();
    this.readContexts = this.newReadContexts();
    this.pausedUntilStep = 0;
    const { metadata, totalBytes } = this.storage.snapshot();
    if (metadata.index > 0) this.app.restore(this.storage.snapshotData(metadata.index, 0, totalBytes), metadata.index);
    this.raw = new RawNode(this.makeConfig(), this.storage);
  }

  /**
   * Power loss: the in-flight write, the inbox, the app's memory and unsynced storage are lost.
   * Returns true when the lost write held entries whose appends had already left (messagesBeforePersist).
   */
  crash(): boolean {
    const lostSentEntries = this.writingSentEntries();
    this.raw = null;
    this.pending = null;
    this.inbox = [];
    this.unreachable = [];
    this.pendingTicks = 0;
    this.reads.clear();
    this.storage.crash();
    return lostSentEntries;
  }

  /** The transport could not deliver to `peer` (a snapshot chunk when `snapshot`). */
  reportUnreachable(peer: NodeId, snapshot: boolean): void {
    if (this.raw !== null && this.unreachable.length < inboxMax) this.unreachable.push({ peer, snapshot });
  }

  receive(message: Message): void {
    if (this.raw !== null && this.inbox.length < inboxMax) this.inbox.push(message);
  }

  /** One step of this server: finish a due write, then tick, feed messages and start the next Ready. */
  run(nowStep: number, doTick: boolean, network: SimNetwork, checker: SafetyChecker): void {
    const raw = this.raw;
    if (raw === null || nowStep < this.pausedUntilStep) return;
    if (doTick) this.pendingTicks = Math.min(this.pendingTicks + 1, pendingTicksMax);
    for (let i = 0; i < readiesPerStepMax; i++) {
      if (this.pending !== null) {
        if (this.pending.completeAtStep > nowStep) return;
        this.complete(this.pending.ready, nowStep, network, checker);
        this.pending = null;
      }
      for (; this.pendingTicks > 0; this.pendingTicks--) raw.tick();
      const inbox = this.inbox;
      this.inbox = [];
      for (const message of inbox) raw.step(message);
      for (const { peer, snapshot } of this.unreachable) {
        if (snapshot) raw.reportSnapshot(peer, false);
        else raw.reportUnreachable(peer);
      }
      this.unreachable = [];
      if (!raw.hasReady()) return;
      const ready = raw.ready();
      this.storage.pinSnapshots(raw.snapshotsInTransfer()); // as RaftNode does
      // The leader's appends leave now, before its write completes (a crash meanwhile loses the write, not them).
      for (const message of ready.messagesBeforePersist) this.send(message, nowStep, network);
      this.pending = { ready, completeAtStep: nowStep + this.random.intBelow(this.writeLatencyMax + 1) };
    }
  }

  /** Sends a Ready's message, a snapshot chunk filled from storage first (a failed read fails the snapshot). */
  private send(message: ReadyMessage, nowStep: number, network: SimNetwork): void {
    const filled = this.storage.fill(message);
    if (filled === null) this.reportUnreachable(message.to, true);
    else network.send(filled, nowStep);
  }

  /** The Ready contract: persist, then send (messagesBeforePersist already went at ready()), then apply, then advance. */
  private complete(ready: Ready, nowStep: number, network: SimNetwork, checker: SafetyChecker): void {
    const raw = this.raw;
    assert(raw !== null, "complete on a crashed node");
    if (ready.snapshot !== null) this.storage.applySnapshotSync(ready.snapshot);
    this.storage.appendSync(ready.entries, ready.hardState, ready.mustSync);
    checker.observePersisted(this.id, ready.entries, this.storage);
    for (const message of ready.messages) this.send(message, nowStep, network);
    if (ready.snapshot !== null) {
      this.app.restore(ready.snapshot.data, ready.snapshot.metadata.index);
      checker.observeSnapshotInstalled(this.id, ready.snapshot.metadata.index, this.app.digest);
    }
    for (const entry of ready.committedEntries) {
      this.app.apply(entry);
      checker.observeApplied(this.id, entry, this.app.digest);
    }
    for (const read of ready.readStates) {
      const key = contextKey(read.context);
      const pending = this.reads.get(key);
      if (pending === undefined) continue;
      this.reads.delete(key);
      checker.observeRead(this.id, read.index, pending.appliedMaxAtStart);
    }
    for (const context of ready.droppedReads) this.reads.delete(contextKey(context));
    raw.advance(ready);
  }
}

export function contextKey(context: Uint8Array): string {
  return Array.from(context, (b) => b.toString(16).padStart(2, "0")).join("");
}
