// Random bytes for key secrets, drawn from a pool refilled from the CSPRNG. One
// crypto.randomBytes call costs a few microseconds (it enters the kernel's random source), which
// was about a sixth of the CPU of a createKey on one node; one call now serves a pool of them.
// Bytes handed out are copied and their place in the pool zeroed, so a secret already issued
// does not linger in the pool and no byte is ever handed out twice.

import { assert } from "@keyraft/core";

/** Bytes fetched per refill. */
export const randomPoolBytesDefault = 4096;

export class RandomPool {
  private readonly pool: Uint8Array;
  private offset: number;

  constructor(
    private readonly source: (length: number) => Uint8Array,
    private readonly poolBytes = randomPoolBytesDefault,
  ) {
    assert(Number.isSafeInteger(poolBytes) && poolBytes >= 64, "RandomPool: poolBytes is at least 64");
    this.pool = new Uint8Array(poolBytes);
    this.offset = poolBytes; // empty: the first take refills
  }

  /** `length` fresh random bytes; requests over a quarter of the pool go to the source directly. */
  take(length: number): Uint8Array {
    assert(Number.isSafeInteger(length) && length >= 0, "RandomPool.take: length is a non-negative integer");
    if (length > this.poolBytes / 4) return this.source(length);
    if (this.offset + length > this.poolBytes) this.refill();
    const out = this.pool.slice(this.offset, this.offset + length);
    this.pool.fill(0, this.offset, this.offset + length);
    this.offset += length;
    return out;
  }

  private refill(): void {
    const fresh = this.source(this.poolBytes);
    assert(fresh.length === this.poolBytes, "RandomPool: the source returned the bytes asked for");
    this.pool.set(fresh);
    fresh.fill(0);
    this.offset = 0;
  }
}
