// The seeded stream of the counter simulations. It is xoshiro128** expanded from the seed with
// splitmix32, the same generator as packages/raft/src/core/prng.ts, so a seed recorded in
// packages/core/testdata/sim-counters-*.txt replays the run it was found in. The two packages
// share no code on purpose (raft depends on nothing of ours, and core on no I/O package), so the
// dozen lines live in both; test/prng-streams.test.ts checks that their streams stay equal.
import { assert } from "../assert.js";

export class SimRandom {
  private s0: number;
  private s1: number;
  private s2: number;
  private s3: number;

  constructor(seed: number) {
    assert(Number.isInteger(seed), "prng seed must be an integer");
    let x = seed >>> 0;
    const next = (): number => {
      x = (x + 0x9e3779b9) >>> 0;
      let z = x;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
      return (z ^ (z >>> 16)) >>> 0;
    };
    this.s0 = next();
    this.s1 = next();
    this.s2 = next();
    this.s3 = next();
    if ((this.s0 | this.s1 | this.s2 | this.s3) === 0) this.s0 = 1; // all-zero state is a fixed point
  }

  /** The next 32 random bits as an unsigned integer. */
  nextUint32(): number {
    const result = Math.imul(rotl(Math.imul(this.s1, 5) >>> 0, 7), 9) >>> 0;
    const t = (this.s1 << 9) >>> 0;
    this.s2 ^= this.s0;
    this.s3 ^= this.s1;
    this.s1 ^= this.s2;
    this.s0 ^= this.s3;
    this.s2 ^= t;
    this.s3 = rotl(this.s3 >>> 0, 11);
    this.s0 >>>= 0;
    this.s1 >>>= 0;
    this.s2 >>>= 0;
    return result;
  }

  /** A uniformly distributed integer in [0, maxExclusive). */
  intBelow(maxExclusive: number): number {
    assert(Number.isInteger(maxExclusive) && maxExclusive > 0 && maxExclusive <= 2 ** 32, "intBelow: bad bound");
    return Math.floor((this.nextUint32() / 2 ** 32) * maxExclusive);
  }

  /** A float in [0, 1). */
  nextFloat(): number {
    return this.nextUint32() / 2 ** 32;
  }

  /** True with probability `p`. */
  chance(p: number): boolean {
    return this.nextFloat() < p;
  }
}

function rotl(x: number, k: number): number {
  return ((x << k) | (x >>> (32 - k))) >>> 0;
}
