// The keys of the key state: a map from key id to record, with an index by hash and a listing by
// api, that holds its records as bytes (key-codec.ts) in an arena of large buffers instead of as
// objects. A node holds every key in memory, and as objects a million keys were 460 MB of heap
// and eight objects each for the collector to trace (README "Memory"); here a key is its encoded
// bytes plus 24 bytes of slot columns (slot-columns.ts) and 16 of index, none of it traced.
//
// It behaves as the Map it replaces, order included: records iterate in insertion order, a set of
// an existing id keeps its place, and a delete drops it. That order is replicated state (snapshots
// list records in it), so every replica holds the same. A get decodes the record (a bounded cache
// keeps the most recently read ones), so a record read twice may be two equal objects: records
// are never changed in place, and nothing compares them by identity.
//
// Layout: each record has a slot (its place in the order) holding where its bytes are (chunk and
// offset), its api's number and a few flags for scans. Two open-addressing tables (linear probing,
// at most half full) map an id's and a hash's 32-bit string hash to slots; a probe compares the
// string with the bytes in place. New bytes go to the end of the last chunk; a replaced or deleted
// record's bytes are dead, and a chunk whose live bytes fall under a quarter has its records moved
// to the end, so dead bytes stay a bounded share. Written bytes never change, so a capture (a copy
// of the slots' places) keeps reading the records of its moment while later commands apply.

import { assert } from "../assert.js";
import {
  KeyDecoder,
  KeyEncoder,
  limitsInline,
  LimitsTable,
  readRecordHeader,
  recordIdOffset,
  remainingFieldAt,
  stringFieldEnd,
  stringFieldEquals,
  stringFieldHash,
  stringFieldsEqual,
  stringHash,
} from "./key-codec.js";
import type { KeyRecord, RatelimitConfig } from "./records.js";
import { SlotColumn } from "./slot-columns.js";

/** Bytes of one arena chunk (a record larger than this gets a chunk of its own size). */
export const keyArenaChunkBytes = 1 << 20;
/**
 * Decoded records kept for the next get (the keys being verified): a cache of this many entries
 * (a power of two) in sets of two, a record in the set of its id's hash, the newer first. No order
 * to keep beyond that: a Map with oldest-first eviction spent its time skipping deleted entries.
 * Two ways, not one: with one, the keys of a hot set that share a bucket evict each other on every
 * use (in process, 13 % of 200,000 decisions over 5,000 keys decoded their record again; with two
 * ways, 0.2 %).
 */
export const decodedKeysCacheMax = 1 << 16;
const cacheSetMask = decodedKeysCacheMax / 2 - 1;
/**
 * Slots moved into growing indexes per change of the table (see KeyTable.oldIdIndex). Each move
 * is two writes at random places of indexes of up to 32 MB, mostly cache misses. Applying
 * 1,000-key imports up to a million keys in process: at 256 a step the ones during the growth at
 * 786,000 keys took 21-36 ms (4-6 ms outside a growth); at 64, at most 20-26 ms, spread over four
 * times as many. A growth still ends long before the new indexes are half full.
 */
export const indexGrowthSlotsPerStep = 64;
/**
 * Int32 entries between two writes of the pages of the next indexes before they are used (see
 * KeyTable.nextIdIndex): a step writes one entry of each, so a change of the table first-touches
 * half a page on average (about 7 µs here) instead of two pages at random per moved slot.
 */
export const indexPrefaultStride = 256;
/** Deleted slots tolerated before the slot arrays are compacted (and at least as many as live ones). */
const holesBeforeCompaction = 4096;

/** Scan filters for `valuesWith`: keys with roles or permissions, with an identity, with a refill. */
export const keyHasConnections = 1;
export const keyHasIdentity = 2;
export const keyHasRefill = 4;
export const keyHasOwnerId = 8;

function flagsOf(key: KeyRecord): number {
  let flags = 0;
  if (key.roleIds.length > 0 || key.permissionIds.length > 0) flags |= keyHasConnections;
  if (key.identityId !== null) flags |= keyHasIdentity;
  if (key.refill !== null) flags |= keyHasRefill;
  if (key.ownerId !== null) flags |= keyHasOwnerId;
  return flags;
}

/**
 * Keys as the table holds them, for a snapshot that a node of this release installs without
 * decoding a record: each part's records are their bytes, back to back, with their api ids as
 * runs (`[apiId, count, apiId, count, ...]`: the keys of one api mostly come together); a record
 * names a shared list of limits by its place in `limits` (1-based).
 */
export interface EncodedKeys {
  limits: RatelimitConfig[][];
  parts: EncodedKeysPart[];
}

export interface EncodedKeysPart {
  apiRuns: (string | number)[];
  bytes: Uint8Array;
}

/** An EncodedKeysPart whose bytes are views of the arena, in order (CapturedKeys.encodedViews). */
export interface EncodedKeysViews {
  apiRuns: (string | number)[];
  views: Uint8Array[];
  byteLength: number;
}

/** The number of records of a part, from its api runs. */
export function encodedPartRecords(part: EncodedKeysPart): number {
  let records = 0;
  for (let i = 1; i < part.apiRuns.length; i += 2) records += part.apiRuns[i] as number;
  return records;
}

/** The records of one moment of a table, read lazily (for encoding a snapshot in slices). */
export class CapturedKeys implements Iterable<KeyRecord> {
  constructor(
    /** The table's shared lists of limits at the capture, which its records name by number. */
    readonly limits: RatelimitConfig[][],
    private readonly decoder: KeyDecoder,
    private readonly chunks: readonly (Uint8Array | null)[],
    private readonly views: readonly (DataView | null)[],
    private readonly chunkOf: Uint32Array,
    private readonly offsetOf: Uint32Array,
    /** Each record's api number + 1, and the api ids by number, as they were at the capture. */
    private readonly apiOf: Uint32Array,
    private readonly apiIds: readonly (string | undefined)[],
  ) {}

