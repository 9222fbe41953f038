// What a Raft log entry and a Raft snapshot of the gateway hold. An entry is either a key command
// tagged with the node (and process) that proposed it, so that node can hand the apply outcome to
// the request waiting for it, or a change to the cluster's address book (replicated so every
// member learns a new node's address). Encoded with the store's msgpack codec, so a command
// replays on every node exactly as it does in the single-node log.
//
// Under load, the entries proposed in one event-loop turn travel as ONE Raft entry, a batch: the
// per-entry costs (a LevelDB put and a message slot on every node, a proposal waiter, an apply
// round) are then paid once per turn instead of once per write. A batch holds the encoded parts
// unchanged, so each part is exactly the bytes whose replay was checked when it was appended.
import type { CommandOutcome, KeyCommand } from "@keyraft/core";
import { assert } from "@keyraft/core";
import { decodeValue, encodeValue } from "../store/codec.js";

export type ClusterEntry =
  | { kind: "command"; origin: string; seq: number; command: KeyCommand }
  | { kind: "peer"; id: string; url: string | null };

const commandTag = 1;
const peerTag = 2;
const batchTag = 3;

/** Parts one batch entry holds at most. */
export const batchPartsMax = 1024;
/** Bytes of the parts of one batch entry at most (Raft's own entry limit is 4 MiB). */
export const batchBytesMax = 1 << 20;

export function encodeEntry(entry: ClusterEntry): Uint8Array {
  switch (entry.kind) {
    case "command":
      return encodeValue([commandTag, entry.origin, entry.seq, entry.command]);
    case "peer":
      return encodeValue([peerTag, entry.id, entry.url]);
    default: {
      const unknown: never = entry;
      throw new Error(`encodeEntry: unknown entry ${String(unknown)}`);
    }
  }
}

/**
 * One Raft entry holding several encoded entries (each from encodeEntry, none a batch), applied
 * in order at one index.
 */
export function encodeBatch(parts: readonly Uint8Array[]): Uint8Array {
  assert(parts.length > 1 && parts.length <= batchPartsMax, "encodeBatch: 2..batchPartsMax parts");
  return encodeValue([batchTag, ...parts]);
}

/** Whether `bytes` is a batch entry, from its first bytes only (msgpack array header, then the tag). */
export function isBatch(bytes: Uint8Array): boolean {
  const head = bytes[0];
  if (head === undefined) return false;
  if (head >= 0x90 && head <= 0x9f) return bytes[1] === batchTag; // fixarray
  if (head === 0xdc) return bytes[3] === batchTag; // array 16
  return false; // a batch never holds more than batchPartsMax + 1 elements
}

/** The encoded entries of a batch entry (its parts), or [bytes] for any other entry. */
export function entryParts(bytes: Uint8Array): Uint8Array[] {
  if (!isBatch(bytes)) return [bytes];
  const value = decodeValue(bytes) as unknown[];
  return value.slice(1) as Uint8Array[];
}

/** Every entry a Raft entry holds, in order (one, or a batch's parts). Throws like decodeEntry. */
export function decodeEntries(bytes: Uint8Array): ClusterEntry[] {
  const value = decodeValue(bytes);
  if (Array.isArray(value) && value[0] === batchTag) {
    const entries: ClusterEntry[] = [];
    for (let i = 1; i < value.length; i++) {
      const part: unknown = value[i];
      if (!(part instanceof Uint8Array) || isBatch(part)) throw new Error("decodeEntries: a batch part is not an entry");
      entries.push(entryOf(decodeValue(part)));
    }
    return entries;
  }
  return [entryOf(value)];
}

/** Throws on bytes it did not produce: a log entry that cannot be read is a broken invariant. */
export function decodeEntry(bytes: Uint8Array): ClusterEntry {
  return entryOf(decodeValue(bytes));
}

function entryOf(value: unknown): ClusterEntry {
  if (Array.isArray(value)) {
    if (value[0] === commandTag && typeof value[1] === "string" && typeof value[2] === "number" && typeof value[3] === "object" && value[3] !== null) {
      return { kind: "command", origin: value[1], seq: value[2], command: value[3] as KeyCommand };
    }
    if (value[0] === peerTag && typeof value[1] === "string" && (typeof value[2] === "string" || value[2] === null)) {
      return { kind: "peer", id: value[1], url: value[2] };
    }
  }
  throw new Error("decodeEntry: not a cluster entry");
}

/** The application part of a Raft snapshot: the key state and the address book. */
export interface ClusterSnapshot {
  keys: unknown;
  peers: Record<string, string>;
}

const snapshotVersion = 1;

export function encodeSnapshot(snapshot: ClusterSnapshot): Uint8Array {
  return encodeValue({ v: snapshotVersion, keys: snapshot.keys, peers: snapshot.peers });
}

export function decodeSnapshot(bytes: Uint8Array): ClusterSnapshot {
  const value = decodeValue(bytes) as { v?: unknown; keys?: unknown; peers?: unknown } | null;
  if (value === null || typeof value !== "object" || value.v !== snapshotVersion || typeof value.peers !== "object" || value.peers === null) {
    throw new Error("decodeSnapshot: not a cluster snapshot of version 1");
  }
  return { keys: value.keys, peers: value.peers as Record<string, string> };
}

export type { CommandOutcome };
