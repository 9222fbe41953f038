// A key record as bytes, for the key table (key-table.ts). A node holds every key in memory, and a
// million records as objects cost about 460 heap bytes each plus the collector's time to trace
// eight objects per key (full collections of 430-490 ms on a 620 MB heap, README "Memory"). As
// bytes in a few large buffers a key costs its encoded size, about 120-160 bytes, and the
// collector sees none of it. This format lives only in memory: it is never written to disk or
// sent (snapshots hold records), so it may change between releases without a version.
//
// Layout, little-endian:
//   u32  total length in bytes, this field included
//   str  id, str hash          (at a fixed place, so the table's indexes compare them in place)
//   u16  flags (below)
//   f64  createdAtMs
//   str  start
//   u16  limits: 0 none, limitsInline then the list, else an interned list's number (1-based)
//   [str name] [str ownerId] [str identityId] [str environment] [str meta as JSON]
//   [f64 updatedAtMs] [f64 expiresAtMs] [f64 remaining]
//   [refill: u8 interval, f64 amount, f64 refillDay (NaN for null), f64 lastRefillAtMs]
//   [u16 count, str...: roleIds] [u16 count, str...: permissionIds] [str pendingMigrationId]
// where str is a varuint byte length and UTF-8 bytes, and [...] is present only with its flag.
// The api id is not in the bytes: the table keeps it per record as a number (its per-api listing).

import { assert } from "../assert.js";
import { connectionsPerRecordMax, interningTableMax, metaJsonLengthMax } from "./limits.js";
import type { JsonObject, KeyRecord, RatelimitConfig, RefillRule } from "./records.js";

const hasName = 1 << 0;
const hasOwnerId = 1 << 1;
const hasIdentityId = 1 << 2;
const hasEnvironment = 1 << 3;
const hasMeta = 1 << 4;
const hasUpdatedAt = 1 << 5;
const hasExpiresAt = 1 << 6;
const hasRemaining = 1 << 7;
const hasRefill = 1 << 8;
const hasRoles = 1 << 9;
const hasPermissions = 1 << 10;
const hasPendingMigration = 1 << 11;
const isEnabled = 1 << 12;

export const limitsInline = 0xffff;
/** Bytes a record's header takes before its id: the u32 total length. */
export const recordIdOffset = 4;
/**
 * Largest encoded record: a meta of metaJsonLengthMax characters (3 bytes each at most in UTF-8)
 * and connectionsPerRecordMax roles and permissions of up to 64 bytes each, with room to spare.
 */
export const encodedKeyBytesMax = 3 * metaJsonLengthMax + 2 * connectionsPerRecordMax * 64 + 64 * 1024;

/**
 * Lists of limits many keys share (an import gives most keys the same ones), numbered from 1 in
 * the order first seen; at most interningTableMax, later ones are written inline. The lists are
 * frozen: a decoded record shares them (records are never changed in place).
 */
export class LimitsTable {
  private readonly lists: RatelimitConfig[][] = [];
  private readonly numberByKey = new Map<string, number>();

  numberOf(limits: readonly RatelimitConfig[]): number {
    let key = "";
    for (const limit of limits)
      key += `${limit.name}\u0000${limit.limit}\u0000${limit.durationMs}\u0000${limit.autoApply}\u0001`;
    const known = this.numberByKey.get(key);
    if (known !== undefined) return known;
    if (this.lists.length >= interningTableMax) return limitsInline;
    const frozen = Object.freeze(limits.map((limit) => Object.freeze({ ...limit }))) as RatelimitConfig[];
    this.lists.push(frozen);
    this.numberByKey.set(key, this.lists.length);
    return this.lists.length;
  }

  /** The interned lists, numbered from 1 by their place (a copy: later ones are not in it). */
  allLists(): RatelimitConfig[][] {
    return this.lists.slice();
  }

  list(number: number): RatelimitConfig[] {
    const list = this.lists[number - 1];
    assert(list !== undefined, "LimitsTable: an interned list that was never added");
    return list;
  }
}

