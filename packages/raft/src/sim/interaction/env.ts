import { assert } from "../../core/assert.js";
import type { RaftConfig } from "../../core/config.js";
import type { Message } from "../../core/messages.js";
import { Xoshiro128, seedFromString } from "../../core/prng.js";
import { RawNode } from "../../core/raw-node.js";
import type { ReadState } from "../../core/ready.js";
import type { Entry, NodeId } from "../../core/types.js";
import { SimApp } from "../app.js";
import { SimStorage } from "../sim-storage.js";
import { formatReady } from "./format.js";

/** Messages queued between nodes in a transcript; beyond it the test is runaway. */
export const queuedMessagesMax = 100_000;

export interface EnvNode {
  id: NodeId;
  config: RaftConfig;
  storage: SimStorage;
  raw: RawNode | null;
  app: SimApp;
  /** Every entry this node applied, in order (for assertions in tests). */
  applied: Entry[];
  /** Every read state and refused read context this node's Readies handed out (for assertions in tests). */
  readStates: ReadState[];
  droppedReads: Uint8Array[];
}

/**
 * The world of an interaction transcript or scenario test: RawNodes over SimStorage with a
 * hand-driven network. Nothing happens unless a command says so, so outputs are exact.
 */
export class InteractionEnv {
  readonly nodes = new Map<NodeId, EnvNode>();
  /** Messages sent and not yet delivered, in send order. */
  queue: Message[] = [];
  /** Nodes cut off from everyone: messages to or from them are dropped at delivery. */
  readonly isolated = new Set<NodeId>();
  /** Directed links that drop messages: "from->to". */
  readonly cutLinks = new Set<string>();
  output: string[] = [];

  /** Adds a node; `storage` may come preloaded (hand-built logs for scenario tests). */
  addNode(config: RaftConfig, storage: SimStorage = new SimStorage()): EnvNode {
    assert(!this.nodes.has(config.id), `node ${config.id} exists`);
    const full: RaftConfig = { random: new Xoshiro128(seedFromString(config.id)), ...config };
    const node: EnvNode = {
      id: config.id,
      config: full,
      storage,
      raw: new RawNode(full, storage),
      app: new SimApp(),
      applied: [],
      readStates: [],
      droppedReads: [],
    };
    this.nodes.set(config.id, node);
    return node;
  }

  node(id: NodeId): EnvNode {
    const node = this.nodes.get(id);
    assert(node !== undefined, `unknown node ${id}`);
    return node;
  }

  raw(id: NodeId): RawNode {
    const raw = this.node(id).raw;
    assert(raw !== null, `node ${id} is down`);
    return raw;
  }

  /** Runs one Ready of `id` through the contract (persist, send, apply, advance). Returns false if there was none. */
  processReady(id: NodeId): boolean {
    const node = this.node(id);
    const raw = node.raw;
    if (raw === null || !raw.hasReady()) return false;
    const ready = raw.ready();
    node.storage.pinSnapshots(raw.snapshotsInTransfer()); // as RaftNode does
    this.output.push(`> ${id} ready`, ...formatReady(ready));
    if (ready.snapshot !== null) node.storage.applySnapshotSync(ready.snapshot);
    node.storage.appendSync(ready.entries, ready.hardState, ready.mustSync);
    let cut = 0;
    for (const readyMessage of [...ready.messagesBeforePersist, ...ready.messages]) {
      assert(this.queue.length < queuedMessagesMax, "message queue overflow");
      const message = node.storage.fill(readyMessage);
      assert(message !== null, `${id}: a snapshot chunk of a snapshot no longer held`);
      if (this.isCut(message.from, message.to)) cut++;
      else this.queue.push(message);
    }
    if (cut > 0) this.output.push(`  dropped ${cut} (partitioned)`);
    if (ready.snapshot !== null) node.app.restore(ready.snapshot.data, ready.snapshot.metadata.index);
    for (const entry of ready.committedEntries) {
      node.app.apply(entry);
      node.applied.push(entry);
    }
    node.readStates.push(...ready.readStates);
    node.droppedReads.push(...ready.droppedReads);
    raw.advance(ready);
    return true;
  }

  /** Delivers queued messages addressed to `to` (all recipients when empty). Returns how many were delivered. */
  deliver(to: readonly NodeId[] = []): number {
    const keep: Message[] = [];
    const due: Message[] = [];
    for (const message of this.queue) (to.length === 0 || to.includes(message.to) ? due : keep).push(message);
    this.queue = keep;
    let delivered = 0;
    let dropped = 0;
    for (const message of due) {
      const target = this.nodes.get(message.to);
      if (target?.raw == null || this.isCut(message.from, message.to)) {
        dropped++;
        continue;
      }
      target.raw.step(message);
      delivered++;
    }
    if (dropped > 0) this.output.push(`  dropped ${dropped} (partitioned or down)`);
    return delivered;
  }

  isCut(from: NodeId, to: NodeId): boolean {
    return this.isolated.has(from) || this.isolated.has(to) || this.cutLinks.has(`${from}->${to}`);
  }

  /** Processes readies and delivers messages until the cluster is quiet (bounded). */
  stabilize(ids: readonly NodeId[] = [], roundsMax = 1_000): void {
    const members = ids.length > 0 ? ids : [...this.nodes.keys()];
    for (let round = 0; round < roundsMax; round++) {
      let busy = false;
      for (const id of members) busy = this.processReady(id) || busy;
      const pending = this.queue.filter((m) => members.includes(m.to));
      if (pending.length > 0) {
        this.output.push(`> deliver ${pending.length}`);
        this.deliver(members);
        busy = true;
      }
      if (!busy) return;
    }
    assert(false, `stabilize: no quiet state after ${roundsMax} rounds`);
  }

  /** Power loss on `id`: unsynced writes and everything in memory are gone. */
  crash(id: NodeId): void {
    const node = this.node(id);
    node.raw = null;
    node.storage.crash();
    this.queue = this.queue.filter((m) => m.from !== id && m.to !== id);
  }

  restart(id: NodeId): void {
    const node = this.node(id);
    assert(node.raw === null, `restart: ${id} is running`);
    node.app = new SimApp();
    node.applied = [];
    node.readStates = [];
    node.droppedReads = [];
    const { metadata, totalBytes } = node.storage.snapshot();
    if (metadata.index > 0) node.app.restore(node.storage.snapshotData(metadata.index, 0, totalBytes), metadata.index);
    node.raw = new RawNode({ ...node.config, random: new Xoshiro128(seedFromString(id)) }, node.storage);
  }

  /** Ticks `id` `count` times. */
  tick(id: NodeId, count: number): void {
    const raw = this.raw(id);
    for (let i = 0; i < count; i++) raw.tick();
  }

  takeOutput(): string {
    const text = this.output.join("\n");
    this.output = [];
    return text;
  }
}