  get length(): number {
    return this.chunkOf.length;
  }

  /** Records `start` to `end` (exclusive), decoded: each call makes new objects. */
  slice(start: number, end: number = this.length): KeyRecord[] {
    const records: KeyRecord[] = [];
    const last = Math.min(end, this.length);
    for (let i = Math.max(0, start); i < last; i++) records.push(this.at(i));
    return records;
  }

  /**
   * Records `start` to `end` (exclusive) as their bytes (see EncodedKeys), as views of the arena:
   * a run of records that lie back to back is one view, and nothing is copied (a snapshot's key
   * bytes at a million keys were a second 130 MB while they waited to be written).
   */
  encodedViews(start: number, end: number = this.length): EncodedKeysViews {
    const last = Math.min(end, this.length);
    const views: Uint8Array[] = [];
    let byteLength = 0;
    let runChunk = -1;
    let runStart = 0;
    let runEnd = 0;
    const closeRun = () => {
      if (runChunk >= 0) views.push(this.chunks[runChunk]!.subarray(runStart, runEnd));
    };
    for (let i = Math.max(0, start); i < last; i++) {
      const chunk = this.chunkOf[i]!;
      const offset = this.offsetOf[i]!;
      const length = this.views[chunk]!.getUint32(offset, true);
      byteLength += length;
      if (chunk === runChunk && offset === runEnd) {
        runEnd += length;
        continue;
      }
      closeRun();
      runChunk = chunk;
      runStart = offset;
      runEnd = offset + length;
    }
    closeRun();
    const apiRuns: (string | number)[] = [];
    for (let i = Math.max(0, start); i < last; i++) {
      const apiId = this.apiIdAt(i);
      if (apiRuns.length > 0 && apiRuns[apiRuns.length - 2] === apiId) (apiRuns[apiRuns.length - 1] as number)++;
      else apiRuns.push(apiId, 1);
    }
    return { apiRuns, views, byteLength };
  }

  /** encodedViews in one array (a copy): a part as a snapshot's reader gets it. */
  encodedSlice(start: number, end: number = this.length): EncodedKeysPart {
    const { apiRuns, views, byteLength } = this.encodedViews(start, end);
    const bytes = new Uint8Array(byteLength);
    let at = 0;
    for (const view of views) {
      bytes.set(view, at);
      at += view.byteLength;
    }
    assert(at === byteLength, "CapturedKeys.encodedSlice: every byte copied");
    return { apiRuns, bytes };
  }

  at(i: number): KeyRecord {
    const chunk = this.chunkOf[i]!;
    return this.decoder.decode(this.chunks[chunk]!, this.views[chunk]!, this.offsetOf[i]!, this.apiIdAt(i));
  }

  private apiIdAt(i: number): string {
    const apiId = this.apiIds[this.apiOf[i]! - 1];
    assert(apiId !== undefined, "CapturedKeys: a record without its api");
    return apiId;
  }

  *[Symbol.iterator](): Iterator<KeyRecord> {
    for (let i = 0; i < this.length; i++) yield this.at(i);
  }
}

/**
 * The shared lists of limits of an EncodedKeys, for loading its parts into a table: a snapshot's
 * list number mapped to the table's own, found once per list.
 */
export class LimitsOfSnapshot {
  private readonly local: number[] = [];

  constructor(private readonly lists: readonly RatelimitConfig[][]) {}

  /** The table's number of the snapshot's list `number`. */
  localNumber(table: LimitsTable, number: number): number {
    const known = this.local[number - 1];
    if (known !== undefined) return known;
    const list = this.lists[number - 1];
    assert(list !== undefined, "LimitsOfSnapshot: a record names a list the snapshot does not hold");
    const local = table.numberOf(list);
    // A snapshot holds at most interningTableMax lists and loads into a table that holds no
    // other (restores start from an empty table), so each finds a number.
    assert(local !== limitsInline, "LimitsOfSnapshot: the table has room for the snapshot's lists");
    this.local[number - 1] = local;
    return local;
  }
}

export class KeyTable implements Iterable<[string, KeyRecord]> {
  private limits = new LimitsTable();
  private encoder = new KeyEncoder(this.limits);
  private decoder = new KeyDecoder(this.limits);

  // Slots, in the order of the map. apiOf is the api's number + 1; 0 marks a deleted slot.
  private slotCapacity = 0;
  private slotCount = 0;
  private liveCount = 0;
  private chunkOf = new SlotColumn();
  private offsetOf = new SlotColumn();
  private apiOf = new SlotColumn();
  private scanFlagsOf = new SlotColumn();
  private idHashOf = new SlotColumn();
  private hashHashOf = new SlotColumn();
  /** Bumped when slots move (compaction, clear): an iteration across it would skip or repeat. */
  private layout = 0;

  // Indexes: slot + 1 per bucket, 0 empty.
  private idIndex = new Int32Array(0);
  private hashIndex = new Int32Array(0);
  /**
   * While the indexes grow: the smaller ones they replace, which still hold every live slot below
   * `growthEnd` (the slots then). Slots below `growthDone` are in the new ones too, and so is every
   * slot added since; each change of the table moves indexGrowthSlotsPerStep more. Rebuilding a
   * million keys' indexes at once stopped the loop for 100-170 ms.
   */
  private oldIdIndex: Int32Array | null = null;
  private oldHashIndex: Int32Array | null = null;
  private growthDone = 0;
  private growthEnd = 0;
  /**
   * Before a growth: the indexes that will replace these, allocated once they pass 31/64 full and
   * written a stride at a time (prefaultAt) so that their memory is in place when slots move into
   * them. Writing them takes length / 128 changes of the table, half of the length / 64 left before
   * the growth; later would not leave the time, earlier would hold their memory (32 MB at a
   * million keys) for longer. A first write to a page of fresh memory costs about 15 µs on the VMs this runs on: moving
   * 256 slots into untouched 8 MB indexes touched some 500 pages, and one 1,000-key import spent
   * 100 ms there at 524,288 keys.
   */
  private nextIdIndex: Int32Array<ArrayBuffer> | null = null;
  private nextHashIndex: Int32Array<ArrayBuffer> | null = null;
  private prefaultAt = 0;

