import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Level } from "level";
import { describe, expect, it } from "vitest";
import { decodeLogKey, encodeLogKey, encodePrefixedLogKey } from "../src/storage/keys.js";
import { Packr } from "msgpackr";
import { decodeEntryValue, decodeSnapshotRecord, encodeEntryValue } from "../src/storage/codec.js";
import { LevelStorage } from "../src/storage/level-storage.js";
import { pieceDirName } from "../src/storage/piece-files.js";
import { MemoryStorage } from "../src/storage/memory-storage.js";
import { entry, heldSnapshot, storageConformance, type StorageHarness } from "./storage-conformance.js";

storageConformance("MemoryStorage", async (): Promise<StorageHarness> => {
  return {
    durable: false,
    open: async (options = {}) => new MemoryStorage(options),
    cleanup: async () => undefined,
  };
});

storageConformance("LevelStorage", async (): Promise<StorageHarness> => {
  const path = await mkdtemp(join(tmpdir(), "keyraft-level-"));
  return {
    durable: true,
    open: (options = {}) => LevelStorage.open({ path, ...options }),
    cleanup: () => rm(path, { recursive: true, force: true }),
  };
});

/** A fresh data directory for fn, removed afterwards whatever fn did. */
async function inTempDir(fn: (path: string) => Promise<void>): Promise<void> {
  const path = await mkdtemp(join(tmpdir(), "keyraft-level-"));
  try {
    await fn(path);
  } finally {
    await rm(path, { recursive: true, force: true });
  }
}

/** Every record of the closed storage's snapshot sublevel, by key (what is on disk). */
async function snapRecords(path: string): Promise<Map<string, Uint8Array>> {
  const db = new Level<string, Uint8Array>(path, { keyEncoding: "utf8", valueEncoding: "view" });
  const snap = db.sublevel<string, Uint8Array>("snap", { keyEncoding: "utf8", valueEncoding: "view" });
  const records = new Map<string, Uint8Array>();
  for await (const [key, value] of snap.iterator()) records.set(key, value);
  await db.close();
  return records;
}

/**
 * The snapshot pieces on disk, named as piece keys (`piece!<index>!<n>`): the piece files, and the
 * pieces an earlier release wrote into LevelDB.
 */
async function pieceKeysOnDisk(path: string): Promise<string[]> {
  const inLevel = [...(await snapRecords(path)).keys()].filter((key) => key.startsWith("piece!"));
  const files = (await readdir(join(path, pieceDirName))).map((name) => {
    const [index, n] = name.replace(".piece", "").split("-");
    return `piece!${index}!${n}`;
  });
  return [...inLevel, ...files];
}

/** The file of piece n of the snapshot at `index`. */
const pieceFileOf = (path: string, index: number, n: number) =>
  join(path, pieceDirName, `${String(index).padStart(16, "0")}-${String(n).padStart(10, "0")}.piece`);

/** Appends entries 1..count of term 1, all committed, synced. */
async function appendCommitted(storage: LevelStorage, count: number): Promise<void> {
  await storage.append(
    Array.from({ length: count }, (_, i) => entry(i + 1, 1)),
    { term: 1, vote: "", commit: count },
    true,
  );
}

const bytesOf = (length: number, seed = 0) => Uint8Array.from({ length }, (_, i) => (i * 7 + seed) & 0xff);

describe("log keys", () => {
  it("are fixed-width big-endian: byte order equals numeric order", () => {
    const indexes = [0, 1, 2, 9, 10, 255, 256, 65_535, 2 ** 32 - 1, 2 ** 32, 2 ** 40 + 7, Number.MAX_SAFE_INTEGER];
    const keys = indexes.map(encodeLogKey);
    expect(keys.every((key) => key.byteLength === 8)).toBe(true);
    const sorted = [...keys].sort((a, b) => Buffer.compare(a, b));
    expect(sorted.map(decodeLogKey)).toEqual(indexes);
    expect(() => encodeLogKey(-1)).toThrow();
    expect(() => encodeLogKey(1.5)).toThrow();
  });

  it("prefixed for the root database, they are the sublevel's bytes: prefix then the 8-byte key", () => {
    const prefix = new TextEncoder().encode("!log!");
    for (const index of [0, 1, 300, 2 ** 32 + 5, 2 ** 40 + 2 ** 33 + 258, Number.MAX_SAFE_INTEGER]) {
      expect(Buffer.from(encodePrefixedLogKey(prefix, index))).toEqual(Buffer.concat([prefix, encodeLogKey(index)]));
    }
    expect(() => encodePrefixedLogKey(prefix, -1)).toThrow();
  });

  it("entry values round-trip their term (both 32-bit halves), type and data", () => {
    for (const term of [1, 2 ** 32 - 1, 2 ** 32 + 7, Number.MAX_SAFE_INTEGER]) {
      const original = { index: 5, term, type: "conf" as const, data: new Uint8Array([1, 2, 3]) };
      expect(decodeEntryValue(5, encodeEntryValue(original))).toEqual(original);
    }
  });
});

