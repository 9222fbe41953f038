// Batches rate-limit checks that a node forwards to their owners (docs/counters.md): one message
// per owner carries many checks, sent when a batch is full or its oldest check has waited
// `maxDelayMs`. Pure: the shell calls `due(nowMs)` from a timer and after each `add`.
import { assert } from "../assert.js";

/** Checks per forwarded message. */
export const forwardBatchChecksMax = 256;
/** Checks waiting across all owners; past it `add` refuses (the caller answers 503 / fails closed). */
export const forwardQueuedMax = 100_000;

export interface ForwardBatch<T> {
  ownerId: string;
  items: T[];
}

export class ForwardBatcher<T> {
  private readonly queues = new Map<string, { items: T[]; addedAtMs: number[] }>();
  private queued = 0;

  constructor(private readonly maxDelayMs: number) {
    assert(Number.isFinite(maxDelayMs) && maxDelayMs >= 0, "forward batcher: maxDelayMs >= 0");
  }

  /** Queues `item` for `ownerId`; false when the queue is full (nothing queued). */
  add(ownerId: string, item: T, nowMs: number): boolean {
    if (this.queued >= forwardQueuedMax) return false;
    let queue = this.queues.get(ownerId);
    if (queue === undefined) {
      queue = { items: [], addedAtMs: [] };
      this.queues.set(ownerId, queue);
    }
    queue.items.push(item);
    queue.addedAtMs.push(nowMs);
    this.queued++;
    return true;
  }

  /** Batches to send now: full ones, and every queue whose oldest check waited maxDelayMs. Order is kept per owner. */
  due(nowMs: number): ForwardBatch<T>[] {
    const out: ForwardBatch<T>[] = [];
    for (const [ownerId, queue] of this.queues) {
      const late = (): boolean => nowMs - (queue.addedAtMs[0] ?? nowMs) >= this.maxDelayMs;
      while (queue.items.length >= forwardBatchChecksMax || (queue.items.length > 0 && late())) {
        const items = queue.items.splice(0, forwardBatchChecksMax);
        queue.addedAtMs.splice(0, items.length);
        this.queued -= items.length;
        out.push({ ownerId, items });
      }
      if (queue.items.length === 0) this.queues.delete(ownerId);
    }
    assert(this.queued >= 0, "forward batcher: queued count never negative");
    return out;
  }

  /** The owner changed or died: its queued checks, to re-route (or fail) by the caller. */
  drain(ownerId: string): T[] {
    const queue = this.queues.get(ownerId);
    if (queue === undefined) return [];
    this.queues.delete(ownerId);
    this.queued -= queue.items.length;
    return queue.items;
  }

  size(): number {
    return this.queued;
  }
}