  // Arena.
  private chunks: (Uint8Array | null)[] = [];
  private views: (DataView | null)[] = [];
  private chunkLiveBytes: number[] = [];
  private chunkEnd: number[] = [];
  private tail = -1;
  private arenaBytes = 0;

  // Api ids by number, with the number of keys of each (a number is reused once none has it).
  private apiIds: (string | undefined)[] = [];
  private apiKeyCounts: number[] = [];
  private readonly apiNumberById = new Map<string, number>();
  private freeApiNumbers: number[] = [];

  private readonly cachedIds: (string | undefined)[] = new Array<string | undefined>(decodedKeysCacheMax);
  private readonly cachedRecords: (KeyRecord | undefined)[] = new Array<KeyRecord | undefined>(decodedKeysCacheMax);
  /**
   * The same records by hash, for verifications (getByHash), direct-mapped: a bucket names the
   * record and its id's hash, and counts only while the id cache still holds the record (a set or
   * a delete of the key takes it out), so this cache needs no invalidation of its own.
   */
  private readonly cachedHashes: (string | undefined)[] = new Array<string | undefined>(decodedKeysCacheMax);
  private readonly cachedByHash: (KeyRecord | undefined)[] = new Array<KeyRecord | undefined>(decodedKeysCacheMax);
  private readonly cachedByHashIdHash = new Uint32Array(decodedKeysCacheMax);

  constructor() {
    this.clear();
  }

  get size(): number {
    return this.liveCount;
  }

  /** Bytes the arena holds (live and dead records), for the memory figures. */
  get arenaByteLength(): number {
    return this.arenaBytes;
  }

  clear(): void {
    this.slotCount = 0;
    this.liveCount = 0;
    this.chunkOf = new SlotColumn();
    this.offsetOf = new SlotColumn();
    this.apiOf = new SlotColumn();
    this.scanFlagsOf = new SlotColumn();
    this.idHashOf = new SlotColumn();
    this.hashHashOf = new SlotColumn();
    this.slotCapacity = this.chunkOf.capacity;
    this.idIndex = new Int32Array(2048);
    this.hashIndex = new Int32Array(2048);
    this.oldIdIndex = null;
    this.oldHashIndex = null;
    this.nextIdIndex = null;
    this.nextHashIndex = null;
    this.chunks = [];
    this.views = [];
    this.chunkLiveBytes = [];
    this.chunkEnd = [];
    this.tail = -1;
    this.arenaBytes = 0;
    this.apiIds = [];
    this.apiKeyCounts = [];
    this.apiNumberById.clear();
    this.freeApiNumbers = [];
    this.cachedIds.fill(undefined);
    this.cachedRecords.fill(undefined);
    this.cachedHashes.fill(undefined);
    this.cachedByHash.fill(undefined);
    // Captures keep the lists they name; a cleared table starts its own.
    this.limits = new LimitsTable();
    this.encoder = new KeyEncoder(this.limits);
    this.decoder = new KeyDecoder(this.limits);
    this.layout++;
  }

  has(id: string): boolean {
    return this.slotOfId(id) >= 0;
  }

  get(id: string): KeyRecord | undefined {
    return this.getHashed(id, stringHash(id));
  }

  /**
   * The key's `remaining` (null: unlimited credits), undefined for a missing key: read from the
   * record's bytes when no decoded copy is cached, without decoding it.
   */
  remainingOf(id: string): number | null | undefined {
    const idHash = stringHash(id);
    const first = (idHash & cacheSetMask) * 2;
    if (this.cachedIds[first] === id) return this.cachedRecords[first]!.remaining;
    if (this.cachedIds[first + 1] === id) return this.cachedRecords[first + 1]!.remaining;
    const slot = this.slotOfId(id, idHash);
    if (slot < 0) return undefined;
    const chunk = this.chunkOf.get(slot);
    const view = this.views[chunk]!;
    const at = remainingFieldAt(this.chunks[chunk]!, view, this.offsetOf.get(slot));
    return at < 0 ? null : view.getFloat64(at, true);
  }

  /**
   * Stores the key, which has finite credits, with `remaining` in their place: what set() of the
   * record with that one field changed does, with the record's bytes copied instead of decoded
   * and encoded again.
   */
  setRemaining(id: string, remaining: number): void {
    const idHash = stringHash(id);
    const slot = this.slotOfId(id, idHash);
    assert(slot >= 0, "KeyTable.setRemaining: a key the table holds");
    const oldChunk = this.chunkOf.get(slot);
    const oldOffset = this.offsetOf.get(slot);
    const oldBytes = this.chunks[oldChunk]!;
    const oldView = this.views[oldChunk]!;
    const fieldAt = remainingFieldAt(oldBytes, oldView, oldOffset) - oldOffset;
    assert(fieldAt >= 0, "KeyTable.setRemaining: a key with finite credits");
    if (oldView.getFloat64(oldOffset + fieldAt, true) === remaining) return;
    this.uncache(idHash, id);
    // The copy lands at the arena's end, where no capture reads yet: it is changed before anyone sees it.
    this.place(slot, oldBytes.subarray(oldOffset, oldOffset + oldView.getUint32(oldOffset, true)));
    this.views[this.chunkOf.get(slot)]!.setFloat64(this.offsetOf.get(slot) + fieldAt, remaining, true);
    this.free(oldChunk, oldOffset);
    this.growIndexesStep();
  }