describe("LevelStorage on disk", () => {
  it("reads a large log back in index order after reopen (keys 2 < 10 < 256 numerically)", async () => {
    await inTempDir(async (path) => {
      const storage = await LevelStorage.open({ path });
      const entries = Array.from({ length: 300 }, (_, i) => entry(i + 1, 1));
      await storage.append(entries, { term: 1, vote: "", commit: 300 }, true);
      await storage.close();
      const reopened = await LevelStorage.open({ path });
      expect(reopened.entries(1, 301, Infinity).map((e) => e.index)).toEqual(entries.map((e) => e.index));
      await reopened.close();
    });
  });
});

describe("LevelStorage compaction on disk", () => {
  async function logKeys(path: string): Promise<number[]> {
    const db = new Level<Uint8Array, Uint8Array>(path, { keyEncoding: "view", valueEncoding: "view" });
    const log = db.sublevel<Uint8Array, Uint8Array>("log", { keyEncoding: "view", valueEncoding: "view" });
    const keys: number[] = [];
    for await (const key of log.keys()) keys.push(decodeLogKey(key));
    await db.close();
    return keys;
  }

  it("removes compacted entries from disk, and clears leftovers of an interrupted compaction on open", async () => {
    await inTempDir(async (path) => {
      const storage = await LevelStorage.open({ path, keepEntries: 10 });
      await appendCommitted(storage, 300);
      await storage.createSnapshot(250, { voters: ["n1"], learners: [] }, new Uint8Array([1]));
      await storage.close();
      expect(await logKeys(path)).toEqual(Array.from({ length: 60 }, (_, i) => 241 + i)); // 241..300
      // A crash between the snapshot batch and the range clear leaves keys at or below the mark.
      const db = new Level<Uint8Array, Uint8Array>(path, { keyEncoding: "view", valueEncoding: "view" });
      await db
        .sublevel<Uint8Array, Uint8Array>("log", { keyEncoding: "view", valueEncoding: "view" })
        .put(encodeLogKey(7), new Uint8Array(9));
      await db.close();
      const reopened = await LevelStorage.open({ path });
      expect([reopened.firstIndex(), reopened.lastIndex(), reopened.term(240)]).toEqual([241, 300, 1]);
      await reopened.close();
      expect((await logKeys(path))[0]).toBe(241);
    });
  });
});

