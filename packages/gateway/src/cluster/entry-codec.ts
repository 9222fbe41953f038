// What a Raft log entry and a Raft snapshot of the gateway hold. An entry is either a key command
// tagged with the node (and process) that proposed it, so that node can hand the apply outcome to
// the request waiting for it, or a change to the cluster's address book (replicated so every
// member learns a new node's address). Encoded with the store's msgpack codec, so a command
// replays on every node exactly as it does in the single-node log.
import type { CommandOutcome, KeyCommand } from "@keyraft/core";
import { decodeValue, encodeValue } from "../store/codec.js";

export type ClusterEntry =
  | { kind: "command"; origin: string; seq: number; command: KeyCommand }
  | { kind: "peer"; id: string; url: string | null };

const commandTag = 1;
const peerTag = 2;

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

/** Throws on bytes it did not produce: a log entry that cannot be read is a broken invariant. */
export function decodeEntry(bytes: Uint8Array): ClusterEntry {
  const value = decodeValue(bytes);
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
