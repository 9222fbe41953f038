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
  const view = new DataView(key.buffer);
  view.setUint32(prefix.byteLength, Math.floor(index / 2 ** 32));
  view.setUint32(prefix.byteLength + 4, index >>> 0);
  return key;
}

export function decodeLogKey(key: Uint8Array): number {
  assert(key.byteLength === logKeyBytes, `log key: expected ${logKeyBytes} bytes, got ${key.byteLength}`);
  const view = new DataView(key.buffer, key.byteOffset, key.byteLength);
  const index = view.getUint32(0) * 2 ** 32 + view.getUint32(4);
  assert(Number.isSafeInteger(index), "log key: index above 2^53");
  return index;
}