describe("LevelStorage: a snapshot taken here, larger than a piece", () => {
  const conf = { voters: ["n1"], learners: [] };

  const snapKeys = async (path: string): Promise<string[]> => [...(await snapRecords(path)).keys()];

  it("is written in pieces that appends issued meanwhile go between, and reads back whole", async () => {
    await inTempDir(async (path) => {
      const storage = await LevelStorage.open({ path, snapshotPieceBytes: 16 });
      await appendCommitted(storage, 20);
      const data = bytesOf(100); // 7 pieces
      const done: string[] = [];
      const snapshot = storage.createSnapshot(15, conf, data).then(() => done.push("snapshot"));
      const append = storage.append([entry(21, 1)], null, true).then(() => done.push("append"));
      await Promise.all([snapshot, append]);
      expect(done).toEqual(["append", "snapshot"]);
      expect((await heldSnapshot(storage)).data).toEqual(data);
      await storage.close();
      expect(await pieceKeysOnDisk(path)).toHaveLength(7);
      expect((await snapKeys(path)).filter((key) => key.startsWith("piece!"))).toEqual([]); // files, not values
      expect(await snapKeys(path)).not.toContain("data");

      const reopened = await LevelStorage.open({ path, snapshotPieceBytes: 16 });
      expect(reopened.snapshot()).toStrictEqual({ metadata: { index: 15, term: 1, conf }, totalBytes: 100 });
      expect(await heldSnapshot(reopened)).toEqual({ metadata: { index: 15, term: 1, conf }, data });
      expect([reopened.firstIndex(), reopened.lastIndex()]).toEqual([16, 21]);
      // A smaller snapshot later is one value again, and the pieces go.
      await reopened.createSnapshot(18, conf, bytesOf(10));
      await reopened.close();
      expect(await pieceKeysOnDisk(path)).toEqual([]);
      const again = await LevelStorage.open({ path });
      expect((await heldSnapshot(again)).data).toEqual(bytesOf(10));
      await again.close();
    });
  });

  it("reads any byte range of its data from disk, from the pieces the range falls in", async () => {
    await inTempDir(async (path) => {
      const storage = await LevelStorage.open({ path, snapshotPieceBytes: 16 });
      await appendCommitted(storage, 20);
      const data = bytesOf(100); // pieces of 16 bytes, the last one 4
      await storage.createSnapshot(15, conf, data);
      const ranges: Array<[number, number]> = [
        [0, 0],
        [0, 1],
        [0, 16],
        [5, 11],
        [15, 2],
        [10, 40],
        [96, 4],
        [0, 100],
        [33, 67],
      ];
      for (const [offset, length] of ranges)
        expect(await storage.readSnapshotData(15, offset, length)).toEqual(data.subarray(offset, offset + length));
      await expect(storage.readSnapshotData(14, 0, 1)).rejects.toMatchObject({ code: "RAFT_ERR_SNAPSHOT_OUT_OF_DATE" });
      await expect(storage.readSnapshotData(15, 90, 11)).rejects.toThrow(/past the data/);
      await storage.close();

      // Reopened with another piece size, the pieces on disk keep the size they were written with.
      const reopened = await LevelStorage.open({ path, snapshotPieceBytes: 7 });
      for (const [offset, length] of ranges)
        expect(await reopened.readSnapshotData(15, offset, length)).toEqual(data.subarray(offset, offset + length));
      // A snapshot of one value (no pieces) reads the same way; the older one is gone.
      const small = bytesOf(10);
      await reopened.createSnapshot(18, conf, small);
      expect(await reopened.readSnapshotData(18, 3, 5)).toEqual(small.subarray(3, 8));
      await expect(reopened.readSnapshotData(15, 0, 1)).rejects.toMatchObject({
        code: "RAFT_ERR_SNAPSHOT_OUT_OF_DATE",
      });
      await reopened.close();
    });
  });

  it("left half written by a crash, its pieces are cleared on open and the previous snapshot stays", async () => {
    await inTempDir(async (path) => {
      const storage = await LevelStorage.open({ path, snapshotPieceBytes: 16 });
      await appendCommitted(storage, 20);
      const first = bytesOf(40);
      await storage.createSnapshot(10, conf, first);
      await storage.close();
      // The pieces of a snapshot at 18 reached the disk, the batch recording it did not: a file
      // (this release) and a value in LevelDB (an earlier release).
      await writeFile(pieceFileOf(path, 18, 0), bytesOf(16));
      const db = new Level<string, Uint8Array>(path, { keyEncoding: "utf8", valueEncoding: "view" });
      const snap = db.sublevel<string, Uint8Array>("snap", { keyEncoding: "utf8", valueEncoding: "view" });
      await snap.put(`piece!${String(18).padStart(16, "0")}!${String(1).padStart(10, "0")}`, bytesOf(16));
      await db.close();
      const reopened = await LevelStorage.open({ path, snapshotPieceBytes: 16 });
      expect(await heldSnapshot(reopened)).toEqual({ metadata: { index: 10, term: 1, conf }, data: first });
      await reopened.close();
      const left = await pieceKeysOnDisk(path);
      expect(left).toHaveLength(3); // 40 bytes: 3 pieces
      expect(left.every((key) => key.startsWith(`piece!${String(10).padStart(16, "0")}!`))).toBe(true);
    });
  });
});

