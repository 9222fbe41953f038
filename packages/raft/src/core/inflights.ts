import { assert } from "./assert.js";

/**
 * A bounded ring of the last index of each append message in flight to one follower. The leader
 * stops sending when it is full (flow control) and frees slots as acknowledgements arrive.
 */
export class Inflights {
  private readonly buffer: number[];
  private start = 0;
  count = 0;

  constructor(readonly capacity: number) {
    assert(Number.isInteger(capacity) && capacity > 0, "inflights capacity must be positive");
    this.buffer = new Array<number>(capacity).fill(0);
  }

  full(): boolean {
    return this.count === this.capacity;
  }

  /** Records a message whose last entry is `index`; indexes must increase. */
  add(index: number): void {
    assert(!this.full(), "inflights: add to a full window");
    const lastSlot = (this.start + this.count - 1) % this.capacity;
    assert(this.count === 0 || (this.buffer[lastSlot] ?? 0) < index, "inflights: indexes must increase");
    this.buffer[(this.start + this.count) % this.capacity] = index;
    this.count++;
  }

  /** Frees every message whose last index is <= `index` (acknowledged). */
  freeLE(index: number): void {
    while (this.count > 0 && (this.buffer[this.start] ?? Infinity) <= index) {
      this.start = (this.start + 1) % this.capacity;
      this.count--;
    }
    if (this.count === 0) this.start = 0;
  }

  /** Frees the oldest message (a heartbeat response shows the follower is alive while we are full). */
  freeFirstOne(): void {
    if (this.count === 0) return;
    this.start = (this.start + 1) % this.capacity;
    this.count--;
  }

  reset(): void {
    this.start = 0;
    this.count = 0;
  }
}
