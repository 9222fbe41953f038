// Collects the entries submitted during one event-loop turn and sends them as few Raft entries as
// the bounds allow: one batch entry (entry-codec.ts) per destination, instead of one proposal or
// one forwarded request per write. Every item of a group shares the group's result, so the
// caller's retry rule (resend only what was certainly not proposed) holds for the group as a
// whole. An item is never split: a batch received from a follower stays in one entry.
//
// The flush runs on setImmediate: after the I/O callbacks of this turn (every HTTP request parsed
// in it), so the batching costs at most one loop turn of latency and no timer per write.
import { assert } from "@keyraft/core";
import { batchBytesMax, batchPartsMax, encodeBatch, entryParts } from "./entry-codec.js";

interface Item<R> {
  key: string;
  parts: Uint8Array[];
  bytes: number;
  resolve(value: R): void;
  reject(error: unknown): void;
}

export class TurnBatcher<R> {
  private queue: Item<R>[] = [];
  private scheduled = false;
  /** Groups sent (for tests and metrics): items / groups is the batching factor. */
  groupsSent = 0;
  itemsSent = 0;

  /**
   * @param send sends one entry (a single entry or a batch) to `key`'s destination.
   * @param queueMax items waiting for the flush at most; past it `submit` rejects with `fullError()`.
   */
  constructor(
    private readonly send: (key: string, data: Uint8Array) => Promise<R>,
    private readonly queueMax: number,
    private readonly fullError: () => unknown,
  ) {
    assert(queueMax > 0, "TurnBatcher: positive queueMax");
  }

  get queued(): number {
    return this.queue.length;
  }

  /** Queues `data` (an encoded entry, or a batch whose parts must stay together) for `key`. */
  submit(key: string, data: Uint8Array): Promise<R> {
    if (this.queue.length >= this.queueMax) return Promise.reject(this.fullError());
    const parts = entryParts(data);
    let bytes = 0;
    for (const part of parts) bytes += part.byteLength;
    const result = new Promise<R>((resolve, reject) => this.queue.push({ key, parts, bytes, resolve, reject }));
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.flush());
    }
    return result;
  }

  private flush(): void {
    this.scheduled = false;
    const items = this.queue;
    this.queue = [];
    const byKey = new Map<string, Item<R>[]>();
    for (const item of items) {
      const list = byKey.get(item.key);
      if (list === undefined) byKey.set(item.key, [item]);
      else list.push(item);
    }
    for (const [key, list] of byKey) {
      let group: Item<R>[] = [];
      let parts = 0;
      let bytes = 0;
      for (const item of list) {
        if (group.length > 0 && (parts + item.parts.length > batchPartsMax || bytes + item.bytes > batchBytesMax)) {
          this.sendGroup(key, group);
          group = [];
          parts = 0;
          bytes = 0;
        }
        group.push(item);
        parts += item.parts.length;
        bytes += item.bytes;
      }
      if (group.length > 0) this.sendGroup(key, group);
    }
  }

  private sendGroup(key: string, group: Item<R>[]): void {
    const parts = group.flatMap((item) => item.parts);
    const data = parts.length === 1 ? (parts[0] as Uint8Array) : encodeBatch(parts);
    this.groupsSent++;
    this.itemsSent += group.length;
    let sent: Promise<R>;
    try {
      sent = this.send(key, data);
    } catch (error) {
      sent = Promise.reject(error);
    }
    sent.then(
      (value) => {
        for (const item of group) item.resolve(value);
      },
      (error: unknown) => {
        for (const item of group) item.reject(error);
      },
    );
  }
}
