import { assert } from "./assert.js";
import { pendingReadIndexMax } from "./config.js";
import { hasQuorum } from "./quorum.js";
import type { NodeId } from "./types.js";

/** A ReadIndex request waiting for a heartbeat quorum to confirm the leader is still the leader. */
export interface PendingRead {
  /** The commit index when the request arrived: the read sees at least this state. */
  index: number;
  context: Uint8Array;
  /** Who asked (this node for local reads, else the follower that forwarded it). */
  from: NodeId;
  acks: Set<NodeId>;
}

export function contextKey(context: Uint8Array): string {
  let key = "";
  for (const byte of context) key += byte.toString(16).padStart(2, "0");
  return key;
}

/** The leader's queue of reads (etcd's readOnly, "safe" option): confirmed in order, at most pendingReadIndexMax. */
export class ReadOnlyQueue {
  private readonly pending = new Map<string, PendingRead>();
  private order: string[] = [];

  size(): number {
    return this.pending.size;
  }

  /** Queues a read; false when the queue is full or the context is already pending. */
  add(index: number, context: Uint8Array, from: NodeId, self: NodeId): boolean {
    const key = contextKey(context);
    if (this.pending.has(key) || this.pending.size >= pendingReadIndexMax) return false;
    this.pending.set(key, { index, context, from, acks: new Set([self]) });
    this.order.push(key);
    return true;
  }

  /**
   * Records a heartbeat acknowledgement for `context`. When it completes a quorum, returns that read
   * and every read queued before it (a later confirmation also confirms earlier reads); else [].
   */
  ack(context: Uint8Array, from: NodeId, voters: readonly NodeId[]): PendingRead[] {
    const key = contextKey(context);
    const read = this.pending.get(key);
    if (read === undefined) return [];
    read.acks.add(from);
    if (!hasQuorum(voters, read.acks)) return [];
    const position = this.order.indexOf(key);
    assert(position >= 0, "read-only: order lost a pending read");
    const released = this.order.slice(0, position + 1).map((k) => this.pending.get(k));
    for (const k of this.order.slice(0, position + 1)) this.pending.delete(k);
    this.order = this.order.slice(position + 1);
    return released.filter((r): r is PendingRead => r !== undefined);
  }

  clear(): void {
    this.pending.clear();
    this.order = [];
  }
}
