// Requests waiting for something that arrives later (an apply outcome, a forwarding answer),
// keyed by a sequence number. Bounded, and expired by a periodic sweep: every entry gets the same
// timeout, so insertion order is deadline order and the sweep stops at the first live entry.
import { assert } from "@keyraft/core";

interface Waiter<T> {
  resolve(value: T): void;
  reject(error: Error): void;
  deadlineMs: number;
}

export class PendingMap<T> {
  private readonly waiters = new Map<number, Waiter<T>>();

  constructor(
    readonly sizeMax: number,
    private readonly timeoutMs: number,
  ) {
    assert(sizeMax > 0 && timeoutMs > 0, "PendingMap: positive bounds");
  }

  get size(): number {
    return this.waiters.size;
  }

  get full(): boolean {
    return this.waiters.size >= this.sizeMax;
  }

  /** Registers `seq` (unique per map) and returns the promise it settles. */
  wait(seq: number, nowMs: number): Promise<T> {
    assert(!this.waiters.has(seq), "PendingMap: a sequence number waits once");
    assert(!this.full, "PendingMap: the caller checks `full` first");
    return new Promise<T>((resolve, reject) =>
      this.waiters.set(seq, { resolve, reject, deadlineMs: nowMs + this.timeoutMs }),
    );
  }

  has(seq: number): boolean {
    return this.waiters.has(seq);
  }

  resolve(seq: number, value: T): boolean {
    const waiter = this.waiters.get(seq);
    if (waiter === undefined) return false;
    this.waiters.delete(seq);
    waiter.resolve(value);
    return true;
  }

  reject(seq: number, error: Error): boolean {
    const waiter = this.waiters.get(seq);
    if (waiter === undefined) return false;
    this.waiters.delete(seq);
    waiter.reject(error);
    return true;
  }

  /** Rejects every waiter whose deadline passed. */
  expire(nowMs: number, error: (seq: number) => Error): void {
    for (const [seq, waiter] of this.waiters) {
      if (waiter.deadlineMs > nowMs) return;
      this.waiters.delete(seq);
      waiter.reject(error(seq));
    }
  }

  rejectAll(error: () => Error): void {
    const waiters = [...this.waiters.values()];
    this.waiters.clear();
    for (const waiter of waiters) waiter.reject(error());
  }
}
