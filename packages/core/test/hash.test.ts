import { createHash } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { sha256Base64 } from "../src/hash/sha256.js";
import { base58Alphabet, base58Encode } from "../src/hash/base58.js";
import { utf8Encode } from "../src/hash/sha256.js";

function nodeSha256Base64(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("base64");
}

// Reference base58: the big number in base 58 via BigInt, leading zero bytes as "1".
function referenceBase58(bytes: Uint8Array): string {
  let zeros = 0;
  while (zeros < bytes.length && bytes[zeros] === 0) zeros++;
  let value = 0n;
  for (const byte of bytes) value = value * 256n + BigInt(byte);
  let digits = "";
  while (value > 0n) {
    digits = base58Alphabet[Number(value % 58n)]! + digits;
    value /= 58n;
  }
  return "1".repeat(zeros) + digits;
}

// Strings with lone surrogates, astral characters and multi-block lengths.
const anyText = fc.oneof(
  fc.string({ unit: "binary", maxLength: 200 }),
  fc.string({ unit: "grapheme", maxLength: 100 }),
  fc.string({ unit: fc.integer({ min: 0xd7f0, max: 0xe010 }).map((c) => String.fromCharCode(c)), maxLength: 40 }),
  fc.string({ maxLength: 2000 }),
);

describe("sha256Base64", () => {
  it("matches the FIPS 180-4 test vectors", () => {
    expect(sha256Base64("")).toBe("47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=");
    expect(sha256Base64("abc")).toBe(
      Buffer.from("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", "hex").toString("base64"),
    );
    expect(sha256Base64("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")).toBe(
      Buffer.from("248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1", "hex").toString("base64"),
    );
  });

  it("equals node:crypto on every length around the block boundaries", () => {
    for (let length = 0; length <= 200; length++) {
      const text = "k".repeat(length);
      expect(sha256Base64(text), `length ${length}`).toBe(nodeSha256Base64(text));
    }
  });

  it("equals node:crypto for any string, including unicode and lone surrogates", () => {
    fc.assert(
      fc.property(anyText, (text) => {
        const hash = sha256Base64(text);
        expect(hash).toHaveLength(44);
        expect(hash).toBe(nodeSha256Base64(text));
      }),
      { numRuns: 2000 },
    );
  });

  it("is stateless between calls (a long input does not leak into the next hash)", () => {
    const long = "x".repeat(100_000) + "\u{1F600}";
    expect(sha256Base64(long)).toBe(nodeSha256Base64(long));
    expect(sha256Base64("short")).toBe(nodeSha256Base64("short"));
  });

  it("hashes a 30-char key fast (timing printed, not asserted)", () => {
    const keys = Array.from({ length: 1000 }, (_, i) => `prod_${String(i).padStart(25, "0")}`);
    for (const key of keys) expect(sha256Base64(key)).toBe(nodeSha256Base64(key));
    const rounds = 200;
    const start = process.hrtime.bigint();
    let sink = 0;
    for (let r = 0; r < rounds; r++) for (const key of keys) sink += sha256Base64(key).length;
    const elapsedNs = Number(process.hrtime.bigint() - start);
    expect(sink).toBe(rounds * keys.length * 44);
    console.log(`sha256Base64: ${(elapsedNs / (rounds * keys.length)).toFixed(0)} ns per 30-char key`);
  });
});

describe("utf8Encode", () => {
  it("equals Buffer.from(text, 'utf8') for any string", () => {
    fc.assert(
      fc.property(anyText, (text) => {
        expect(Buffer.from(utf8Encode(text)).equals(Buffer.from(text, "utf8"))).toBe(true);
      }),
      { numRuns: 1000 },
    );
  });
});

describe("base58Encode", () => {
  it("matches the Bitcoin test vectors", () => {
    expect(base58Encode(new Uint8Array())).toBe("");
    expect(base58Encode(Uint8Array.from([0]))).toBe("1");
    expect(base58Encode(Uint8Array.from([0, 0, 1]))).toBe("112");
    expect(base58Encode(Buffer.from("Hello World!"))).toBe("2NEpo7TZRRrLZSi2U");
    expect(base58Encode(Buffer.from("00000000000000000000", "hex"))).toBe("1111111111");
  });

  it("equals a BigInt reference for any bytes", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), (bytes) => {
        expect(base58Encode(bytes)).toBe(referenceBase58(bytes));
      }),
      { numRuns: 500 },
    );
  });
});