describe("LevelStorage: one snapshot written at a time", () => {
  const conf = { voters: ["n1", "n2"], learners: [] };

  it("its own snapshot and a newer one from the leader at once: the newer is held, whole, before and after a reopen", async () => {
    await inTempDir(async (path) => {
      const storage = await LevelStorage.open({ path, snapshotPieceBytes: 16 });
      await appendCommitted(storage, 20);
      // Its own is short (2 pieces): written alone, its batch would come first and clear the
      // leader's pieces written so far, and the leader's would then be recorded without them.
      const own = bytesOf(20, 1);
      const leaders = bytesOf(90, 2); // 6 pieces
      const outcomes = await Promise.allSettled([
        storage.createSnapshot(15, conf, own),
        storage.applySnapshot({ metadata: { index: 40, term: 2, conf }, data: leaders }),
      ]);
      expect(outcomes[1]).toEqual({ status: "fulfilled", value: undefined });
      // Its own stops at a piece, out of date, or was done before: never an error of another kind.
      if (outcomes[0]!.status === "rejected")
        expect(outcomes[0]!.reason).toMatchObject({ code: "RAFT_ERR_SNAPSHOT_OUT_OF_DATE" });
      expect(await heldSnapshot(storage)).toEqual({ metadata: { index: 40, term: 2, conf }, data: leaders });
      await storage.close();
      expect(await pieceKeysOnDisk(path)).toHaveLength(6); // the leader's alone
      const reopened = await LevelStorage.open({ path });
      expect(await heldSnapshot(reopened)).toEqual({ metadata: { index: 40, term: 2, conf }, data: leaders });
      await reopened.close();
    });
  });

  it("two snapshots of the same index at once: the held bytes are one of them, never a mix", async () => {
    await inTempDir(async (path) => {
      const storage = await LevelStorage.open({ path, snapshotPieceBytes: 16 });
      await appendCommitted(storage, 20);
      // Of different sizes: pieces of the longer one left past the shorter's would make the
      // snapshot look longer than its record says.
      const own = bytesOf(100, 3); // 7 pieces
      const leaders = bytesOf(60, 4); // 4 pieces
      await Promise.allSettled([
        storage.createSnapshot(18, conf, own),
        storage.applySnapshot({ metadata: { index: 18, term: 1, conf }, data: leaders }),
      ]);
      const held = (await heldSnapshot(storage)).data;
      expect([own, leaders].some((data) => Buffer.from(data).equals(Buffer.from(held)))).toBe(true);
      await storage.close();
      const reopened = await LevelStorage.open({ path });
      expect((await heldSnapshot(reopened)).data).toEqual(held);
      await reopened.close();
    });
  });

  it("an older snapshot issued while a newer one is written is refused as out of date", async () => {
    await inTempDir(async (path) => {
      const storage = await LevelStorage.open({ path, snapshotPieceBytes: 16 });
      await appendCommitted(storage, 20);
      const leaders = bytesOf(100, 5);
      const newer = storage.applySnapshot({ metadata: { index: 40, term: 2, conf }, data: leaders });
      const older = storage.createSnapshot(15, conf, bytesOf(100, 6));
      await newer;
      await expect(older).rejects.toMatchObject({ code: "RAFT_ERR_SNAPSHOT_OUT_OF_DATE" });
      expect((await heldSnapshot(storage)).data).toEqual(leaders);
      await storage.close();
    });
  });
});

