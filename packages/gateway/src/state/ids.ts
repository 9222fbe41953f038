// Ids and request ids from the shell's clock and randomness (core's newId format).

import { newId } from "@keyraft/core";

/** Random bytes fetched per refill of the pool (8 per id). */
const randomPoolBytes = 4096;

export class IdSource {
  private pool: Uint8Array = new Uint8Array(0);
  private offset = 0;

  constructor(
    private readonly randomBytes: (length: number) => Uint8Array,
    private readonly nowMs: () => number,
  ) {}

  /** `<prefix>_<base58(4 bytes of seconds + 8 random bytes)>`. */
  next(prefix: string): string {
    if (this.offset + 8 > this.pool.length) {
      this.pool = this.randomBytes(randomPoolBytes);
      this.offset = 0;
    }
    const random8 = this.pool.subarray(this.offset, this.offset + 8);
    this.offset += 8;
    return newId(prefix, this.nowMs(), random8);
  }
}
