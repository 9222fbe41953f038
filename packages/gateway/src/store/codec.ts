// Byte encodings of everything the store writes to LevelDB: values with msgpackr, log indexes as
// fixed-width hex so that LevelDB's byte order is the numeric order of indexes.
import { Packr } from "msgpackr";

/**
 * `moreTypes` keeps Uint8Array, Set and Map as they were (the default decodes a Uint8Array as a
 * Buffer and would not deep-equal). Records stay on with inline definitions (no shared
 * `structures`), so every value decodes on its own, in any later process.
 * structuredClone stays off: commands and snapshots are trees, never graphs.
 */
const packr = new Packr({ moreTypes: true });

export function encodeValue(value: unknown): Uint8Array {
  return packr.pack(value);
}

export function decodeValue(bytes: Uint8Array): unknown {
  return packr.unpack(bytes);
}

/** Highest index a log key can hold: integers stay exact up to 2^53 - 1. */
export const logIndexMax = Number.MAX_SAFE_INTEGER;

const logKeyLength = 16;
const logKeyPattern = /^[0-9a-f]{16}$/;

/** A log index as 16 zero-padded lowercase hex digits: byte order equals numeric order. */
export function logIndexKey(index: number): string {
  if (!Number.isSafeInteger(index) || index < 0 || index > logIndexMax) {
    throw new RangeError(`log index out of range: ${index}`);
  }
  const key = index.toString(16).padStart(logKeyLength, "0");
  return key;
}

/** The inverse of `logIndexKey`; throws on anything it did not produce. */
export function parseLogIndexKey(key: string): number {
  if (!logKeyPattern.test(key)) throw new RangeError(`not a log index key: ${JSON.stringify(key)}`);
  const index = Number.parseInt(key, 16);
  if (!Number.isSafeInteger(index)) throw new RangeError(`log index key out of range: ${key}`);
  return index;
}

/** Deepest nesting `replaysEqual` compares; deeper values count as unequal (refused). */
export const replayCompareDepthMax = 256;

/**
 * Whether `decoded` (a value after encode/decode) would replay exactly like `original`: deep
 * equality of plain data where numbers compare with === (msgpack stores -0 as 0, which no
 * command can tell apart) and a renamed or dropped key (msgpackr renames "__proto__") is a
 * difference.
 */
export function replaysEqual(original: unknown, decoded: unknown, depth = 0): boolean {
  if (original === decoded) return true;
  if (typeof original === "number" && typeof decoded === "number")
    return Number.isNaN(original) && Number.isNaN(decoded);
  if (typeof original !== "object" || typeof decoded !== "object" || original === null || decoded === null)
    return false;
  if (depth >= replayCompareDepthMax) return false;
  if (original instanceof Uint8Array || decoded instanceof Uint8Array) {
    return original instanceof Uint8Array && decoded instanceof Uint8Array && Buffer.from(original).equals(decoded);
  }
  if (original instanceof Map || decoded instanceof Map) {
    if (!(original instanceof Map && decoded instanceof Map) || original.size !== decoded.size) return false;
    for (const [key, value] of original) {
      if (!decoded.has(key) || !replaysEqual(value, decoded.get(key), depth + 1)) return false;
    }
    return true;
  }
  if (original instanceof Set || decoded instanceof Set) {
    if (!(original instanceof Set && decoded instanceof Set) || original.size !== decoded.size) return false;
    for (const value of original) if (!decoded.has(value)) return false;
    return true;
  }
  if (Array.isArray(original) !== Array.isArray(decoded)) return false;
  const keys = Object.keys(original);
  if (keys.length !== Object.keys(decoded).length) return false;
  for (const key of keys) {
    if (!Object.prototype.hasOwnProperty.call(decoded, key)) return false;
    if (!replaysEqual((original as Record<string, unknown>)[key], (decoded as Record<string, unknown>)[key], depth + 1))
      return false;
  }
  return true;
}