const noIds: string[] = Object.freeze([]) as unknown as string[];
const noLimits: RatelimitConfig[] = Object.freeze([]) as unknown as RatelimitConfig[];
// The WHATWG text codecs are globals of every runtime keyraft runs on; core's compiler settings
// carry no platform types, so their shape is stated here.
declare const TextEncoder: new () => { encode(input: string): Uint8Array };
declare const TextDecoder: new () => { decode(input: Uint8Array): string };
const textEncoder = new TextEncoder();
const textDecoder = new TextDecoder();

/** Writes records into a growing scratch buffer; the table copies the result into its arena. */
export class KeyEncoder {
  private bytes = new Uint8Array(4096);
  private view = new DataView(this.bytes.buffer);
  private at = 0;

  constructor(private readonly limits: LimitsTable) {}

  /** Encodes `key`; the bytes are valid until the next call. */
  encode(key: KeyRecord): Uint8Array {
    this.at = recordIdOffset;
    this.string(key.id);
    this.string(key.hash);
    let flags = key.enabled ? isEnabled : 0;
    if (key.name !== null) flags |= hasName;
    if (key.ownerId !== null) flags |= hasOwnerId;
    if (key.identityId !== null) flags |= hasIdentityId;
    if (key.environment !== null) flags |= hasEnvironment;
    if (key.meta !== null) flags |= hasMeta;
    if (key.updatedAtMs !== null) flags |= hasUpdatedAt;
    if (key.expiresAtMs !== null) flags |= hasExpiresAt;
    if (key.remaining !== null) flags |= hasRemaining;
    if (key.refill !== null) flags |= hasRefill;
    if (key.roleIds.length > 0) flags |= hasRoles;
    if (key.permissionIds.length > 0) flags |= hasPermissions;
    if (key.pendingMigrationId !== undefined) flags |= hasPendingMigration;
    this.u16(flags);
    this.f64(key.createdAtMs);
    this.string(key.start);
    if (key.ratelimits.length === 0) this.u16(0);
    else {
      const number = this.limits.numberOf(key.ratelimits);
      this.u16(number);
      if (number === limitsInline) {
        this.u16(key.ratelimits.length);
        for (const limit of key.ratelimits) {
          this.string(limit.name);
          this.f64(limit.limit);
          this.f64(limit.durationMs);
          this.u8(limit.autoApply ? 1 : 0);
        }
      }
    }
    if (key.name !== null) this.string(key.name);
    if (key.ownerId !== null) this.string(key.ownerId);
    if (key.identityId !== null) this.string(key.identityId);
    if (key.environment !== null) this.string(key.environment);
    if (key.meta !== null) this.string(JSON.stringify(key.meta));
    if (key.updatedAtMs !== null) this.f64(key.updatedAtMs);
    if (key.expiresAtMs !== null) this.f64(key.expiresAtMs);
    if (key.remaining !== null) this.f64(key.remaining);
    if (key.refill !== null) {
      this.u8(key.refill.interval === "daily" ? 0 : 1);
      this.f64(key.refill.amount);
      this.f64(key.refill.refillDay === null ? Number.NaN : key.refill.refillDay);
      this.f64(key.refill.lastRefillAtMs);
    }
    if (key.roleIds.length > 0) this.ids(key.roleIds);
    if (key.permissionIds.length > 0) this.ids(key.permissionIds);
    if (key.pendingMigrationId !== undefined) this.string(key.pendingMigrationId);
    assert(this.at <= encodedKeyBytesMax, "KeyEncoder: a record past encodedKeyBytesMax");
    this.view.setUint32(0, this.at, true);
    return this.bytes.subarray(0, this.at);
  }

  private room(bytes: number): void {
    if (this.at + bytes <= this.bytes.length) return;
    let size = this.bytes.length * 2;
    while (size < this.at + bytes) size *= 2;
    const grown = new Uint8Array(size);
    grown.set(this.bytes.subarray(0, this.at));
    this.bytes = grown;
    this.view = new DataView(grown.buffer);
  }

  private u8(value: number): void {
    this.room(1);
    this.bytes[this.at++] = value;
  }

  private u16(value: number): void {
    this.room(2);
    this.view.setUint16(this.at, value, true);
    this.at += 2;
  }