describe("LevelStorage: a received snapshot larger than a piece", () => {
  const conf = { voters: ["n1", "n2"], learners: [] };

  it("is written in pieces, read back by range and whole after reopen", async () => {
    await inTempDir(async (path) => {
      const storage = await LevelStorage.open({ path, snapshotPieceBytes: 16 });
      await storage.append([entry(1, 1), entry(2, 1)], { term: 1, vote: "", commit: 1 }, true);
      const data = bytesOf(50, 3); // 4 pieces
      await storage.applySnapshot({ metadata: { index: 30, term: 2, conf }, data });
      expect([storage.firstIndex(), storage.lastIndex(), storage.initialState().hardState.commit]).toEqual([
        31, 30, 30,
      ]);
      expect(await storage.readSnapshotData(30, 10, 30)).toEqual(data.subarray(10, 40));
      await storage.close();
      expect(await pieceKeysOnDisk(path)).toHaveLength(4);

      const reopened = await LevelStorage.open({ path });
      expect(await heldSnapshot(reopened)).toEqual({ metadata: { index: 30, term: 2, conf }, data });
      await reopened.close();
    });
  });

  it("not newer than the held one, is refused before any of its pieces overwrites the held one's", async () => {
    await inTempDir(async (path) => {
      const storage = await LevelStorage.open({ path, snapshotPieceBytes: 16 });
      const held = bytesOf(40, 1);
      await storage.applySnapshot({ metadata: { index: 30, term: 2, conf }, data: held });
      await expect(
        storage.applySnapshot({ metadata: { index: 30, term: 2, conf }, data: bytesOf(40, 9) }),
      ).rejects.toMatchObject({ code: "RAFT_ERR_SNAPSHOT_OUT_OF_DATE" });
      await expect(storage.createSnapshot(30, conf, bytesOf(40, 5))).rejects.toMatchObject({
        code: "RAFT_ERR_SNAPSHOT_OUT_OF_DATE",
      });
      expect(await storage.readSnapshotData(30, 0, 40)).toEqual(held);
      await storage.close();
      const reopened = await LevelStorage.open({ path, snapshotPieceBytes: 16 });
      expect((await heldSnapshot(reopened)).data).toEqual(held);
      await reopened.close();
    });
  });
});

