import type { Xoshiro128 } from "../core/prng.js";
import type { Message } from "../core/messages.js";
import type { NodeId } from "../core/types.js";
import { SimLink } from "./link.js";

/** Messages in flight at once; past it the network drops (a full switch buffer). */
export const inFlightMax = 20_000;

export interface NetworkFaults {
  /** Probability that a message is lost. */
  dropRate: number;
  /** Probability that a message is delivered twice. */
  duplicateRate: number;
  /** Delivery delay in steps, uniform in [0, delayMax]; different delays reorder messages. */
  delayMax: number;
  /**
   * Probability that a message is held (a stalled TCP connection, a switch buffer) instead of lost:
   * across a partition it waits for the heal, to a crashed node for its restart, and otherwise it is
   * delayed by up to `longDelayMax` steps (more than an election timeout). Default 0.
   */
  holdRate?: number;
  /** Longest delay of a held message, in steps. Default 0. */
  longDelayMax?: number;
}

/** Byte-bounded, rate-limited links between every pair (the transport's per-peer queue); null: unbounded. */
export interface LinkShape {
  bytesMax: number;
  bytesPerStep: number;
}

interface InFlight {
  deliverAtStep: number;
  sequence: number;
  message: Message;
  /** Waits for the link to heal / the receiver to be up rather than being dropped. */
  held: boolean;
}

/** A seeded network: drops, duplicates, delays (so reorders) and partitions messages. */
export class SimNetwork {
  faults: NetworkFaults;
  private queue: InFlight[] = [];
  private sequence = 0;
  /** Partition group per node; nodes in different groups cannot talk. Empty = fully connected. */
  private groups = new Map<NodeId, number>();
  sent = 0;
  dropped = 0;
  /** Messages held past a partition or a crash and delivered later. */
  heldDelivered = 0;
  private readonly links = new Map<string, SimLink>();

  constructor(
    private readonly random: Xoshiro128,
    faults: NetworkFaults,
    private readonly linkShape: LinkShape | null = null,
  ) {
    this.faults = faults;
  }

  /** Messages the byte-bounded links dropped because their queue was full. */
  get linkDropped(): number {
    let dropped = 0;
    for (const link of this.links.values()) dropped += link.dropped;
    return dropped;
  }

  private link(from: NodeId, to: NodeId): SimLink | null {
    if (this.linkShape === null) return null;
    const key = `${from}->${to}`;
    let link = this.links.get(key);
    if (link === undefined) {
      link = new SimLink(this.linkShape.bytesMax, this.linkShape.bytesPerStep);
      this.links.set(key, link);
    }
    return link;
  }

  connected(a: NodeId, b: NodeId): boolean {
    return (this.groups.get(a) ?? 0) === (this.groups.get(b) ?? 0);
  }

  partition(groups: Map<NodeId, number>): void {
    this.groups = groups;
  }

  heal(): void {
    this.groups = new Map();
  }

  isPartitioned(): boolean {
    return this.groups.size > 0;
  }

  send(message: Message, nowStep: number): void {
    this.sent++;
    freezeMessage(message); // nodes share message objects: any mutation by the core throws here
    const connected = this.connected(message.from, message.to);
    if (!connected && this.unreachable.length < inFlightMax) {
      this.unreachable.push({ from: message.from, to: message.to, snapshot: message.type === "snap" });
    }
    const held = this.random.chance(this.faults.holdRate ?? 0);
    if ((!connected && !held) || this.random.chance(this.faults.dropRate) || this.queue.length >= inFlightMax) {
      this.dropped++;
      return;
    }
    const link = this.link(message.from, message.to);
    if (link !== null && connected) {
      link.push(message); // the link decides when it arrives (its rate), or drops it (its bound)
      return;
    }
    const copies = this.random.chance(this.faults.duplicateRate) ? 2 : 1;
    for (let i = 0; i < copies; i++) {
      const delay = held
        ? this.random.intBelow((this.faults.longDelayMax ?? 0) + 1)
        : this.random.intBelow(this.faults.delayMax + 1);
      this.queue.push({ deliverAtStep: nowStep + 1 + delay, sequence: this.sequence++, message, held });
    }
  }

  /**
   * Messages due at `nowStep`, in delivery order. A partition that formed meanwhile, or a receiver
   * that is down (`isUp`), drops them, unless they are held: then they wait for the heal or restart.
   */
  deliverDue(nowStep: number, isUp: (id: NodeId) => boolean = () => true): Message[] {
    const due: InFlight[] = [];
    const rest: InFlight[] = [];
    for (const item of this.queue) (item.deliverAtStep <= nowStep ? due : rest).push(item);
    due.sort((a, b) => a.deliverAtStep - b.deliverAtStep || a.sequence - b.sequence);
    const out: Message[] = [];
    for (const item of due) {
      const { message } = item;
      if (this.connected(message.from, message.to) && isUp(message.to)) {
        if (item.held) this.heldDelivered++;
        out.push(message);
      } else if (item.held && rest.length < inFlightMax) {
        item.deliverAtStep = nowStep + 1;
        rest.push(item);
      }
    }
    this.queue = rest;
    for (const [key, link] of this.links) {
      const [from = "", to = ""] = key.split("->");
      for (const message of link.drain()) if (this.connected(from, to) && isUp(to)) out.push(message);
    }
    return out;
  }

  /** Sends that hit a partition, for the senders' reportUnreachable (drained by the simulation). */
  unreachable: { from: NodeId; to: NodeId; snapshot: boolean }[] = [];

  inFlight(): number {
    return this.queue.length;
  }
}

function freezeMessage(message: Message): void {
  if (Object.isFrozen(message)) return;
  if (message.type === "app") {
    for (const entry of message.entries) Object.freeze(entry);
    Object.freeze(message.entries);
  }
  Object.freeze(message);
}