  /** get with the id's stringHash already at hand. */
  private getHashed(id: string, idHash: number): KeyRecord | undefined {
    const first = (idHash & cacheSetMask) * 2;
    if (this.cachedIds[first] === id) return this.cachedRecords[first];
    if (this.cachedIds[first + 1] === id) return this.cachedRecords[first + 1];
    const slot = this.slotOfId(id, idHash);
    if (slot < 0) return undefined;
    const record = this.decodeSlot(slot);
    // The newer goes first, the one it displaces second, the older of the two leaves.
    this.cachedIds[first + 1] = this.cachedIds[first];
    this.cachedRecords[first + 1] = this.cachedRecords[first];
    this.cachedIds[first] = id;
    this.cachedRecords[first] = record;
    return record;
  }

  /** Whether the id cache holds `record` (its set is `idHash`'s). */
  private cacheHolds(idHash: number, record: KeyRecord): boolean {
    const first = (idHash & cacheSetMask) * 2;
    return this.cachedRecords[first] === record || this.cachedRecords[first + 1] === record;
  }

  /** Forgets the cached record of `id`, if any (before it is replaced or deleted). */
  private uncache(idHash: number, id: string): void {
    const first = (idHash & cacheSetMask) * 2;
    for (const entry of [first, first + 1]) {
      if (this.cachedIds[entry] !== id) continue;
      this.cachedIds[entry] = undefined;
      this.cachedRecords[entry] = undefined;
    }
  }

  /** The key with this hash (a verification's lookup: one string compare when it was read lately). */
  getByHash(hash: string): KeyRecord | undefined {
    const hashHash = stringHash(hash);
    const bucket = hashHash & (decodedKeysCacheMax - 1);
    if (this.cachedHashes[bucket] === hash) {
      const record = this.cachedByHash[bucket];
      if (record !== undefined && this.cacheHolds(this.cachedByHashIdHash[bucket]!, record)) return record;
    }
    const slot = this.probeHash(this.hashIndex, hash, hashHash);
    const found = slot >= 0 || this.oldHashIndex === null ? slot : this.probeHash(this.oldHashIndex, hash, hashHash);
    if (found < 0) return undefined;
    const id = this.idOfSlot(found);
    const idHash = stringHash(id);
    const record = this.getHashed(id, idHash);
    assert(record !== undefined && record.hash === hash, "KeyTable.getByHash: the hash index names its key");
    this.cachedHashes[bucket] = hash;
    this.cachedByHash[bucket] = record;
    this.cachedByHashIdHash[bucket] = idHash;
    return record;
  }

  /** The id of the key with this hash. */
  idOfHash(hash: string): string | undefined {
    const slot = this.slotOfHash(hash);
    return slot < 0 ? undefined : this.idOfSlot(slot);
  }

  hasHash(hash: string): boolean {
    return this.slotOfHash(hash) >= 0;
  }

  /** Stores `record` under its id: a new id goes last, a known one keeps its place. */
  set(id: string, record: KeyRecord): this {
    assert(id === record.id, "KeyTable.set: a record stored under another id");
    const idHash = stringHash(id);
    // The record a get handed out, given back unchanged (records are never changed in place):
    // what the table holds already.
    if (this.cacheHolds(idHash, record)) return this;
    this.uncache(idHash, id);
    const bytes = this.encoder.encode(record);
    const hashHash = stringHash(record.hash);
    const flags = flagsOf(record);
    let slot = this.slotOfId(id, idHash);
    if (slot >= 0) {
      const oldChunk = this.chunkOf.get(slot);
      const oldOffset = this.offsetOf.get(slot);
      const oldApi = this.apiOf.get(slot) - 1;
      if (this.apiIds[oldApi] !== record.apiId) {
        this.releaseApi(oldApi);
        this.apiOf.set(slot, this.holdApi(record.apiId) + 1);
      }
      if (this.hashHashOf.get(slot) !== hashHash || !this.hashEquals(slot, record.hash)) {
        assert(this.slotOfHash(record.hash) < 0, "KeyTable.set: a hash held by two keys");
        const inNew = this.inNewIndexes(slot);
        const inOld = this.inOldIndexes(slot);
        if (inNew) this.unindex(this.hashIndex, this.hashHashOf, slot);
        if (inOld) this.unindex(this.oldHashIndex!, this.hashHashOf, slot);
        this.hashHashOf.set(slot, hashHash);
        if (inNew) this.index(this.hashIndex, hashHash, slot);
        if (inOld) this.index(this.oldHashIndex!, hashHash, slot);
      }
      this.place(slot, bytes);
      this.scanFlagsOf.set(slot, flags);
      this.free(oldChunk, oldOffset);
      this.growIndexesStep();
    } else {
      assert(this.slotOfHash(record.hash) < 0, "KeyTable.set: a hash held by two keys");
      this.append(idHash, hashHash, flags, record.apiId, bytes);
    }
    return this;
  }

