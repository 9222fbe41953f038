import { assert } from "../assert.js";

/** The Bitcoin base58 alphabet (no 0, O, I, l), as upstream's ids and key secrets use. */
export const base58Alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";

/**
 * Base58 (Bitcoin alphabet) of `bytes`, as the `base-x` library encodes it: each leading zero
 * byte becomes a leading "1", the rest is the big-endian number in base 58. Quadratic in the
 * input length, which is at most 257 bytes here (a key secret).
 */
export function base58Encode(bytes: Uint8Array): string {
  let zeros = 0;
  while (zeros < bytes.length && bytes[zeros] === 0) zeros++;
  // log(256) / log(58) < 1.366: enough digits for the number.
  const digits = new Uint8Array(Math.ceil((bytes.length - zeros) * 1.366) + 1);
  let digitsLength = 0;
  for (let i = zeros; i < bytes.length; i++) {
    let carry = bytes[i]!;
    for (let j = 0; j < digitsLength; j++) {
      carry += digits[j]! << 8;
      digits[j] = carry % 58;
      carry = (carry / 58) | 0;
    }
    while (carry > 0) {
      assert(digitsLength < digits.length, "base58Encode: digit buffer large enough");
      digits[digitsLength++] = carry % 58;
      carry = (carry / 58) | 0;
    }
  }
  let out = "1".repeat(zeros);
  for (let j = digitsLength - 1; j >= 0; j--) out += base58Alphabet[digits[j]!];
  return out;
}