describe("LevelStorage: the snapshot's size and pieces, recorded and checked on open", () => {
  const conf = { voters: ["n1"], learners: [] };
  const pieceKeyOf = (index: number, n: number) =>
    `piece!${String(index).padStart(16, "0")}!${String(n).padStart(10, "0")}`;
  // The on-disk encoding of small records (storage/codec.ts), to write a version-1 record by hand.
  const packr = new Packr({ useRecords: false, mapsAsObjects: true });

  /** A storage holding a snapshot at 15 of `data` (in pieces of 16 bytes when longer), closed. */
  async function withSnapshot(path: string, data: Uint8Array): Promise<void> {
    const storage = await LevelStorage.open({ path, snapshotPieceBytes: 16 });
    await appendCommitted(storage, 20);
    await storage.createSnapshot(15, conf, data);
    await storage.close();
  }

  /** Changes the closed storage's snapshot sublevel directly (what a crash or a bad copy leaves). */
  async function onDisk(path: string, change: (snap: ReturnType<Level["sublevel"]>) => Promise<void>): Promise<void> {
    const db = new Level<string, Uint8Array>(path, { keyEncoding: "utf8", valueEncoding: "view" });
    await change(db.sublevel<string, Uint8Array>("snap", { keyEncoding: "utf8", valueEncoding: "view" }));
    await db.close();
  }

  it("snap!meta records the size, the pieces and their size; memory holds the size, not the bytes", async () => {
    await inTempDir(async (path) => {
      await withSnapshot(path, bytesOf(100));
      const record = decodeSnapshotRecord((await snapRecords(path)).get("meta") ?? new Uint8Array());
      expect(record).toEqual({
        metadata: { index: 15, term: 1, conf },
        layout: { totalBytes: 100, pieces: 7, pieceBytes: 16, inFiles: true },
      });
      const reopened = await LevelStorage.open({ path });
      expect(reopened.snapshot()).toStrictEqual({ metadata: { index: 15, term: 1, conf }, totalBytes: 100 });
      await reopened.createSnapshot(18, conf, bytesOf(10)); // one value: no pieces
      await reopened.close();
      expect(decodeSnapshotRecord((await snapRecords(path)).get("meta") ?? new Uint8Array()).layout).toEqual({
        totalBytes: 10,
        pieces: 0,
        pieceBytes: 0,
        inFiles: false,
      });
    });
  });

  /**
   * Moves the closed storage's piece files into LevelDB values with a version-2 record (or the
   * version-1 record `meta` when given): the layout an earlier release wrote.
   */
  async function asEarlierRelease(path: string, meta?: Uint8Array): Promise<void> {
    const record = decodeSnapshotRecord((await snapRecords(path)).get("meta") ?? new Uint8Array());
    const layout = record.layout!;
    const pieces: Uint8Array[] = [];
    for (let n = 0; n < layout.pieces; n++) {
      pieces.push(new Uint8Array(await readFile(pieceFileOf(path, 15, n))));
      await rm(pieceFileOf(path, 15, n));
    }
    await onDisk(path, async (snap) => {
      for (const [n, piece] of pieces.entries()) await snap.put(pieceKeyOf(15, n), piece);
      const { totalBytes, pieces: count, pieceBytes } = layout;
      await snap.put("meta", meta ?? packr.pack({ v: 2, ...record.metadata, totalBytes, pieces: count, pieceBytes }));
    });
  }

  type Damage = (path: string, snap: ReturnType<Level["sublevel"]>) => Promise<void>;
  const inFiles: Array<[string, Damage, RegExp]> = [
    ["a middle piece lost", (path) => rm(pieceFileOf(path, 15, 3)), /6 of its 7 pieces/],
    ["the last piece lost", (path) => rm(pieceFileOf(path, 15, 6)), /6 of its 7 pieces/],
    ["the first piece lost", (path) => rm(pieceFileOf(path, 15, 0)), /6 of its 7 pieces/],
    ["the last piece short", (path) => writeFile(pieceFileOf(path, 15, 6), bytesOf(3)), /last piece has 3 bytes/],
    [
      "a piece in the wrong place",
      async (path) => {
        await rm(pieceFileOf(path, 15, 2));
        await writeFile(pieceFileOf(path, 15, 7), bytesOf(16));
      },
      /piece 2 is missing/,
    ],
  ];
  const inLevel: Array<[string, Damage, RegExp]> = [
    ["a middle piece lost", (_, snap) => snap.del(pieceKeyOf(15, 3)), /6 of its 7 pieces/],
    ["the last piece short", (_, snap) => snap.put(pieceKeyOf(15, 6), bytesOf(3)), /last piece has 3 bytes/],
    [
      "a piece in the wrong place",
      async (_, snap) => {
        await snap.del(pieceKeyOf(15, 2));
        await snap.put(pieceKeyOf(15, 7), bytesOf(16));
      },
      /piece 2 is missing/,
    ],
  ];
  const damages: Array<[string, Uint8Array, boolean, Damage, RegExp]> = [
    ...inFiles.map(([what, damage, message]): [string, Uint8Array, boolean, Damage, RegExp] => [
      `${what} (piece files)`,
      bytesOf(100),
      false,
      damage,
      message,
    ]),
    ...inLevel.map(([what, damage, message]): [string, Uint8Array, boolean, Damage, RegExp] => [
      `${what} (pieces in LevelDB, as an earlier release wrote them)`,
      bytesOf(100),
      true,
      damage,
      message,
    ]),
    ["the whole value lost", bytesOf(10), false, (_, snap) => snap.del("data"), /snap!data is missing/],
    ["the whole value short", bytesOf(10), false, (_, snap) => snap.put("data", bytesOf(9)), /snap!data has 9 bytes/],
  ];
  for (const [what, data, earlier, damage, message] of damages) {
    it(`refuses to open with ${what}: an incomplete snapshot is never served`, async () => {
      await inTempDir(async (path) => {
        await withSnapshot(path, data);
        if (earlier) await asEarlierRelease(path);
        const db = new Level<string, Uint8Array>(path, { keyEncoding: "utf8", valueEncoding: "view" });
        await damage(path, db.sublevel<string, Uint8Array>("snap", { keyEncoding: "utf8", valueEncoding: "view" }));
        await db.close();
        const opening = LevelStorage.open({ path });
        await expect(opening).rejects.toMatchObject({ code: "RAFT_ERR_STORAGE_CORRUPT" });
        await expect(opening).rejects.toThrow(message);
      });
    });
  }

  it("opens a version-2 record with its pieces in LevelDB, and the next snapshot's pieces are files", async () => {
    await inTempDir(async (path) => {
      const data = bytesOf(100, 6);
      await withSnapshot(path, data);
      await asEarlierRelease(path);
      expect(await pieceKeysOnDisk(path)).toHaveLength(7);
      const reopened = await LevelStorage.open({ path, snapshotPieceBytes: 16 });
      expect(await heldSnapshot(reopened)).toEqual({ metadata: { index: 15, term: 1, conf }, data });
      expect(await reopened.readSnapshotData(15, 30, 40)).toEqual(data.subarray(30, 70));
      await reopened.createSnapshot(18, conf, bytesOf(50, 7));
      await reopened.close();
      const keys = await pieceKeysOnDisk(path);
      expect(keys).toHaveLength(4);
      expect((await snapRecords(path)).size).toBe(1); // meta alone: the earlier pieces are gone
      const again = await LevelStorage.open({ path });
      expect((await heldSnapshot(again)).data).toEqual(bytesOf(50, 7));
      await again.close();
    });
  });

  it("opens a version-1 record (metadata only) by working the layout out from the bytes on disk", async () => {
    for (const data of [bytesOf(100, 5), bytesOf(10, 5)]) {
      await inTempDir(async (path) => {
        await withSnapshot(path, data);
        const v1 = packr.pack({ index: 15, term: 1, conf });
        if (data.byteLength > 16) await asEarlierRelease(path, v1);
        else await onDisk(path, (snap) => snap.put("meta", v1));
        const reopened = await LevelStorage.open({ path, snapshotPieceBytes: 7 });
        expect(reopened.snapshot()).toStrictEqual({
          metadata: { index: 15, term: 1, conf },
          totalBytes: data.byteLength,
        });
        expect(await heldSnapshot(reopened)).toEqual({ metadata: { index: 15, term: 1, conf }, data });
        expect(await reopened.readSnapshotData(15, 3, 5)).toEqual(data.subarray(3, 8));
        await reopened.close();
      });
    }
    // Its pieces are checked too: one missing in the middle is found.
    await inTempDir(async (path) => {
      await withSnapshot(path, bytesOf(100));
      await asEarlierRelease(path, packr.pack({ index: 15, term: 1, conf }));
      await onDisk(path, (snap) => snap.del(pieceKeyOf(15, 4)));
      await expect(LevelStorage.open({ path })).rejects.toMatchObject({ code: "RAFT_ERR_STORAGE_CORRUPT" });
    });
  });

  it("a read of the held snapshot racing a newer snapshot's write gets the right bytes or 'out of date', never 'corrupt'", async () => {
    await inTempDir(async (path) => {
      const storage = await LevelStorage.open({ path, snapshotPieceBytes: 16 });
      await appendCommitted(storage, 80);
      const outcomes = { read: 0, outOfDate: 0 };
      let held = bytesOf(8);
      await storage.createSnapshot(1, conf, held);
      for (let index = 2; index <= 80; index++) {
        // Whole and pieced in turn, so every change of layout is raced; the read starts some turns later.
        const next = bytesOf(index % 2 === 0 ? 100 : 8, index);
        const heldIndex = index - 1;
        const expected = held;
        const writing = storage.createSnapshot(index, conf, next);
        for (let turn = 0; turn < index % 7; turn++) await new Promise((resolve) => setImmediate(resolve));
        const reading = storage.readSnapshotData(heldIndex, 0, expected.byteLength).then(
          (bytes) => {
            expect(bytes).toEqual(expected);
            outcomes.read++;
          },
          (error: unknown) => {
            expect(error).toMatchObject({ code: "RAFT_ERR_SNAPSHOT_OUT_OF_DATE" });
            outcomes.outOfDate++;
          },
        );
        await Promise.all([writing, reading]);
        held = next;
      }
      expect(outcomes.read + outcomes.outOfDate).toBe(79);
      await storage.close();
    });
  });
});