  /**
   * Appends the records of an EncodedKeys part (a snapshot of this release), in order, without
   * decoding them; `limits` is the part's EncodedKeys.limits. The keys must be new to the table.
   */
  loadEncoded(part: EncodedKeysPart, limits: LimitsOfSnapshot): void {
    const { bytes, apiRuns } = part;
    this.reserve(encodedPartRecords(part));
    // The part's bytes go into the arena in one copy; the records are then read where they landed.
    let chunk = this.tail;
    if (chunk < 0 || this.chunkEnd[chunk]! + bytes.byteLength > this.chunks[chunk]!.length)
      chunk = this.newChunk(bytes.byteLength);
    const arena = this.chunks[chunk]!;
    const view = this.views[chunk]!;
    const base = this.chunkEnd[chunk]!;
    arena.set(bytes, base);
    this.chunkEnd[chunk] = base + bytes.byteLength;
    this.chunkLiveBytes[chunk]! += bytes.byteLength;
    const end = base + bytes.byteLength;
    let run = -2;
    let leftInRun = 0;
    for (let offset = base; offset < end;) {
      while (leftInRun === 0) {
        run += 2;
        assert(run + 1 < apiRuns.length, "KeyTable.loadEncoded: a record without its api id");
        leftInRun = apiRuns[run + 1] as number;
        assert(Number.isSafeInteger(leftInRun) && leftInRun >= 0, "KeyTable.loadEncoded: an api run's count");
      }
      leftInRun--;
      assert(offset + recordIdOffset <= end, "KeyTable.loadEncoded: a record header past the end");
      const length = view.getUint32(offset, true);
      assert(length > recordIdOffset && offset + length <= end, "KeyTable.loadEncoded: a record past the end");
      const apiId = apiRuns[run];
      assert(typeof apiId === "string", "KeyTable.loadEncoded: an api run without its api id");
      const header = readRecordHeader(arena, view, offset);
      const idHash = stringFieldHash(arena, header.idAt);
      const hashHash = stringFieldHash(arena, header.hashAt);
      // reserve() made room, so the indexes do not grow meanwhile: one walk of each index checks
      // the key is new and files it (a restart files a million keys this way).
      const oneWalk = this.oldIdIndex === null && (this.liveCount + 1) * 2 <= this.idIndex.length;
      if (!oneWalk) {
        assert(this.slotOfField("id", arena, header.idAt, idHash) < 0, "KeyTable.loadEncoded: a key id stored twice");
        assert(this.slotOfField("hash", arena, header.hashAt, hashHash) < 0, "KeyTable.set: a hash held by two keys");
      }
      const number = header.limitsNumber;
      if (number !== 0 && number !== limitsInline)
        view.setUint16(header.limitsAt, limits.localNumber(this.limits, number), true);
      const flags =
        (header.hasConnections ? keyHasConnections : 0) |
        (header.hasIdentity ? keyHasIdentity : 0) |
        (header.hasRefill ? keyHasRefill : 0) |
        (header.hasOwnerId ? keyHasOwnerId : 0);
      const slot = this.newSlot(idHash, hashHash, flags, apiId);
      this.chunkOf.set(slot, chunk);
      this.offsetOf.set(slot, offset);
      if (oneWalk) {
        assert(this.fileUnique(this.idIndex, "id", slot), "KeyTable.loadEncoded: a key id stored twice");
        assert(this.fileUnique(this.hashIndex, "hash", slot), "KeyTable.set: a hash held by two keys");
      } else this.indexSlot(slot);
      offset += length;
    }
    assert(leftInRun === 0 && run + 2 >= apiRuns.length, "KeyTable.loadEncoded: one api id per record");
  }

  /** Room for `additional` more keys without growing the slots or the indexes one step at a time. */
  reserve(additional: number): void {
    const needed = this.liveCount + additional;
    if (this.slotCount + additional > this.slotCapacity) {
      if (this.slotCount - this.liveCount > holesBeforeCompaction) this.compactSlots();
      this.growSlots(this.slotCount + additional);
    }
    if (needed * 2 > this.idIndex.length) {
      let buckets = this.idIndex.length;
      while (needed * 2 > buckets) buckets *= 2;
      this.rebuildIndexes(buckets);
    }
  }

  /** A new slot, last in the order, for a record's bytes (copied to the arena). */
  private append(idHash: number, hashHash: number, flags: number, apiId: string, bytes: Uint8Array): number {
    const slot = this.newSlot(idHash, hashHash, flags, apiId);
    this.place(slot, bytes);
    this.indexSlot(slot);
    return slot;
  }

  /** A new slot, last in the order, not yet pointing at its bytes nor indexed. */
  private newSlot(idHash: number, hashHash: number, flags: number, apiId: string): number {
    if (this.slotCount - this.liveCount > Math.max(holesBeforeCompaction, this.liveCount)) this.compactSlots();
    if (this.slotCount === this.slotCapacity) this.growSlots();
    const slot = this.slotCount++;
    this.liveCount++;
    this.apiOf.set(slot, this.holdApi(apiId) + 1);
    this.idHashOf.set(slot, idHash);
    this.hashHashOf.set(slot, hashHash);
    this.scanFlagsOf.set(slot, flags);
    return slot;
  }

  /** Adds a new slot, whose bytes are in place, to both indexes (growing them past half full). */
  private indexSlot(slot: number): void {
    if (this.liveCount * 2 > this.idIndex.length || this.nextIndexesReady()) this.startIndexGrowth(slot);
    else if (this.liveCount * 64 > this.idIndex.length * 31 && this.nextIdIndex === null && this.oldIdIndex === null) {
      this.nextIdIndex = new Int32Array(this.idIndex.length * 2);
      this.nextHashIndex = new Int32Array(this.hashIndex.length * 2);
      this.prefaultAt = 0;
    }
    this.index(this.idIndex, this.idHashOf.get(slot), slot);
    this.index(this.hashIndex, this.hashHashOf.get(slot), slot);
    this.growIndexesStep();
    assert(this.hashIndex.length === this.idIndex.length, "KeyTable: both indexes have one size");
  }

  /** Whether the next indexes are allocated and every page of them written (see nextIdIndex). */
  private nextIndexesReady(): boolean {
    return this.nextIdIndex !== null && this.prefaultAt >= this.nextIdIndex.length;
  }

  /** Whether `slot` is in the current indexes: always, but while they grow, only once moved there. */
  private inNewIndexes(slot: number): boolean {
    return this.oldIdIndex === null || slot < this.growthDone || slot >= this.growthEnd;
  }

  /** Whether `slot` is in the indexes being replaced (while they grow). */
  private inOldIndexes(slot: number): boolean {
    return this.oldIdIndex !== null && slot < this.growthEnd;
  }

  /**
   * Indexes twice the size, filled a step at a time (growIndexesStep) while the old ones answer
   * too; the slots below `end` are in the old ones (`end`: the new slot about to be indexed).
   */
  private startIndexGrowth(end: number): void {
    // A growth still under way ends first (the new indexes passed half full before it did).
    while (this.oldIdIndex !== null) this.growIndexesStep();
    this.oldIdIndex = this.idIndex;
    this.oldHashIndex = this.hashIndex;
    assert(
      this.nextIdIndex === null || this.nextIdIndex.length === this.idIndex.length * 2,
      "KeyTable: the next indexes are twice the present ones",
    );
    this.idIndex = this.nextIdIndex ?? new Int32Array(this.idIndex.length * 2);
    this.hashIndex = this.nextHashIndex ?? new Int32Array(this.hashIndex.length * 2);
    this.nextIdIndex = null;
    this.nextHashIndex = null;
    this.growthDone = 0;
    this.growthEnd = end;
    this.growIndexesStep();
  }