  private f64(value: number): void {
    this.room(8);
    this.view.setFloat64(this.at, value, true);
    this.at += 8;
  }

  private varuint(value: number): void {
    this.room(5);
    while (value >= 0x80) {
      this.bytes[this.at++] = (value & 0x7f) | 0x80;
      value >>>= 7;
    }
    this.bytes[this.at++] = value;
  }

  private ids(ids: readonly string[]): void {
    assert(ids.length <= 0xffff, "KeyEncoder: a connection list longer than a u16 counts");
    this.u16(ids.length);
    for (const id of ids) this.string(id);
  }

  private string(value: string): void {
    const length = value.length;
    let ascii = true;
    for (let i = 0; i < length; i++) {
      if (value.charCodeAt(i) >= 0x80) {
        ascii = false;
        break;
      }
    }
    if (ascii) {
      this.varuint(length * 2);
      this.room(length);
      for (let i = 0; i < length; i++) this.bytes[this.at + i] = value.charCodeAt(i);
      this.at += length;
      return;
    }
    // UTF-8 cannot hold a lone surrogate (TextEncoder would replace it): such a string is kept as
    // its JSON text, which escapes it, and marked by the low bit of its length.
    const wellFormed = (value as unknown as { isWellFormed(): boolean }).isWellFormed();
    const utf8 = textEncoder.encode(wellFormed ? value : JSON.stringify(value));
    this.varuint(utf8.length * 2 + (wellFormed ? 0 : 1));
    this.room(utf8.length);
    this.bytes.set(utf8, this.at);
    this.at += utf8.length;
  }
}

/** Reads records from an arena chunk. One per table: decoding allocates only the record itself. */
export class KeyDecoder {
  private bytes: Uint8Array = new Uint8Array(0);
  private view: DataView = new DataView(this.bytes.buffer);
  private at = 0;

  constructor(private readonly limits: LimitsTable) {}

  /** The record at `offset` of `chunk` (`view` is a DataView of the same chunk). */
  decode(chunk: Uint8Array, view: DataView, offset: number, apiId: string): KeyRecord {
    this.bytes = chunk;
    this.view = view;
    this.at = offset + recordIdOffset;
    const id = this.string();
    const hash = this.string();
    const flags = this.u16();
    const createdAtMs = this.f64();
    const start = this.string();
    const limitsNumber = this.u16();
    let ratelimits = noLimits;
    if (limitsNumber === limitsInline) {
      const count = this.u16();
      ratelimits = [];
      for (let i = 0; i < count; i++) {
        const name = this.string();
        const limit = this.f64();
        const durationMs = this.f64();
        const autoApply = this.u8() === 1;
        ratelimits.push({ name, limit, durationMs, autoApply });
      }
    } else if (limitsNumber !== 0) ratelimits = this.limits.list(limitsNumber);
    const name = (flags & hasName) !== 0 ? this.string() : null;
    const ownerId = (flags & hasOwnerId) !== 0 ? this.string() : null;
    const identityId = (flags & hasIdentityId) !== 0 ? this.string() : null;
    const environment = (flags & hasEnvironment) !== 0 ? this.string() : null;
    const meta = (flags & hasMeta) !== 0 ? (JSON.parse(this.string()) as JsonObject) : null;
    const updatedAtMs = (flags & hasUpdatedAt) !== 0 ? this.f64() : null;
    const expiresAtMs = (flags & hasExpiresAt) !== 0 ? this.f64() : null;
    const remaining = (flags & hasRemaining) !== 0 ? this.f64() : null;
    let refill: RefillRule | null = null;
    if ((flags & hasRefill) !== 0) {
      const interval = this.u8() === 0 ? "daily" : "monthly";
      const amount = this.f64();
      const day = this.f64();
      const lastRefillAtMs = this.f64();
      refill = { interval, amount, refillDay: Number.isNaN(day) ? null : day, lastRefillAtMs };
    }
    const roleIds = (flags & hasRoles) !== 0 ? this.ids() : noIds;
    const permissionIds = (flags & hasPermissions) !== 0 ? this.ids() : noIds;
    const record: KeyRecord = {
      id,
      apiId,
      hash,
      start,
      name,
      ownerId,
      identityId,
      meta,
      createdAtMs,
      updatedAtMs,
      expiresAtMs,
      enabled: (flags & isEnabled) !== 0,
      environment,
      remaining,
      refill,
      ratelimits,
      roleIds,
      permissionIds,
    };
    if ((flags & hasPendingMigration) !== 0) record.pendingMigrationId = this.string();
    assert(this.at - offset === view.getUint32(offset, true), "KeyDecoder: a record read past its length");
    return record;
  }