describe("LevelStorage: a pinned snapshot (a transfer reads it) outlives its replacement until unpinned", () => {
  const conf = { voters: ["n1"], learners: [] };

  it("stays readable, pieced or whole, after newer snapshots replace it; its pieces go once unpinned", async () => {
    await inTempDir(async (path) => {
      const storage = await LevelStorage.open({ path, snapshotPieceBytes: 16 });
      await appendCommitted(storage, 30);
      const pieced = bytesOf(100, 1);
      const whole = bytesOf(10, 2);
      await storage.createSnapshot(10, conf, pieced);
      storage.pinSnapshots([10]);
      await storage.createSnapshot(15, conf, whole);
      storage.pinSnapshots([10, 15]);
      await storage.createSnapshot(20, conf, bytesOf(50, 3));
      expect(storage.snapshot().metadata.index).toBe(20);
      expect(await storage.readSnapshotData(10, 20, 50)).toEqual(pieced.subarray(20, 70));
      expect(await storage.readSnapshotData(15, 2, 5)).toEqual(whole.subarray(2, 7));
      expect(await storage.readSnapshotData(20, 0, 50)).toEqual(bytesOf(50, 3));
      // Unpinned: no longer readable, and its pieces leave the disk.
      storage.pinSnapshots([15]);
      await expect(storage.readSnapshotData(10, 0, 1)).rejects.toMatchObject({ code: "RAFT_ERR_SNAPSHOT_OUT_OF_DATE" });
      expect(await storage.readSnapshotData(15, 0, 10)).toEqual(whole);
      storage.pinSnapshots([]);
      await expect(storage.readSnapshotData(15, 0, 1)).rejects.toMatchObject({ code: "RAFT_ERR_SNAPSHOT_OUT_OF_DATE" });
      await storage.close();
      const pieceIndexes = new Set((await pieceKeysOnDisk(path)).map((key) => Number(key.split("!")[1])));
      expect([...pieceIndexes]).toEqual([20]);
    });
  });

  it("not pinned, a replaced snapshot is out of date at once, and open() clears pieces a pin had kept", async () => {
    await inTempDir(async (path) => {
      const storage = await LevelStorage.open({ path, snapshotPieceBytes: 16 });
      await appendCommitted(storage, 30);
      await storage.createSnapshot(10, conf, bytesOf(100));
      await storage.createSnapshot(12, conf, bytesOf(100));
      await expect(storage.readSnapshotData(10, 0, 1)).rejects.toMatchObject({ code: "RAFT_ERR_SNAPSHOT_OUT_OF_DATE" });
      storage.pinSnapshots([12]);
      await storage.createSnapshot(14, conf, bytesOf(100));
      await storage.close(); // closed while 12 is pinned: its pieces are still on disk
      const reopened = await LevelStorage.open({ path });
      await expect(reopened.readSnapshotData(12, 0, 1)).rejects.toMatchObject({
        code: "RAFT_ERR_SNAPSHOT_OUT_OF_DATE",
      });
      await reopened.close();
      const keys = await pieceKeysOnDisk(path);
      expect(keys.every((key) => Number(key.split("!")[1]) === 14)).toBe(true);
      expect(keys).toHaveLength(7);
    });
  });
});

