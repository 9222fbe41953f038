// On-disk encodings. A log value is [term: u64 BE][type: u8][data...]: fixed header, no parsing
// cost proportional to the command. Small records (hard state, snapshot metadata) use msgpackr maps.

import { Packr } from "msgpackr";
import { assert } from "../core/assert.js";
import type { ConfState, Entry, EntryType, HardState, SnapshotMetadata } from "../core/types.js";
import { StorageError } from "../errors.js";
import { writeUint64 } from "./keys.js";

const entryHeaderBytes = 9;
// Records off: every value must decode on its own, without structures shared across writes.
const packr = new Packr({ useRecords: false, mapsAsObjects: true });

const entryTypeCodes: Record<EntryType, number> = { normal: 0, conf: 1 };

export function encodeEntryValue(entry: Entry): Uint8Array {
  const value = new Uint8Array(entryHeaderBytes + entry.data.byteLength);
  writeUint64(value, 0, entry.term);
  value[8] = entryTypeCodes[entry.type];
  value.set(entry.data, entryHeaderBytes);
  return value;
}

export function decodeEntryValue(index: number, value: Uint8Array): Entry {
  if (value.byteLength < entryHeaderBytes)
    throw corrupt(`log entry ${index}: ${value.byteLength} bytes is shorter than its header`);
  const view = new DataView(value.buffer, value.byteOffset, value.byteLength);
  const term = view.getUint32(0) * 2 ** 32 + view.getUint32(4);
  const typeCode = view.getUint8(8);
  if (typeCode !== 0 && typeCode !== 1) throw corrupt(`log entry ${index}: unknown type code ${typeCode}`);
  // Copy: the entry outlives the read buffer, and `data` must not alias LevelDB's memory.
  const data = copyBytes(value.subarray(entryHeaderBytes));
  return { term, index, type: typeCode === 0 ? "normal" : "conf", data };
}

/** A plain Uint8Array copy (LevelDB hands out Buffers that may share memory). */
export function copyBytes(bytes: Uint8Array): Uint8Array {
  const copy = new Uint8Array(bytes.byteLength);
  copy.set(bytes);
  return copy;
}

export function encodeRecord(record: HardState | LogMark): Uint8Array {
  return packr.pack(record);
}

/** The index and term of the entry just before firstIndex (etcd's dummy entry). */
export interface LogMark {
  index: number;
  term: number;
}

export function decodeHardState(value: Uint8Array): HardState {
  const raw: unknown = packr.unpack(value);
  if (!isObject(raw) || !isCount(raw["term"]) || typeof raw["vote"] !== "string" || !isCount(raw["commit"])) {
    throw corrupt("meta/hardState: bad encoding");
  }
  return { term: raw["term"], vote: raw["vote"], commit: raw["commit"] };
}

export function decodeLogMark(value: Uint8Array): LogMark {
  const raw: unknown = packr.unpack(value);
  if (!isObject(raw) || !isCount(raw["index"]) || !isCount(raw["term"])) throw corrupt("meta/compacted: bad encoding");
  return { index: raw["index"], term: raw["term"] };
}

/**
 * Where a snapshot's bytes are on disk: whole under snap!data (`pieces` 0), or in `pieces` pieces of
 * `pieceBytes` (the last one shorter or as long): piece files (`inFiles`, PieceFiles) or, as
 * releases before them wrote them and still read here, values under snap!piece!<index>!<n>.
 */
export interface SnapshotLayout {
  totalBytes: number;
  pieces: number;
  /** Bytes of every piece but the last; 0 when the snapshot is whole. */
  pieceBytes: number;
  /** The pieces are files (record version 3); false for a whole snapshot and for pieces in LevelDB. */
  inFiles: boolean;
}

/**
 * Version of the snap!meta record: 2 carries the layout (pieces in LevelDB, or whole), 3 the same
 * with the pieces in files. Version 1 (no `v`) had the metadata alone. A whole snapshot's record
 * stays version 2, which releases before piece files read.
 */
export const snapshotRecordVersion = 2;
export const snapshotRecordVersionPieceFiles = 3;

/** snap!meta: the snapshot's metadata and, so open() can verify the bytes are all there, its layout. */
export function encodeSnapshotRecord(metadata: SnapshotMetadata, layout: SnapshotLayout): Uint8Array {
  const { totalBytes, pieces, pieceBytes, inFiles } = layout;
  const v = inFiles ? snapshotRecordVersionPieceFiles : snapshotRecordVersion;
  return packr.pack({ v, ...metadata, totalBytes, pieces, pieceBytes });
}

/** A snap!meta record; `layout` is null for a version-1 record, whose layout open() works out from the bytes on disk. */
export function decodeSnapshotRecord(value: Uint8Array): { metadata: SnapshotMetadata; layout: SnapshotLayout | null } {
  const raw: unknown = packr.unpack(value);
  if (!isObject(raw) || !isCount(raw["index"]) || !isCount(raw["term"]) || !isObject(raw["conf"])) {
    throw corrupt("snap/meta: bad encoding");
  }
  const metadata = { index: raw["index"], term: raw["term"], conf: decodeConf(raw["conf"]) };
  if (raw["v"] === undefined) return { metadata, layout: null };
  const { totalBytes, pieces, pieceBytes } = raw;
  const inFiles = raw["v"] === snapshotRecordVersionPieceFiles;
  if (
    (raw["v"] !== snapshotRecordVersion && !inFiles) ||
    !isCount(totalBytes) ||
    !isCount(pieces) ||
    !isCount(pieceBytes) ||
    (inFiles && pieces === 0)
  )
    throw corrupt("snap/meta: bad layout");
  if (
    pieces === 0
      ? pieceBytes !== 0
      : pieceBytes === 0 || totalBytes <= (pieces - 1) * pieceBytes || totalBytes > pieces * pieceBytes
  )
    throw corrupt(`snap/meta: ${pieces} pieces of ${pieceBytes} bytes cannot hold ${totalBytes} bytes`);
  return { metadata, layout: { totalBytes, pieces, pieceBytes, inFiles } };
}

function decodeConf(raw: Record<string, unknown>): ConfState {
  const voters = raw["voters"];
  const learners = raw["learners"];
  if (!isStringArray(voters) || !isStringArray(learners)) throw corrupt("snap/meta: bad conf");
  return { voters: [...voters], learners: [...learners] };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function isCount(value: unknown): value is number {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 0;
}

function isStringArray(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((item) => typeof item === "string");
}

function corrupt(message: string): StorageError {
  return new StorageError("RAFT_ERR_STORAGE_CORRUPT", message);
}

assert(entryTypeCodes.normal !== entryTypeCodes.conf, "codec: entry type codes must be distinct");
