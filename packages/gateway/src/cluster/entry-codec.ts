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
import { assert, CapturedKeys, type EncodedKeys } from "@keyraft/core";
import { joinSnapshotData, type SnapshotData } from "@keyraft/raft";
import { decodeValue, encodeValue } from "../store/codec.js";

export type ClusterEntry =
  | { kind: "command"; origin: string; seq: number; command: KeyCommand }
  | { kind: "peer"; id: string; url: string | null };

const commandTag = 1;
const peerTag = 2;
const batchTag = 3;

/**
 * Parts one batch entry holds at most. An entry applies in one piece of the applier's work (the
 * Raft driver yields between entries, not inside one), and at a million keys a part cost up to
 * about 50 µs on a node that had just installed the state (its records not yet decoded): batches
 * of 1,024 held a joining node's loop for 40-90 ms each (the scale bench's CPU profiles).
 */
export const batchPartsMax = 256;
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
      if (!(part instanceof Uint8Array) || isBatch(part))
        throw new Error("decodeEntries: a batch part is not an entry");
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
    if (
      value[0] === commandTag &&
      typeof value[1] === "string" &&
      typeof value[2] === "number" &&
      typeof value[3] === "object" &&
      value[3] !== null
    ) {
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

/** Version 1: one msgpack value. Still read (snapshots written before version 2). */
const snapshotVersionWhole = 1;
/** Version 2: one msgpack value whose key state's record arrays are encoded in slices. Still read. */
const snapshotVersionSliced = 2;
/**
 * Version 3: the slices of version 2, not wrapped in one value: [0xc1][u32 BE header length][a
 * msgpack header { v: 3, head, peers, parts: [[name, byteLength], ...] }][each part's bytes]. The
 * encoder hands the parts over as they are (a list), with no copy joining them: at a million keys
 * that copy was a second 150 MB of memory while a snapshot was taken. 0xc1 is a byte MessagePack
 * never uses, so no snapshot of version 1 or 2 (each one MessagePack value) starts with it.
 */
const snapshotVersionParts = 3;
/**
 * Version 4: version 3 whose key records may travel as the key table holds them (core
 * EncodedKeys): a part listed as [name, byteLength, partKindEncodedKeys] is [u32 BE length of the
 * runs][the api runs, msgpack][the records' bytes], and the header's `keyLimits` holds the lists of limits those records name. The
 * installing node copies the bytes into its table without decoding a record. A node of an earlier
 * release refuses version 4 (it reads 1 to 3) rather than misreading it.
 */
const snapshotVersionEncodedKeys = 4;
const partKindEncodedKeys = 1;
/**
 * Key records per encoded part: copying 4,000 records of ~150 bytes is well under the 1 ms a
 * snapshot may take of a loop turn, on either side.
 */
export const encodedKeysSliceRecords = 4000;
const partsMagic = 0xc1;
const partsPrefixBytes = 5;
/**
 * Records encoded per slice: about 1 ms of encoding for key records in a large heap (2,000 took
 * about 4.7 ms at 500,000 keys, above the 1 ms a snapshot may take of a loop turn).
 */
export const snapshotSliceRecords = 500;

/**
 * Encodes a snapshot in slices of `snapshotSliceRecords` records, awaiting `betweenSlices` after
 * each (the node passes a turn of the event loop, so verifications go on meanwhile). `keys` must
 * not change while this runs: a capture (captureKeyState) of immutable records. Returns the
 * snapshot (version 3) as a list of byte arrays, to be read as their concatenation.
 */
export async function encodeSnapshotSliced(
  snapshot: ClusterSnapshot,
  betweenSlices: () => Promise<void>,
): Promise<Uint8Array[]> {
  assert(typeof snapshot.keys === "object" && snapshot.keys !== null, "encodeSnapshotSliced: keys is an object");
  const head: Record<string, unknown> = {};
  const partBytes: Uint8Array[] = [];
  const parts: ([string, number] | [string, number, number])[] = [];
  let keyLimits: unknown = undefined;
  const addPart = (name: string, records: unknown[]) => {
    const bytes = encodeValue(records);
    partBytes.push(bytes);
    parts.push([name, bytes.byteLength]);
  };
  for (const [name, value] of Object.entries(snapshot.keys as Record<string, unknown>)) {
    if (value instanceof CapturedKeys) {
      // The key table's bytes, copied a slice at a time: no record is decoded or encoded.
      assert(name === "keys" && keyLimits === undefined, "encodeSnapshotSliced: one captured key table, as keys");
      keyLimits = value.limits;
      addPart(name, []);
      for (let start = 0; start < value.length; start += encodedKeysSliceRecords) {
        // Views of the table's arena, not copies: the capture keeps those bytes as they were.
        const slice = value.encodedViews(start, start + encodedKeysSliceRecords);
        const runs = encodeValue(slice.apiRuns);
        const prefix = new Uint8Array(4);
        new DataView(prefix.buffer).setUint32(0, runs.byteLength);
        partBytes.push(prefix, runs, ...slice.views);
        parts.push([name, prefix.byteLength + runs.byteLength + slice.byteLength, partKindEncodedKeys]);
        await betweenSlices();
      }
      continue;
    }
    if (!Array.isArray(value)) {
      head[name] = value;
      continue;
    }
    if (value.length === 0) addPart(name, []);
    for (let start = 0; start < value.length; start += snapshotSliceRecords) {
      addPart(name, value.slice(start, start + snapshotSliceRecords));
      await betweenSlices();
    }
  }
  const header = encodeValue(
    keyLimits === undefined
      ? { v: snapshotVersionParts, head, peers: snapshot.peers, parts }
      : { v: snapshotVersionEncodedKeys, head, peers: snapshot.peers, parts, keyLimits },
  );
  const prefix = new Uint8Array(partsPrefixBytes);
  prefix[0] = partsMagic;
  new DataView(prefix.buffer).setUint32(1, header.byteLength);
  return [prefix, header, ...partBytes];
}

export function decodeSnapshot(bytes: SnapshotData): ClusterSnapshot {
  const steps = decodeSnapshotSteps(joinSnapshotData(bytes));
  for (;;) {
    const step = steps.next();
    if (step.done === true) return step.value;
  }
}

/**
 * decodeSnapshot a part (`snapshotSliceRecords` records) per step, so the installing node decodes
 * one part per event-loop turn (a version 1 snapshot is one value: one step).
 */
export function* decodeSnapshotSteps(bytes: Uint8Array): Generator<void, ClusterSnapshot> {
  if (bytes[0] === partsMagic) return yield* decodePartsSteps(bytes);
  const value = decodeValue(bytes) as {
    v?: unknown;
    keys?: unknown;
    head?: unknown;
    parts?: unknown;
    peers?: unknown;
  } | null;
  if (value === null || typeof value !== "object" || typeof value.peers !== "object" || value.peers === null) {
    throw new Error("decodeSnapshot: not a cluster snapshot");
  }
  const peers = value.peers as Record<string, string>;
  if (value.v === snapshotVersionWhole) return { keys: value.keys, peers };
  if (
    value.v !== snapshotVersionSliced ||
    typeof value.head !== "object" ||
    value.head === null ||
    !Array.isArray(value.parts)
  ) {
    throw new Error(
      `decodeSnapshot: not a cluster snapshot of version ${snapshotVersionWhole}, ${snapshotVersionSliced} or ${snapshotVersionParts}`,
    );
  }
  const keys: Record<string, unknown> = { ...(value.head as Record<string, unknown>) };
  for (const part of value.parts as unknown[]) {
    if (!Array.isArray(part) || typeof part[0] !== "string" || !(part[1] instanceof Uint8Array))
      throw new Error("decodeSnapshot: a malformed part");
    collectPart(keys, part[0], part[1]);
    yield;
  }
  return { keys, peers };
}

/** Version 3: the header, then one part per step. */
function* decodePartsSteps(bytes: Uint8Array): Generator<void, ClusterSnapshot> {
  if (bytes.byteLength < partsPrefixBytes) throw new Error("decodeSnapshot: a version 3 snapshot without its header");
  const headerBytes = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint32(1);
  let at = partsPrefixBytes + headerBytes;
  if (at > bytes.byteLength) throw new Error("decodeSnapshot: a version 3 header past the end");
  const header = decodeValue(bytes.subarray(partsPrefixBytes, at)) as {
    v?: unknown;
    head?: unknown;
    peers?: unknown;
    parts?: unknown;
    keyLimits?: unknown;
  } | null;
  if (
    header === null ||
    typeof header !== "object" ||
    (header.v !== snapshotVersionParts && header.v !== snapshotVersionEncodedKeys) ||
    typeof header.head !== "object" ||
    header.head === null ||
    typeof header.peers !== "object" ||
    header.peers === null ||
    !Array.isArray(header.parts)
  )
    throw new Error("decodeSnapshot: not a cluster snapshot header of version 3 or 4");
  const keys: Record<string, unknown> = { ...(header.head as Record<string, unknown>) };
  for (const part of header.parts as unknown[]) {
    if (
      !Array.isArray(part) ||
      typeof part[0] !== "string" ||
      !Number.isSafeInteger(part[1]) ||
      (part[1] as number) < 0 ||
      (part.length > 2 && (header.v !== snapshotVersionEncodedKeys || part[2] !== partKindEncodedKeys))
    )
      throw new Error("decodeSnapshot: a malformed part");
    const end = at + (part[1] as number);
    if (end > bytes.byteLength) throw new Error("decodeSnapshot: a part past the end");
    if (part.length > 2) collectEncodedKeys(keys, part[0], header.keyLimits, bytes.subarray(at, end));
    else collectPart(keys, part[0], bytes.subarray(at, end));
    at = end;
    yield;
  }
  if (at !== bytes.byteLength) throw new Error("decodeSnapshot: bytes after the last part");
  return { keys, peers: header.peers as Record<string, string> };
}

/** Appends an encoded part of the key table (version 4) to `keys.encodedKeys`. */
function collectEncodedKeys(keys: Record<string, unknown>, name: string, limits: unknown, bytes: Uint8Array): void {
  if (name !== "keys" || !Array.isArray(limits)) throw new Error("decodeSnapshot: a malformed encoded keys part");
  if (bytes.byteLength < 4) throw new Error("decodeSnapshot: an encoded keys part without its runs");
  const runsEnd = 4 + new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint32(0);
  if (runsEnd > bytes.byteLength) throw new Error("decodeSnapshot: an encoded keys part's runs past its end");
  const apiRuns = decodeValue(bytes.subarray(4, runsEnd));
  if (!Array.isArray(apiRuns)) throw new Error("decodeSnapshot: an encoded keys part's runs are not a list");
  const encoded = (keys["encodedKeys"] ??= { limits, parts: [] }) as EncodedKeys;
  // The records stay a view of the snapshot's bytes: the table copies them as it loads.
  encoded.parts.push({ apiRuns: apiRuns as (string | number)[], bytes: bytes.subarray(runsEnd) });
}

/** Appends a part's records to `keys[name]`. */
function collectPart(keys: Record<string, unknown>, name: string, bytes: Uint8Array): void {
  const records = decodeValue(bytes);
  if (!Array.isArray(records)) throw new Error("decodeSnapshot: a part is not an array of records");
  const collected = (keys[name] ??= []) as unknown[];
  if (!Array.isArray(collected)) throw new Error(`decodeSnapshot: ${name} is both a value and a part`);
  for (const record of records) collected.push(record);
}

export type { CommandOutcome };
