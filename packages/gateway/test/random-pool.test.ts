// The secret-bytes pool: every byte the source gave is handed out at most once, in order, and
// its place in the pool is zeroed; large requests bypass the pool.
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { RandomPool } from "../src/state/random-pool.js";

/** A source whose bytes are a counter, so reuse or loss of a byte is visible. */
function countingSource(): { source: (length: number) => Uint8Array; calls: number[] } {
  let next = 0;
  const calls: number[] = [];
  return {
    calls,
    source: (length) => {
      calls.push(length);
      return Uint8Array.from({ length }, () => next++ % 251);
    },
  };
}

describe("RandomPool", () => {
  it("hands out the source's bytes in order, never twice, refilling only when a request does not fit", () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 16 }), { maxLength: 200 }), (lengths) => {
        const { source, calls } = countingSource();
        const pool = new RandomPool(source, 64);
        let expectedNext = 0;
        let used = 64; // the pool starts empty
        for (const length of lengths) {
          const bytes = pool.take(length);
          expect(bytes.length).toBe(length);
          if (used + length > 64) {
            // the rest of the old pool is skipped, never handed out
            expectedNext = (calls.length - 1) * 64;
            used = 0;
          }
          expect([...bytes]).toEqual(Array.from({ length }, (_, i) => (expectedNext + i) % 251));
          expectedNext += length;
          used += length;
        }
        expect(calls.every((length) => length === 64)).toBe(true);
      }),
    );
  });

  it("zeroes what it handed out, and the returned bytes are a copy", () => {
    const { source } = countingSource();
    const pool = new RandomPool(source, 64);
    const first = pool.take(8);
    const internal = (pool as unknown as { pool: Uint8Array }).pool;
    expect([...internal.subarray(0, 8)]).toEqual([0, 0, 0, 0, 0, 0, 0, 0]);
    expect([...first]).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(first.buffer).not.toBe(internal.buffer);
  });

  it("sends a request over a quarter of the pool to the source", () => {
    const { source, calls } = countingSource();
    const pool = new RandomPool(source, 64);
    expect(pool.take(17).length).toBe(17);
    expect(calls).toEqual([17]);
  });
});
