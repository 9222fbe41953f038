// A simulated one-way link with the shape of the real transport (transport/send-queue.ts): a
// per-peer queue bounded in bytes that drops the OLDEST message when full, drained at a fixed
// number of bytes per step (a slow link). What the core puts in flight must fit, or it is lost.

import { assert } from "../core/assert.js";
import type { Message } from "../core/messages.js";

/** Bytes a message takes in the queue: its payload plus a fixed header allowance. */
export function messageBytes(message: Message): number {
  const headerBytes = 64;
  if (message.type === "snap") return headerBytes + message.data.byteLength;
  if (message.type === "app") return headerBytes + message.entries.reduce((sum, e) => sum + 24 + e.data.byteLength, 0);
  return headerBytes;
}

export class SimLink {
  private queue: { message: Message; bytes: number }[] = [];
  private head = 0;
  private queuedBytes = 0;
  /** Bytes of the message at the head already transmitted (a large message spans several steps). */
  private headSentBytes = 0;
  /** Messages dropped because the queue was full. */
  dropped = 0;
  /** Most bytes ever queued at once. */
  queuedBytesPeak = 0;

  constructor(
    readonly bytesMax: number,
    readonly bytesPerStep: number,
  ) {
    assert(bytesMax > 0 && bytesPerStep > 0, "link: limits must be positive");
  }

  get bytes(): number {
    return this.queuedBytes;
  }

  push(message: Message): void {
    const bytes = messageBytes(message);
    assert(bytes <= this.bytesMax, "link: a message larger than the whole queue");
    while (this.head < this.queue.length && this.queuedBytes + bytes > this.bytesMax) {
      this.shift();
      this.dropped++;
    }
    this.queue.push({ message, bytes });
    this.queuedBytes += bytes;
    this.queuedBytesPeak = Math.max(this.queuedBytesPeak, this.queuedBytes);
  }

  /** The messages whose last byte leaves during this step, in order. */
  drain(): Message[] {
    const out: Message[] = [];
    let budget = this.bytesPerStep;
    while (this.head < this.queue.length && budget > 0) {
      const item = this.queue[this.head];
      assert(item !== undefined, "link: hole in the queue");
      const need = item.bytes - this.headSentBytes;
      if (need > budget) {
        this.headSentBytes += budget;
        break;
      }
      budget -= need;
      out.push(item.message);
      this.shift();
    }
    return out;
  }

  /** The link went down: everything queued is lost. */
  clear(): void {
    this.queue = [];
    this.head = 0;
    this.queuedBytes = 0;
    this.headSentBytes = 0;
  }

  private shift(): void {
    const item = this.queue[this.head];
    assert(item !== undefined, "link: shift on an empty queue");
    this.queuedBytes -= item.bytes;
    this.head++;
    this.headSentBytes = 0;
    if (this.head >= 1024 && this.head * 2 >= this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
  }
}
