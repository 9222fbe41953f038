import { assert } from "./assert.js";
import { pendingReadIndexMax } from "./config.js";
import { hasQuorum } from "./quorum.js";
import type { NodeId } from "./types.js";

/** A ReadIndex request waiting for a heartbeat quorum to confirm the leader is still the leader. */
export interface PendingRead {
  /** The commit index when the request arrived: the read sees at least this state. */
  index: number;
  /** The requester's context, echoed back to it unchanged. */
  context: Uint8Array;
  /** Who asked (this node for local reads, else the follower that forwarded it). */
  from: NodeId;
  /** The leader's own number for this read; its heartbeats carry it (see roundContext). */
  round: number;
  acks: Set<NodeId>;
}

/** Bytes of a round number on the wire (heartbeat context): 8, big-endian. */
const roundBytes = 8;

export function contextKey(context: Uint8Array): string {
  let key = "";
  for (const byte of context) key += byte.toString(16).padStart(2, "0");
  return key;
}

/** The heartbeat context that confirms read `round` (and every read queued before it). */
export function roundContext(round: number): Uint8Array {
  assert(Number.isSafeInteger(round) && round > 0, "read-only: round must be a positive safe integer");
  const context = new Uint8Array(roundBytes);
  new DataView(context.buffer).setBigUint64(0, BigInt(round));
  return context;
}

/** The round a heartbeat context names, or null for a context that is not one of ours. */
export function parseRoundContext(context: Uint8Array): number | null {
  if (context.byteLength !== roundBytes) return null;
  const round = new DataView(context.buffer, context.byteOffset, roundBytes).getBigUint64(0);
  return round > 0n && round <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(round) : null;
}

/**
 * The leader's queue of reads (etcd's readOnly, "safe" option): confirmed in order, at most
 * pendingReadIndexMax. The requester's context only identifies the read to the requester: two
 * nodes (or one node before and after a restart) may use the same bytes. What a heartbeat carries
 * and a follower echoes is the leader's round number, which only grows in this Raft instance, and
 * an acknowledgement counts only for reads queued before the heartbeat it answers was sent. So an
 * acknowledgement of an older round can never confirm a newer read (a deposed leader's delayed
 * ack, a reused context), whatever contexts the requesters choose.
 */
export class ReadOnlyQueue {
  /** Pending reads by round; Map iteration is insertion order, which is round order. */
  private readonly pending = new Map<number, PendingRead>();
  /** `${from}/${contextKey}` of every pending read: one requester cannot have one context pending twice. */
  private readonly requests = new Set<string>();
  /** The last round handed out. Never reset: rounds stay unique for the life of the Raft instance. */
  private lastRound = 0;

  size(): number {
    return this.pending.size;
  }

  /** Queues a read; returns its heartbeat context, or null when the queue is full or `from` already has `context` pending. */
  add(index: number, context: Uint8Array, from: NodeId, self: NodeId): Uint8Array | null {
    const request = requestKey(from, context);
    if (this.requests.has(request) || this.pending.size >= pendingReadIndexMax) return null;
    this.lastRound++;
    this.pending.set(this.lastRound, { index, context, from, round: this.lastRound, acks: new Set([self]) });
    this.requests.add(request);
    assert(this.requests.size === this.pending.size, "read-only: request keys out of step with pending reads");
    return roundContext(this.lastRound);
  }

  /** The heartbeat context of the newest pending read (periodic heartbeats carry it, so a lost round is retried), or null. */
  lastPendingContext(): Uint8Array | null {
    let last: number | null = null;
    for (const round of this.pending.keys()) last = round;
    return last === null ? null : roundContext(last);
  }

  /**
   * Records a heartbeat acknowledgement carrying `context`. When it completes a quorum, returns
   * that read and every read queued before it (the heartbeat was sent after they were queued, so
   * it confirms them too); else []. A context of an already released or unknown round is ignored.
   */
  ack(context: Uint8Array, from: NodeId, voters: readonly NodeId[]): PendingRead[] {
    const round = parseRoundContext(context);
    const read = round === null ? undefined : this.pending.get(round);
    if (read === undefined) return [];
    read.acks.add(from);
    if (!hasQuorum(voters, read.acks)) return [];
    const released: PendingRead[] = [];
    for (const [pendingRound, pending] of this.pending) {
      if (pendingRound > read.round) break;
      released.push(pending);
      this.pending.delete(pendingRound);
      this.requests.delete(requestKey(pending.from, pending.context));
    }
    assert(released[released.length - 1] === read, "read-only: a confirmed read was not released");
    return released;
  }

  clear(): void {
    this.pending.clear();
    this.requests.clear();
  }
}

function requestKey(from: NodeId, context: Uint8Array): string {
  return `${from}/${contextKey(context)}`;
}
