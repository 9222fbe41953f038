// A bounded FIFO of encoded messages for one peer. When full it drops the OLDEST message: raft
// tolerates loss (it retries appends and resends heartbeats), and the newest messages carry the
// most recent state. Drops are counted, never silent.

import { assert } from "../core/assert.js";
import { frameHeaderBytes, frameMessagesMax } from "./codec.js";

export class SendQueue {
  private items: Uint8Array[] = [];
  private head = 0;
  private queuedBytes = 0;
  /** Messages dropped because the queue was full, since creation. */
  dropped = 0;

  constructor(
    readonly messagesMax: number,
    readonly bytesMax: number,
  ) {
    assert(messagesMax > 0 && bytesMax > 0, "send queue: limits must be positive");
  }

  get length(): number {
    return this.items.length - this.head;
  }

  get bytes(): number {
    return this.queuedBytes;
  }

  /** Enqueues one encoded message (at most bytesMax), dropping the oldest ones to make room. */
  push(encoded: Uint8Array): void {
    assert(encoded.byteLength <= this.bytesMax, "send queue: a message larger than the whole queue");
    while (
      this.length > 0 &&
      (this.length >= this.messagesMax || this.queuedBytes + encoded.byteLength > this.bytesMax)
    ) {
      this.shift();
      this.dropped++;
    }
    this.items.push(encoded);
    this.queuedBytes += encoded.byteLength;
  }

  /** Dequeues the messages of one frame: as many as fit in frameBytesMax, and always at least one. */
  takeFrame(frameBytesMax: number): { encoded: Uint8Array[]; bytes: number } {
    assert(this.length > 0, "send queue: takeFrame on an empty queue");
    const encoded: Uint8Array[] = [];
    let bytes = 0;
    while (this.length > 0 && encoded.length < frameMessagesMax) {
      const next = this.items[this.head];
      assert(next !== undefined, "send queue: hole in the queue");
      if (encoded.length > 0 && frameHeaderBytes(encoded.length + 1) + bytes + next.byteLength > frameBytesMax) break;
      encoded.push(next);
      bytes += next.byteLength;
      this.shift();
    }
    return { encoded, bytes };
  }

  clear(): void {
    this.items = [];
    this.head = 0;
    this.queuedBytes = 0;
  }

  private shift(): void {
    const item = this.items[this.head];
    assert(item !== undefined, "send queue: shift on an empty queue");
    this.items[this.head] = EMPTY;
    this.head++;
    this.queuedBytes -= item.byteLength;
    // Compact now and then so the array does not grow without bound.
    if (this.head >= 1024 && this.head * 2 >= this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
  }
}

const EMPTY = new Uint8Array(0);