  /** The id of the record at `offset` of `chunk`, alone. */
  idAt(chunk: Uint8Array, offset: number): string {
    const at = offset + recordIdOffset;
    return readString(chunk, varuintEnd(chunk, at), readVaruint(chunk, at));
  }

  private u8(): number {
    return this.bytes[this.at++]!;
  }

  private u16(): number {
    const value = this.view.getUint16(this.at, true);
    this.at += 2;
    return value;
  }

  private f64(): number {
    const value = this.view.getFloat64(this.at, true);
    this.at += 8;
    return value;
  }

  private ids(): string[] {
    const count = this.u16();
    const ids: string[] = [];
    for (let i = 0; i < count; i++) ids.push(this.string());
    return ids;
  }

  private string(): string {
    const header = readVaruint(this.bytes, this.at);
    this.at = varuintEnd(this.bytes, this.at);
    const start = this.at;
    this.at += Math.floor(header / 2);
    return readString(this.bytes, start, header);
  }
}

/** What the table needs of an encoded record without decoding it (key-table.ts loadEncoded). */
export interface RecordHeader {
  /** Where the id and hash fields are. */
  idAt: number;
  hashAt: number;
  /** Where the record's u16 limits field is, and its value. */
  limitsAt: number;
  limitsNumber: number;
  hasConnections: boolean;
  hasIdentity: boolean;
  hasRefill: boolean;
  hasOwnerId: boolean;
}

/** The header fields of the record at `offset` (its length is checked by the caller). */
export function readRecordHeader(bytes: Uint8Array, view: DataView, offset: number): RecordHeader {
  const idAt = offset + recordIdOffset;
  const hashAt = stringFieldEnd(bytes, idAt);
  let at = stringFieldEnd(bytes, hashAt);
  const flags = view.getUint16(at, true);
  at += 2 + 8; // flags, createdAtMs
  at = stringFieldEnd(bytes, at); // start
  return {
    idAt,
    hashAt,
    limitsAt: at,
    limitsNumber: view.getUint16(at, true),
    hasConnections: (flags & (hasRoles | hasPermissions)) !== 0,
    hasIdentity: (flags & hasIdentityId) !== 0,
    hasRefill: (flags & hasRefill) !== 0,
    hasOwnerId: (flags & hasOwnerId) !== 0,
  };
}

/**
 * Where the f64 `remaining` of the record at `offset` lies, or -1 when the key's credits are
 * unlimited: the credit ledger's commands read and change that field alone, without decoding the
 * record (a lease is granted at a key's first verification, so a large state meets mostly records
 * no cache holds).
 */
export function remainingFieldAt(bytes: Uint8Array, view: DataView, offset: number): number {
  let at = stringFieldEnd(bytes, stringFieldEnd(bytes, offset + recordIdOffset)); // id, hash
  const flags = view.getUint16(at, true);
  if ((flags & hasRemaining) === 0) return -1;
  at = stringFieldEnd(bytes, at + 2 + 8); // flags, createdAtMs, start
  const limitsNumber = view.getUint16(at, true);
  at += 2;
  if (limitsNumber === limitsInline) {
    const count = view.getUint16(at, true);
    at += 2;
    for (let i = 0; i < count; i++) at = stringFieldEnd(bytes, at) + 8 + 8 + 1; // name, limit, durationMs, autoApply
  }
  for (const flag of optionalStringsBeforeRemaining) if ((flags & flag) !== 0) at = stringFieldEnd(bytes, at);
  if ((flags & hasUpdatedAt) !== 0) at += 8;
  if ((flags & hasExpiresAt) !== 0) at += 8;
  assert(at + 8 <= offset + view.getUint32(offset, true), "remainingFieldAt: the field inside its record");
  return at;
}

