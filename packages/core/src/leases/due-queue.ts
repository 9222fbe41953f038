// A min-heap of (due time, key): what the lease holder's poll takes from, so a poll costs the keys
// that are due (O(due · log n)), not every key it holds. Entries are never removed early: one that
// a later schedule made stale is dropped when it comes out (the caller checks it against the due
// time it keeps per key).
import { assert } from "../assert.js";

export interface DueEntry {
  dueMs: number;
  keyId: string;
}

export class DueQueue {
  private readonly heap: DueEntry[] = [];

  get size(): number {
    return this.heap.length;
  }

  push(dueMs: number, keyId: string): void {
    assert(!Number.isNaN(dueMs), "due queue: a due time is a number");
    const heap = this.heap;
    heap.push({ dueMs, keyId });
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (heap[parent]!.dueMs <= heap[i]!.dueMs) break;
      [heap[parent], heap[i]] = [heap[i]!, heap[parent]!];
      i = parent;
    }
  }

  /** The earliest entry due at or before `nowMs`, removed; undefined when none is. */
  popDue(nowMs: number): DueEntry | undefined {
    const heap = this.heap;
    const top = heap[0];
    if (top === undefined || top.dueMs > nowMs) return undefined;
    const last = heap.pop()!;
    if (heap.length === 0) return top;
    heap[0] = last;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      const right = left + 1;
      let least = i;
      if (left < heap.length && heap[left]!.dueMs < heap[least]!.dueMs) least = left;
      if (right < heap.length && heap[right]!.dueMs < heap[least]!.dueMs) least = right;
      if (least === i) break;
      [heap[least], heap[i]] = [heap[i]!, heap[least]!];
      i = least;
    }
    return top;
  }

  clear(): void {
    this.heap.length = 0;
  }
}
