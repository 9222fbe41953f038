// Log keys are fixed-width big-endian so that LevelDB's byte order equals numeric order
// ("10" < "2" as strings; 0x..0a > 0x..02 as 8-byte big-endian). Indexes stay below 2^53.

import { assert } from "../core/assert.js";

/** Bytes of one log key. */
export const logKeyBytes = 8;

export function encodeLogKey(index: number): Uint8Array {
  assert(Number.isSafeInteger(index) && index >= 0, `log key: index ${index} must be a safe non-negative integer`);
  const key = new Uint8Array(logKeyBytes);
  const view = new DataView(key.buffer);
  view.setUint32(0, Math.floor(index / 2 ** 32));
  view.setUint32(4, index >>> 0);
  return key;
}

/**
 * The log key under a sublevel prefix, as the root database stores it ("!log!" + 8 bytes): the same
 * bytes a put through the sublevel writes, without abstract-level's per-operation prefixing.
 */
export function encodePrefixedLogKey(prefix: Uint8Array, index: number): Uint8Array {
  assert(Number.isSafeInteger(index) && index >= 0, `log key: index ${index} must be a safe non-negative integer`);
  const key = new Uint8Array(prefix.byteLength + logKeyBytes);
  key.set(prefix, 0);
  writeUint64(key, prefix.byteLength, index); // no DataView per key: one is written per log entry
  return key;
}

/** Big-endian `value` (a safe non-negative integer) into bytes[at..at+8). */
export function writeUint64(bytes: Uint8Array, at: number, value: number): void {
  const high = Math.floor(value / 2 ** 32);
  const low = value >>> 0;
  bytes[at] = high >>> 24;
  bytes[at + 1] = (high >>> 16) & 0xff;
  bytes[at + 2] = (high >>> 8) & 0xff;
  bytes[at + 3] = high & 0xff;
  bytes[at + 4] = low >>> 24;
  bytes[at + 5] = (low >>> 16) & 0xff;
  bytes[at + 6] = (low >>> 8) & 0xff;
  bytes[at + 7] = low & 0xff;
}

export function decodeLogKey(key: Uint8Array): number {
  assert(key.byteLength === logKeyBytes, `log key: expected ${logKeyBytes} bytes, got ${key.byteLength}`);
  const view = new DataView(key.buffer, key.byteOffset, key.byteLength);
  const index = view.getUint32(0) * 2 ** 32 + view.getUint32(4);
  assert(Number.isSafeInteger(index), "log key: index above 2^53");
  return index;
}
