import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { keyStart, newId, newKeySecret } from "../src/ids/ids.js";
import { base58Alphabet } from "../src/hash/base58.js";
import { idEpochSeconds } from "../src/ids/ids.js";

function decodeBase58(text: string): Uint8Array {
  let zeros = 0;
  while (text[zeros] === "1") zeros++;
  let value = 0n;
  for (const char of text) {
    const digit = base58Alphabet.indexOf(char);
    expect(digit).toBeGreaterThanOrEqual(0);
    value = value * 58n + BigInt(digit);
  }
  const bytes: number[] = [];
  while (value > 0n) {
    bytes.unshift(Number(value % 256n));
    value /= 256n;
  }
  return Uint8Array.from([...new Array<number>(zeros).fill(0), ...bytes]);
}

describe("newId", () => {
  it("is <prefix>_ base58 of 4 big-endian seconds since 1_700_000_000 and the 8 random bytes", () => {
    fc.assert(
      fc.property(
        fc.constantFrom("key", "api", "rlor", "req"),
        fc.integer({ min: 0, max: 6_000_000_000_000 }),
        fc.uint8Array({ minLength: 8, maxLength: 8 }),
        (prefix, nowMs, random8) => {
          const id = newId(prefix, nowMs, random8);
          expect(id.startsWith(`${prefix}_`)).toBe(true);
          const bytes = decodeBase58(id.slice(prefix.length + 1));
          expect(bytes).toHaveLength(12);
          const seconds = new DataView(bytes.buffer).getUint32(0);
          const expected = Math.min(0xffffffff, Math.max(0, Math.floor(nowMs / 1000) - idEpochSeconds));
          expect(seconds).toBe(expected);
          expect([...bytes.slice(4)]).toEqual([...random8]);
        },
      ),
    );
  });

  it("clamps times before the epoch to 0 seconds", () => {
    const id = newId("key", 0, new Uint8Array(8).fill(7));
    expect([...decodeBase58(id.slice(4)).slice(0, 4)]).toEqual([0, 0, 0, 0]);
  });

  it("orders ids of the same prefix by second while the base58 length is the same", () => {
    const random8 = new Uint8Array(8).fill(255);
    const a = newId("key", 1_763_000_000_000, random8);
    const b = newId("key", 1_763_000_001_000, new Uint8Array(8));
    expect(a.length).toBe(b.length);
    expect(a < b).toBe(true);
  });

  it("refuses a random part that is not 8 bytes", () => {
    expect(() => newId("key", 0, new Uint8Array(7))).toThrow();
  });
});

describe("newKeySecret and keyStart", () => {
  it("is optional <prefix>_ + base58([0x01, N, ...N random bytes])", () => {
    fc.assert(
      fc.property(
        fc.option(fc.stringMatching(/^[a-z]{1,8}$/), { nil: undefined }),
        fc.integer({ min: 16, max: 255 }).chain((n) => fc.uint8Array({ minLength: n, maxLength: n })),
        (prefix, random) => {
          const secret = newKeySecret(prefix, random);
          const encoded = prefix === undefined ? secret : secret.slice(prefix.length + 1);
          if (prefix !== undefined) expect(secret.startsWith(`${prefix}_`)).toBe(true);
          expect([...decodeBase58(encoded)]).toEqual([1, random.length, ...random]);
        },
      ),
    );
  });

  it("start is the first len(prefix) + 5 characters: prefix_ and 4 more, or 5 without prefix", () => {
    const random = new Uint8Array(16).fill(9);
    const withPrefix = newKeySecret("prefix", random);
    expect(keyStart(withPrefix, "prefix")).toBe(withPrefix.slice(0, 11));
    expect(keyStart(withPrefix, "prefix")).toMatch(/^prefix_[1-9A-HJ-NP-Za-km-z]{4}$/);
    const without = newKeySecret(undefined, random);
    expect(keyStart(without, undefined)).toBe(without.slice(0, 5));
    expect(keyStart(without, undefined)).toHaveLength(5);
  });

  it("refuses fewer than 16 or more than 255 random bytes", () => {
    expect(() => newKeySecret(undefined, new Uint8Array(15))).toThrow();
    expect(() => newKeySecret(undefined, new Uint8Array(256))).toThrow();
    expect(newKeySecret(undefined, new Uint8Array(255))).toMatch(/^[1-9A-HJ-NP-Za-km-z]+$/);
  });
});