  /** Moves the next indexGrowthSlotsPerStep slots into the growing indexes; drops the old ones at the end. */
  private growIndexesStep(): void {
    if (this.nextIdIndex !== null && this.prefaultAt < this.nextIdIndex.length) {
      // Zeros where zeros are: what counts is the write, which makes the page the process's own.
      this.nextIdIndex[this.prefaultAt] = 0;
      this.nextHashIndex![this.prefaultAt] = 0;
      this.prefaultAt += indexPrefaultStride;
    }
    if (this.oldIdIndex === null) return;
    const last = Math.min(this.growthEnd, this.growthDone + indexGrowthSlotsPerStep);
    for (let slot = this.growthDone; slot < last; slot++) {
      if (this.apiOf.get(slot) === 0) continue;
      this.index(this.idIndex, this.idHashOf.get(slot), slot);
      this.index(this.hashIndex, this.hashHashOf.get(slot), slot);
    }
    this.growthDone = last;
    if (last < this.growthEnd) return;
    this.oldIdIndex = null;
    this.oldHashIndex = null;
  }

  delete(id: string): boolean {
    const idHash = stringHash(id);
    const slot = this.slotOfId(id, idHash);
    this.uncache(idHash, id);
    if (slot < 0) return false;
    if (this.inNewIndexes(slot)) {
      this.unindex(this.idIndex, this.idHashOf, slot);
      this.unindex(this.hashIndex, this.hashHashOf, slot);
    }
    if (this.inOldIndexes(slot)) {
      this.unindex(this.oldIdIndex!, this.idHashOf, slot);
      this.unindex(this.oldHashIndex!, this.hashHashOf, slot);
    }
    this.releaseApi(this.apiOf.get(slot) - 1);
    this.apiOf.set(slot, 0);
    this.scanFlagsOf.set(slot, 0);
    this.liveCount--;
    this.free(this.chunkOf.get(slot), this.offsetOf.get(slot));
    // Only once the slot is dead: a step moving it into the growing indexes would file it again.
    this.growIndexesStep();
    return true;
  }

  *values(): IterableIterator<KeyRecord> {
    for (const slot of this.liveSlots(0xff, true)) yield this.decodeSlot(slot);
  }

  /** The keys with any of `flags` (keyHasConnections, keyHasIdentity, keyHasRefill, keyHasOwnerId), in order. */
  *valuesWith(flags: number): IterableIterator<KeyRecord> {
    for (const slot of this.liveSlots(flags, false)) yield this.decodeSlot(slot);
  }

  *keys(): IterableIterator<string> {
    for (const slot of this.liveSlots(0xff, true)) yield this.idOfSlot(slot);
  }

  *entries(): IterableIterator<[string, KeyRecord]> {
    for (const record of this.values()) yield [record.id, record];
  }

  [Symbol.iterator](): IterableIterator<[string, KeyRecord]> {
    return this.entries();
  }

  /** Ids of the api's keys, in order. */
  idsOfApi(apiId: string): string[] {
    const number = this.apiNumberById.get(apiId);
    if (number === undefined) return [];
    const ids: string[] = [];
    for (let slot = 0; slot < this.slotCount; slot++)
      if (this.apiOf.get(slot) === number + 1) ids.push(this.idOfSlot(slot));
    return ids;
  }

  /** How many keys the api has. */
  countOfApi(apiId: string): number {
    const number = this.apiNumberById.get(apiId);
    return number === undefined ? 0 : this.apiKeyCounts[number]!;
  }

  /** Api ids that have keys, with their counts (for the invariant checks). */
  apiCounts(): Map<string, number> {
    const counts = new Map<string, number>();
    for (const [apiId, number] of this.apiNumberById) counts.set(apiId, this.apiKeyCounts[number]!);
    return counts;
  }

  /** The records as they are now, read later (see CapturedKeys): the slots' places are copied, no record. */
  capture(): CapturedKeys {
    const chunkOf = new Uint32Array(this.liveCount);
    const offsetOf = new Uint32Array(this.liveCount);
    const apiOf = new Uint32Array(this.liveCount);
    let at = 0;
    for (let slot = 0; slot < this.slotCount; slot++) {
      const api = this.apiOf.get(slot);
      if (api === 0) continue;
      chunkOf[at] = this.chunkOf.get(slot);
      offsetOf[at] = this.offsetOf.get(slot);
      apiOf[at] = api;
      at++;
    }
    assert(at === this.liveCount, "KeyTable.capture: every live slot once");
    return new CapturedKeys(
      this.limits.allLists(),
      new KeyDecoder(this.limits),
      this.chunks.slice(),
      this.views.slice(),
      chunkOf,
      offsetOf,
      apiOf,
      this.apiIds.slice(),
    );
  }

  // --- slots and indexes ---

  private *liveSlots(flags: number, all: boolean): IterableIterator<number> {
    const layout = this.layout;
    for (let slot = 0; slot < this.slotCount; slot++) {
      assert(this.layout === layout, "KeyTable: slots moved during an iteration");
      if (this.apiOf.get(slot) === 0) continue;
      if (!all && (this.scanFlagsOf.get(slot) & flags) === 0) continue;
      yield slot;
    }
  }

  private slotOfId(id: string, idHash: number = stringHash(id)): number {
    const slot = this.probeId(this.idIndex, id, idHash);
    return slot >= 0 || this.oldIdIndex === null ? slot : this.probeId(this.oldIdIndex, id, idHash);
  }