describe("createSnapshot given the bytes as a list of parts (their concatenation)", () => {
  const conf = { voters: ["n1"], learners: [] };
  const partsOf = (data: Uint8Array, sizes: number[]): Uint8Array[] => {
    const parts: Uint8Array[] = [];
    let at = 0;
    for (const size of sizes) {
      parts.push(data.slice(at, at + size));
      at += size;
    }
    expect(at).toBe(data.byteLength);
    return parts;
  };

  it("stores what one array of the same bytes stores: pieces cut across parts, a whole value joined", async () => {
    const pieced = bytesOf(100, 4);
    const whole = bytesOf(12, 6);
    await inTempDir(async (path) => {
      const storage = await LevelStorage.open({ path, snapshotPieceBytes: 16 });
      await appendCommitted(storage, 20);
      // Parts smaller than a piece, larger than one, empty, and ending inside a piece.
      await storage.createSnapshot(10, conf, partsOf(pieced, [5, 0, 40, 16, 3, 36]));
      expect(storage.snapshot()).toStrictEqual({ metadata: { index: 10, term: 1, conf }, totalBytes: 100 });
      expect((await heldSnapshot(storage)).data).toEqual(pieced);
      await storage.createSnapshot(12, conf, partsOf(whole, [7, 5]));
      expect((await heldSnapshot(storage)).data).toEqual(whole);
      await storage.close();
      const reopened = await LevelStorage.open({ path });
      expect(await heldSnapshot(reopened)).toEqual({ metadata: { index: 12, term: 1, conf }, data: whole });
      await reopened.close();
    });
    const memory = new MemoryStorage();
    await memory.append(
      Array.from({ length: 20 }, (_, i) => entry(i + 1, 1)),
      { term: 1, vote: "", commit: 20 },
      true,
    );
    await memory.createSnapshot(10, conf, partsOf(pieced, [50, 50]));
    expect((await heldSnapshot(memory)).data).toEqual(pieced);
  });
});
