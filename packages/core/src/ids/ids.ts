import { assert } from "../assert.js";
import { base58Encode } from "../hash/base58.js";
import { idRandomBytes, keySecretBytesMax, keySecretBytesMin } from "../limits.js";

/** Ids count seconds from here (2023-11-14T22:13:20Z), so 32 bits last until the year 2159. */
export const idEpochSeconds = 1_700_000_000;

const secondsMax = 0xffffffff;

/**
 * An id as upstream makes them (docs/core-leaves.md, "Hashing, ids and key secrets"): `<prefix>_<base58(12 bytes)>`, the first 4 bytes the
 * big-endian seconds since `idEpochSeconds` (clamped to 0..2^32-1), then 8 random bytes. Ids of
 * different seconds are roughly time-ordered; ids are unique by their random bytes, which the
 * caller supplies (core has no randomness).
 */
export function newId(prefix: string, nowMs: number, random8: Uint8Array): string {
  assert(random8.length === idRandomBytes, "newId: exactly 8 random bytes");
  assert(Number.isFinite(nowMs), "newId: nowMs is a finite number");
  const seconds = Math.min(secondsMax, Math.max(0, Math.floor(nowMs / 1000) - idEpochSeconds));
  const bytes = new Uint8Array(4 + idRandomBytes);
  bytes[0] = (seconds >>> 24) & 0xff;
  bytes[1] = (seconds >>> 16) & 0xff;
  bytes[2] = (seconds >>> 8) & 0xff;
  bytes[3] = seconds & 0xff;
  bytes.set(random8, 4);
  return `${prefix}_${base58Encode(bytes)}`;
}

/**
 * A key secret as upstream makes them: an optional `<prefix>_`, then base58 of
 * `[0x01 (version), N, ...N random bytes]` with N = random.length (16..255). An empty prefix
 * counts as no prefix, as upstream's `prefix ? ... : ...` does.
 */
export function newKeySecret(prefix: string | undefined, random: Uint8Array): string {
  assert(
    random.length >= keySecretBytesMin && random.length <= keySecretBytesMax,
    "newKeySecret: 16..255 random bytes",
  );
  const bytes = new Uint8Array(2 + random.length);
  bytes[0] = 0x01;
  bytes[1] = random.length;
  bytes.set(random, 2);
  const encoded = base58Encode(bytes);
  return prefix ? `${prefix}_${encoded}` : encoded;
}

/**
 * The `start` shown for a key: the first `len(requestPrefix) + 5` characters of the
 * secret, so `prefix_` and 4 more characters with a prefix, the first 5 characters without one.
 * Only the prefix given in the createKey request counts (a keyspace's default prefix does not).
 */
export function keyStart(secret: string, requestPrefix: string | undefined): string {
  return secret.slice(0, (requestPrefix?.length ?? 0) + 5);
}
