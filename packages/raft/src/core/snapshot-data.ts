// A snapshot's bytes in either form the application may hand them over (types.ts, SnapshotData).
import type { SnapshotData } from "./types.js";

/** Bytes of `data`, whichever form it has. */
export function snapshotDataBytes(data: SnapshotData): number {
  if (data instanceof Uint8Array) return data.byteLength;
  let bytes = 0;
  for (const part of data) bytes += part.byteLength;
  return bytes;
}

/** `data` as one array (a list is joined: a copy). */
export function joinSnapshotData(data: SnapshotData): Uint8Array {
  if (data instanceof Uint8Array) return data;
  if (data.length === 1 && data[0] !== undefined) return data[0];
  const joined = new Uint8Array(snapshotDataBytes(data));
  let at = 0;
  for (const part of data) {
    joined.set(part, at);
    at += part.byteLength;
  }
  return joined;
}