/** The str fields between the limits and `remaining`, in the order they are written. */
const optionalStringsBeforeRemaining = [hasName, hasOwnerId, hasIdentityId, hasEnvironment, hasMeta] as const;

/** The varuint at `at`. */
export function readVaruint(bytes: Uint8Array, at: number): number {
  let value = 0;
  let shift = 0;
  for (;;) {
    const byte = bytes[at++]!;
    value += (byte & 0x7f) * 2 ** shift;
    if (byte < 0x80) return value;
    shift += 7;
  }
}

/** Where the varuint at `at` ends. */
export function varuintEnd(bytes: Uint8Array, at: number): number {
  while (bytes[at]! >= 0x80) at++;
  return at + 1;
}

/**
 * The string of a str field whose bytes begin at `start` (`header`: the field's varuint, twice
 * the byte length plus 1 for a string kept as JSON text). Short ASCII goes without a TextDecoder.
 */
function readString(bytes: Uint8Array, start: number, header: number): string {
  const length = Math.floor(header / 2);
  if (header % 2 === 1) return JSON.parse(textDecoder.decode(bytes.subarray(start, start + length))) as string;
  if (length <= 64) {
    let ascii = true;
    for (let i = 0; i < length; i++) {
      if (bytes[start + i]! >= 0x80) {
        ascii = false;
        break;
      }
    }
    if (ascii) {
      let value = "";
      for (let i = 0; i < length; i++) value += String.fromCharCode(bytes[start + i]!);
      return value;
    }
  }
  return textDecoder.decode(bytes.subarray(start, start + length));
}

/**
 * Whether the str field at `at` holds `value`: the indexes compare a looked-up id or hash with
 * the bytes in place, without building a string.
 */
export function stringFieldEquals(bytes: Uint8Array, at: number, value: string): boolean {
  const header = readVaruint(bytes, at);
  const start = varuintEnd(bytes, at);
  if (header === value.length * 2) {
    let i = 0;
    for (; i < value.length; i++) {
      const code = value.charCodeAt(i);
      if (code >= 0x80) break;
      if (bytes[start + i] !== code) return false;
    }
    if (i === value.length) return true;
  }
  // A non-ASCII value: its UTF-8 form has more bytes than it has code units.
  if (header % 2 === 0 && header / 2 <= value.length) return false;
  return readString(bytes, start, header) === value;
}

/** Where the str field that begins at `at` ends. */
export function stringFieldEnd(bytes: Uint8Array, at: number): number {
  const header = readVaruint(bytes, at);
  return varuintEnd(bytes, at) + Math.floor(header / 2);
}

/** stringHash of the string the str field at `at` holds, from its bytes when they are ASCII. */
export function stringFieldHash(bytes: Uint8Array, at: number): number {
  const header = readVaruint(bytes, at);
  const start = varuintEnd(bytes, at);
  const end = start + Math.floor(header / 2);
  if (header % 2 === 0) {
    let hash = 0x811c9dc5;
    let i = start;
    for (; i < end; i++) {
      const byte = bytes[i]!;
      if (byte >= 0x80) break;
      hash ^= byte;
      hash = Math.imul(hash, 0x01000193);
    }
    if (i === end) return hash >>> 0;
  }
  return stringHash(readString(bytes, start, header));
}

/** Whether two str fields hold the same string (the encoding is canonical: equal bytes). */
export function stringFieldsEqual(a: Uint8Array, atA: number, b: Uint8Array, atB: number): boolean {
  const endA = stringFieldEnd(a, atA);
  if (endA - atA !== stringFieldEnd(b, atB) - atB) return false;
  for (let i = 0; i < endA - atA; i++) if (a[atA + i] !== b[atB + i]) return false;
  return true;
}

/** 32-bit FNV-1a of a string's UTF-16 code units: the tables' bucket hash. */
export function stringHash(value: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < value.length; i++) {
    hash ^= value.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}