  private probeId(index: Int32Array, id: string, idHash: number): number {
    const mask = index.length - 1;
    for (let bucket = idHash & mask; ; bucket = (bucket + 1) & mask) {
      const entry = index[bucket]!;
      if (entry === 0) return -1;
      const slot = entry - 1;
      if (this.idHashOf.get(slot) === idHash) {
        const chunk = this.chunks[this.chunkOf.get(slot)]!;
        if (stringFieldEquals(chunk, this.offsetOf.get(slot) + recordIdOffset, id)) return slot;
      }
    }
  }

  /**
   * The slot whose id (`field` "id") or hash field equals the str field at `at` of `bytes`: a
   * record's bytes not yet indexed.
   */
  private slotOfField(field: "id" | "hash", bytes: Uint8Array, at: number, fieldHash: number): number {
    const slot = this.probeField(field === "id" ? this.idIndex : this.hashIndex, field, bytes, at, fieldHash);
    const old = field === "id" ? this.oldIdIndex : this.oldHashIndex;
    return slot >= 0 || old === null ? slot : this.probeField(old, field, bytes, at, fieldHash);
  }

  /**
   * Files `slot` (whose bytes are in place) in `index` at the end of its probe run, or false when
   * a slot there holds the same `field`: the uniqueness check and the insert in one walk.
   */
  private fileUnique(index: Int32Array, field: "id" | "hash", slot: number): boolean {
    const hashOf = field === "id" ? this.idHashOf : this.hashHashOf;
    const fieldHash = hashOf.get(slot);
    const bytes = this.chunks[this.chunkOf.get(slot)]!;
    const idAt = this.offsetOf.get(slot) + recordIdOffset;
    const at = field === "id" ? idAt : stringFieldEnd(bytes, idAt);
    const mask = index.length - 1;
    for (let bucket = fieldHash & mask; ; bucket = (bucket + 1) & mask) {
      const entry = index[bucket]!;
      if (entry === 0) {
        index[bucket] = slot + 1;
        return true;
      }
      const other = entry - 1;
      if (hashOf.get(other) !== fieldHash) continue;
      const chunk = this.chunks[this.chunkOf.get(other)]!;
      const otherIdAt = this.offsetOf.get(other) + recordIdOffset;
      if (stringFieldsEqual(chunk, field === "id" ? otherIdAt : stringFieldEnd(chunk, otherIdAt), bytes, at))
        return false;
    }
  }

  private probeField(
    index: Int32Array,
    field: "id" | "hash",
    bytes: Uint8Array,
    at: number,
    fieldHash: number,
  ): number {
    const hashOf = field === "id" ? this.idHashOf : this.hashHashOf;
    const mask = index.length - 1;
    for (let bucket = fieldHash & mask; ; bucket = (bucket + 1) & mask) {
      const entry = index[bucket]!;
      if (entry === 0) return -1;
      const slot = entry - 1;
      if (hashOf.get(slot) !== fieldHash) continue;
      const chunk = this.chunks[this.chunkOf.get(slot)]!;
      const idAt = this.offsetOf.get(slot) + recordIdOffset;
      if (stringFieldsEqual(chunk, field === "id" ? idAt : stringFieldEnd(chunk, idAt), bytes, at)) return slot;
    }
  }

  private slotOfHash(hash: string): number {
    const hashHash = stringHash(hash);
    const slot = this.probeHash(this.hashIndex, hash, hashHash);
    return slot >= 0 || this.oldHashIndex === null ? slot : this.probeHash(this.oldHashIndex, hash, hashHash);
  }

  private probeHash(index: Int32Array, hash: string, hashHash: number): number {
    const mask = index.length - 1;
    for (let bucket = hashHash & mask; ; bucket = (bucket + 1) & mask) {
      const entry = index[bucket]!;
      if (entry === 0) return -1;
      const slot = entry - 1;
      if (this.hashHashOf.get(slot) === hashHash && this.hashEquals(slot, hash)) return slot;
    }
  }

  private hashEquals(slot: number, hash: string): boolean {
    const chunk = this.chunks[this.chunkOf.get(slot)]!;
    return stringFieldEquals(chunk, stringFieldEnd(chunk, this.offsetOf.get(slot) + recordIdOffset), hash);
  }

  private idOfSlot(slot: number): string {
    const chunk = this.chunkOf.get(slot);
    return this.decoder.idAt(this.chunks[chunk]!, this.offsetOf.get(slot));
  }

  private decodeSlot(slot: number): KeyRecord {
    const chunk = this.chunkOf.get(slot);
    const apiId = this.apiIds[this.apiOf.get(slot) - 1];
    assert(apiId !== undefined, "KeyTable: a live slot without its api");
    return this.decoder.decode(this.chunks[chunk]!, this.views[chunk]!, this.offsetOf.get(slot), apiId);
  }

  private index(index: Int32Array, hash: number, slot: number): void {
    const mask = index.length - 1;
    let bucket = hash & mask;
    while (index[bucket] !== 0) bucket = (bucket + 1) & mask;
    index[bucket] = slot + 1;
  }

  /** Removes `slot` from a linear-probing index, shifting later entries back (no tombstones). */
  private unindex(index: Int32Array, hashOf: SlotColumn, slot: number): void {
    const mask = index.length - 1;
    let hole = hashOf.get(slot) & mask;
    while (index[hole] !== slot + 1) {
      assert(index[hole] !== 0, "KeyTable: a slot missing from its index");
      hole = (hole + 1) & mask;
    }
    for (let next = (hole + 1) & mask; index[next] !== 0; next = (next + 1) & mask) {
      const home = hashOf.get(index[next]! - 1) & mask;
      // The entry at `next` may move into the hole unless its home lies cyclically in (hole, next].
      const homeAfterHole = hole <= next ? home > hole && home <= next : home > hole || home <= next;
      if (!homeAfterHole) {
        index[hole] = index[next]!;
        hole = next;
      }
    }
    index[hole] = 0;
  }

