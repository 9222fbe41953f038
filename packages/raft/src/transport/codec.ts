// Wire framing. One WebSocket binary frame is ONE msgpack value:
//   - a handshake frame is a map { k: "hello" | "challenge" | "proof", ... };
//   - a data frame is an array of raft messages.
// Messages are encoded one by one when queued (so each is size-checked once); a data frame is a
// msgpack array header followed by the already-encoded messages, which is itself valid msgpack.

import { Packr } from "msgpackr";
import { assert } from "../core/assert.js";

/** Most messages in one data frame (msgpack array16 bound). */
export const frameMessagesMax = 65_535;

// Records off: every frame must decode on its own, independent of earlier frames.
const packr = new Packr({ useRecords: false, mapsAsObjects: true });

export function encodeValue(value: unknown): Uint8Array {
  return packr.pack(value);
}

export function decodeValue(frame: Uint8Array): unknown {
  return packr.unpack(frame);
}

/** Bytes of the array header for `count` messages. */
export function frameHeaderBytes(count: number): number {
  return count < 16 ? 1 : 3;
}

/** Concatenates already-encoded messages under one msgpack array header. */
export function buildFrame(encoded: readonly Uint8Array[], totalBytes: number): Uint8Array {
  const count = encoded.length;
  assert(count > 0 && count <= frameMessagesMax, `frame: ${count} messages outside 1..${frameMessagesMax}`);
  const header = frameHeaderBytes(count);
  const frame = new Uint8Array(header + totalBytes);
  if (count < 16) {
    frame[0] = 0x90 | count; // fixarray
  } else {
    frame[0] = 0xdc; // array16
    frame[1] = count >>> 8;
    frame[2] = count & 0xff;
  }
  let offset = header;
  for (const bytes of encoded) {
    frame.set(bytes, offset);
    offset += bytes.byteLength;
  }
  assert(offset === frame.byteLength, "frame: totalBytes does not match the encoded messages");
  return frame;
}
