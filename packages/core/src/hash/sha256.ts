import { assert } from "../assert.js";

// SHA-256 (FIPS 180-4) in plain TypeScript: core imports no node:* module, and a key hash is on
// the verification hot path, so this streams UTF-8 straight into the message schedule with no
// per-call allocation except the 44-char result string.

const roundConstants = new Int32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98,
  0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
  0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8,
  0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
  0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819,
  0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
  0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
  0xc67178f2,
]);

const initialState = new Int32Array([
  0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
]);

// Module-level scratch: safe because JavaScript runs one hash to completion at a time.
const state = new Int32Array(8);
const schedule = new Int32Array(64);
const resultChars: number[] = new Array<number>(44).fill(0);
const base64Alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const base64Codes = new Uint8Array(64);
for (let i = 0; i < 64; i++) base64Codes[i] = base64Alphabet.charCodeAt(i);

function compress(): void {
  const w = schedule;
  const k = roundConstants;
  for (let i = 16; i < 64; i++) {
    const x = w[i - 15]!;
    const y = w[i - 2]!;
    const s0 = ((x >>> 7) | (x << 25)) ^ ((x >>> 18) | (x << 14)) ^ (x >>> 3);
    const s1 = ((y >>> 17) | (y << 15)) ^ ((y >>> 19) | (y << 13)) ^ (y >>> 10);
    w[i] = (w[i - 16]! + s0 + w[i - 7]! + s1) | 0;
  }
  let a = state[0]!,
    b = state[1]!,
    c = state[2]!,
    d = state[3]!;
  let e = state[4]!,
    f = state[5]!,
    g = state[6]!,
    h = state[7]!;
  for (let i = 0; i < 64; i++) {
    const s1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
    const choose = (e & f) ^ (~e & g);
    const t1 = (h + s1 + choose + k[i]! + w[i]!) | 0;
    const s0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
    const majority = (a & b) ^ (a & c) ^ (b & c);
    const t2 = (s0 + majority) | 0;
    h = g;
    g = f;
    f = e;
    e = (d + t1) | 0;
    d = c;
    c = b;
    b = a;
    a = (t1 + t2) | 0;
  }
  state[0] = (state[0]! + a) | 0;
  state[1] = (state[1]! + b) | 0;
  state[2] = (state[2]! + c) | 0;
  state[3] = (state[3]! + d) | 0;
  state[4] = (state[4]! + e) | 0;
  state[5] = (state[5]! + f) | 0;
  state[6] = (state[6]! + g) | 0;
  state[7] = (state[7]! + h) | 0;
}

// Bytes of the current 64-byte block are packed big-endian into schedule[0..15] as they arrive.
let blockBytes = 0;
let messageBytes = 0;

function pushByte(byte: number): void {
  const word = blockBytes >>> 2;
  const shift = 24 - ((blockBytes & 3) << 3);
  schedule[word] = (blockBytes & 3) === 0 ? byte << shift : schedule[word]! | (byte << shift);
  blockBytes++;
  messageBytes++;
  if (blockBytes === 64) {
    compress();
    blockBytes = 0;
  }
}

/**
 * Pushes the UTF-8 encoding of `text`, as TextEncoder and node's Buffer encode it: a lone
 * surrogate becomes U+FFFD (EF BF BD), so a hash here equals node:crypto's of the same string.
 */
function pushUtf8(text: string): void {
  const length = text.length;
  for (let i = 0; i < length; i++) {
    let code = text.charCodeAt(i);
    if (code < 0x80) {
      pushByte(code);
      continue;
    }
    if (code < 0x800) {
      pushByte(0xc0 | (code >>> 6));
      pushByte(0x80 | (code & 0x3f));
      continue;
    }
    if (code >= 0xd800 && code <= 0xdfff) {
      const next = i + 1 < length ? text.charCodeAt(i + 1) : 0;
      if (code <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
        code = 0x10000 + ((code - 0xd800) << 10) + (next - 0xdc00);
        i++;
        pushByte(0xf0 | (code >>> 18));
        pushByte(0x80 | ((code >>> 12) & 0x3f));
        pushByte(0x80 | ((code >>> 6) & 0x3f));
        pushByte(0x80 | (code & 0x3f));
        continue;
      }
      code = 0xfffd;
    }
    pushByte(0xe0 | (code >>> 12));
    pushByte(0x80 | ((code >>> 6) & 0x3f));
    pushByte(0x80 | (code & 0x3f));
  }
}

