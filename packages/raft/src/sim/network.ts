import type { Xoshiro128 } from "../core/prng.js";
import type { Message } from "../core/messages.js";
import type { NodeId } from "../core/types.js";

/** Messages in flight at once; past it the network drops (a full switch buffer). */
export const inFlightMax = 20_000;

export interface NetworkFaults {
  /** Probability that a message is lost. */
  dropRate: number;
  /** Probability that a message is delivered twice. */
  duplicateRate: number;
  /** Delivery delay in steps, uniform in [0, delayMax]; different delays reorder messages. */
  delayMax: number;
}

interface InFlight {
  deliverAtStep: number;
  sequence: number;
  message: Message;
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

  constructor(
    private readonly random: Xoshiro128,
    faults: NetworkFaults,
  ) {
    this.faults = faults;
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
    if (!this.connected(message.from, message.to) && this.unreachable.length < inFlightMax) {
      this.unreachable.push({ from: message.from, to: message.to, snapshot: message.type === "snap" });
    }
    if (
      !this.connected(message.from, message.to) ||
      this.random.chance(this.faults.dropRate) ||
      this.queue.length >= inFlightMax
    ) {
      this.dropped++;
      return;
    }
    const copies = this.random.chance(this.faults.duplicateRate) ? 2 : 1;
    for (let i = 0; i < copies; i++) {
      const deliverAtStep = nowStep + 1 + this.random.intBelow(this.faults.delayMax + 1);
      this.queue.push({ deliverAtStep, sequence: this.sequence++, message });
    }
  }

  /** Messages due at `nowStep`, in delivery order; a partition that formed meanwhile drops them. */
  deliverDue(nowStep: number): Message[] {
    const due: InFlight[] = [];
    const rest: InFlight[] = [];
    for (const item of this.queue) (item.deliverAtStep <= nowStep ? due : rest).push(item);
    this.queue = rest;
    due.sort((a, b) => a.deliverAtStep - b.deliverAtStep || a.sequence - b.sequence);
    return due.map((item) => item.message).filter((m) => this.connected(m.from, m.to));
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