  private rebuildIndexes(buckets: number): void {
    assert(
      (buckets & (buckets - 1)) === 0 && buckets >= this.liveCount * 2,
      "KeyTable: indexes sized to a power of two",
    );
    this.idIndex = new Int32Array(buckets);
    this.hashIndex = new Int32Array(buckets);
    this.oldIdIndex = null; // a growth under way is done at once
    this.oldHashIndex = null;
    this.nextIdIndex = null;
    this.nextHashIndex = null;
    for (let slot = 0; slot < this.slotCount; slot++) {
      if (this.apiOf.get(slot) === 0) continue;
      this.index(this.idIndex, this.idHashOf.get(slot), slot);
      this.index(this.hashIndex, this.hashHashOf.get(slot), slot);
    }
  }

  /** Room in the slot columns for `slots` slots (one more by default): pages added, nothing copied past the first. */
  private growSlots(slots: number = this.slotCapacity + 1): void {
    assert(slots >= this.slotCount, "KeyTable.growSlots: room for every slot");
    for (const column of [this.chunkOf, this.offsetOf, this.apiOf, this.scanFlagsOf, this.idHashOf, this.hashHashOf])
      column.ensure(slots);
    this.slotCapacity = this.chunkOf.capacity;
  }

  /** Drops deleted slots, keeping the order of the live ones. */
  private compactSlots(): void {
    let to = 0;
    for (let from = 0; from < this.slotCount; from++) {
      if (this.apiOf.get(from) === 0) continue;
      this.chunkOf.set(to, this.chunkOf.get(from));
      this.offsetOf.set(to, this.offsetOf.get(from));
      this.apiOf.set(to, this.apiOf.get(from));
      this.scanFlagsOf.set(to, this.scanFlagsOf.get(from));
      this.idHashOf.set(to, this.idHashOf.get(from));
      this.hashHashOf.set(to, this.hashHashOf.get(from));
      to++;
    }
    assert(to === this.liveCount, "KeyTable.compactSlots: every live slot kept");
    this.apiOf.fill(0, to, this.slotCount);
    this.slotCount = to;
    this.layout++;
    let buckets = 2048;
    while (buckets < this.liveCount * 2) buckets *= 2;
    this.rebuildIndexes(buckets);
  }

  // --- apis ---

  private holdApi(apiId: string): number {
    let number = this.apiNumberById.get(apiId);
    if (number === undefined) {
      number = this.freeApiNumbers.pop() ?? this.apiIds.length;
      this.apiIds[number] = apiId;
      this.apiKeyCounts[number] = 0;
      this.apiNumberById.set(apiId, number);
    }
    this.apiKeyCounts[number]!++;
    return number;
  }

  private releaseApi(number: number): void {
    const count = --this.apiKeyCounts[number]!;
    assert(count >= 0, "KeyTable: an api released more often than held");
    if (count > 0) return;
    this.apiNumberById.delete(this.apiIds[number]!);
    this.apiIds[number] = undefined;
    this.freeApiNumbers.push(number);
  }

  // --- arena ---

  /** Copies `bytes` to the end of the arena and points `slot` at them. */
  private place(slot: number, bytes: Uint8Array): void {
    let chunk = this.tail;
    if (chunk < 0 || this.chunkEnd[chunk]! + bytes.length > this.chunks[chunk]!.length)
      chunk = this.newChunk(bytes.length);
    const at = this.chunkEnd[chunk]!;
    this.chunks[chunk]!.set(bytes, at);
    this.chunkEnd[chunk] = at + bytes.length;
    this.chunkLiveBytes[chunk]! += bytes.length;
    this.chunkOf.set(slot, chunk);
    this.offsetOf.set(slot, at);
  }

  private newChunk(bytesAtLeast: number): number {
    const size = Math.max(keyArenaChunkBytes, bytesAtLeast);
    let chunk = this.chunks.indexOf(null);
    if (chunk < 0) chunk = this.chunks.length;
    const bytes = new Uint8Array(size);
    this.chunks[chunk] = bytes;
    this.views[chunk] = new DataView(bytes.buffer);
    this.chunkLiveBytes[chunk] = 0;
    this.chunkEnd[chunk] = 0;
    this.arenaBytes += size;
    this.tail = chunk;
    return chunk;
  }

  /** Marks the record at (chunk, offset) dead; a chunk left mostly dead has its live records moved. */
  private free(chunk: number, offset: number): void {
    const view = this.views[chunk]!;
    const length = view.getUint32(offset, true);
    const live = (this.chunkLiveBytes[chunk]! -= length);
    assert(live >= 0, "KeyTable: a chunk with fewer live bytes than none");
    if (chunk === this.tail) return;
    if (live === 0) this.dropChunk(chunk);
    else if (live * 4 < this.chunks[chunk]!.length) this.evacuate(chunk);
  }

  private dropChunk(chunk: number): void {
    this.arenaBytes -= this.chunks[chunk]!.length;
    this.chunks[chunk] = null;
    this.views[chunk] = null;
    this.chunkLiveBytes[chunk] = 0;
    this.chunkEnd[chunk] = 0;
  }

  /** Moves the live records of `chunk` to the end of the arena, then lets the chunk go. */
  private evacuate(chunk: number): void {
    const bytes = this.chunks[chunk]!;
    const view = this.views[chunk]!;
    const end = this.chunkEnd[chunk]!;
    for (let offset = 0; offset < end;) {
      const length = view.getUint32(offset, true);
      const slot = this.slotOfId(this.decoder.idAt(bytes, offset));
      if (slot >= 0 && this.chunkOf.get(slot) === chunk && this.offsetOf.get(slot) === offset) {
        this.chunkLiveBytes[chunk]! -= length;
        this.place(slot, bytes.subarray(offset, offset + length));
      }
      offset += length;
    }
    assert(this.chunkLiveBytes[chunk] === 0, "KeyTable.evacuate: every live record moved");
    this.dropChunk(chunk);
  }
}