function stateByte(index: number): number {
  return (state[index >>> 2]! >>> (24 - ((index & 3) << 3))) & 0xff;
}

/**
 * SHA-256 of the UTF-8 bytes of `text`, as standard base64 with padding (always 44 chars).
 * This is the stored form of a key, as upstream stores it (docs/core-leaves.md, "Hashing, ids and
 * key secrets"): `base64(sha256(utf8(secret)))`.
 */
export function sha256Base64(text: string): string {
  state.set(initialState);
  blockBytes = 0;
  messageBytes = 0;
  pushUtf8(text);
  // Padding: 0x80, zeros to 56 mod 64, then the bit length as a 64-bit big-endian integer.
  const bitLengthHigh = Math.floor(messageBytes / 0x20000000);
  const bitLengthLow = (messageBytes * 8) >>> 0;
  pushByte(0x80);
  while (blockBytes !== 56) pushByte(0);
  schedule[14] = bitLengthHigh | 0;
  schedule[15] = bitLengthLow | 0;
  compress();
  // 32 bytes = 10 groups of 3 bytes (40 chars) + 2 bytes (3 chars + "=").
  let out = 0;
  for (let i = 0; i < 30; i += 3) {
    const triple = (stateByte(i) << 16) | (stateByte(i + 1) << 8) | stateByte(i + 2);
    resultChars[out++] = base64Codes[triple >>> 18]!;
    resultChars[out++] = base64Codes[(triple >>> 12) & 0x3f]!;
    resultChars[out++] = base64Codes[(triple >>> 6) & 0x3f]!;
    resultChars[out++] = base64Codes[triple & 0x3f]!;
  }
  const pair = (stateByte(30) << 8) | stateByte(31);
  resultChars[out++] = base64Codes[pair >>> 10]!;
  resultChars[out++] = base64Codes[(pair >>> 4) & 0x3f]!;
  resultChars[out++] = base64Codes[(pair << 2) & 0x3f]!;
  resultChars[out++] = 0x3d; // "="
  return String.fromCharCode.apply(null, resultChars);
}

/** UTF-8 encoding of `text` (lone surrogates become U+FFFD), like TextEncoder, which core's lib lacks. */
export function utf8Encode(text: string): Uint8Array {
  let byteLength = 0;
  const length = text.length;
  for (let i = 0; i < length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x80) byteLength += 1;
    else if (code < 0x800) byteLength += 2;
    else if (code <= 0xdbff && code >= 0xd800 && i + 1 < length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        byteLength += 4;
        i++;
      } else byteLength += 3;
    } else byteLength += 3;
  }
  const bytes = new Uint8Array(byteLength);
  let at = 0;
  for (let i = 0; i < length; i++) {
    let code = text.charCodeAt(i);
    if (code < 0x80) {
      bytes[at++] = code;
    } else if (code < 0x800) {
      bytes[at++] = 0xc0 | (code >>> 6);
      bytes[at++] = 0x80 | (code & 0x3f);
    } else {
      if (code >= 0xd800 && code <= 0xdfff) {
        const next = i + 1 < length ? text.charCodeAt(i + 1) : 0;
        if (code <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
          code = 0x10000 + ((code - 0xd800) << 10) + (next - 0xdc00);
          i++;
          bytes[at++] = 0xf0 | (code >>> 18);
          bytes[at++] = 0x80 | ((code >>> 12) & 0x3f);
          bytes[at++] = 0x80 | ((code >>> 6) & 0x3f);
          bytes[at++] = 0x80 | (code & 0x3f);
          continue;
        }
        code = 0xfffd;
      }
      bytes[at++] = 0xe0 | (code >>> 12);
      bytes[at++] = 0x80 | ((code >>> 6) & 0x3f);
      bytes[at++] = 0x80 | (code & 0x3f);
    }
  }
  assert(at === byteLength, "utf8Encode: sized and written byte counts agree");
  return bytes;
}
