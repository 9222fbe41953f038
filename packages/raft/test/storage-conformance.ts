// One suite for every storage (etcd's storage_test.go, abstract-level/test): each implementation
// of RaftStorage + RaftStorageWriter must pass it unchanged.

import { describe, expect, it } from "vitest";
import type {
  ConfState,
  Entry,
  HardState,
  RaftStorage,
  RaftStorageWriter,
  Snapshot,
  SnapshotDataReader,
} from "../src/core/types.js";

export type Storage = RaftStorage & RaftStorageWriter & SnapshotDataReader;

/** The held snapshot with its bytes, read back from the storage (which keeps only its metadata and size in memory). */
export async function heldSnapshot(storage: RaftStorage & SnapshotDataReader): Promise<Snapshot> {
  const { metadata, totalBytes } = storage.snapshot();
  return { metadata, data: await storage.readSnapshotData(metadata.index, 0, totalBytes) };
}

export interface StorageHarness {
  /** Opens the storage: fresh on the first call, the same data again after close() when durable. */
  open(options?: { keepEntries?: number; keepBytes?: number; conf?: ConfState }): Promise<Storage>;
  /** True when data survives close() + open(). */
  durable: boolean;
  cleanup(): Promise<void>;
}

const conf: ConfState = { voters: ["n1", "n2", "n3"], learners: ["n4"] };

export function entry(index: number, term: number, data = `e${index}`): Entry {
  return { index, term, type: "normal", data: new TextEncoder().encode(data) };
}

function range(from: number, to: number, term: number): Entry[] {
  const entries: Entry[] = [];
  for (let index = from; index <= to; index++) entries.push(entry(index, term));
  return entries;
}

function text(entries: Entry[]): string[] {
  return entries.map((e) => `${e.index}/${e.term}/${e.type}/${new TextDecoder().decode(e.data)}`);
}

async function withStorage(
  makeHarness: () => Promise<StorageHarness>,
  body: (h: StorageHarness) => Promise<void>,
): Promise<void> {
  const harness = await makeHarness();
  try {
    await body(harness);
  } finally {
    await harness.cleanup();
  }
}

export function storageConformance(name: string, makeHarness: () => Promise<StorageHarness>): void {
  const run = (body: (h: StorageHarness) => Promise<void>) => () => withStorage(makeHarness, body);

  describe(`storage conformance: ${name}`, () => {
    it(
      "starts empty: firstIndex 1, lastIndex 0, term(0) = 0, the given conf",
      run(async (h) => {
        const s = await h.open({ conf });
        expect(s.firstIndex()).toBe(1);
        expect(s.lastIndex()).toBe(0);
        expect(s.term(0)).toBe(0);
        expect(s.initialState()).toEqual({ hardState: { term: 0, vote: "", commit: 0 }, conf });
        expect(s.snapshot().metadata).toEqual({ index: 0, term: 0, conf });
        expect(s.entries(1, 1, Infinity)).toEqual([]);
        await s.close();
      }),
    );

    it(
      "appends entries and hard state together and reads them back",
      run(async (h) => {
        const s = await h.open();
        const hardState: HardState = { term: 2, vote: "n2", commit: 3 };
        await s.append(
          [...range(1, 3, 1), { index: 4, term: 2, type: "conf", data: new Uint8Array([1, 2, 3]) }],
          hardState,
          true,
        );
        expect(s.lastIndex()).toBe(4);
        expect(s.initialState().hardState).toEqual(hardState);
        expect(text(s.entries(1, 4, Infinity))).toEqual(["1/1/normal/e1", "2/1/normal/e2", "3/1/normal/e3"]);
        expect(s.entries(4, 5, Infinity)[0]).toEqual({
          index: 4,
          term: 2,
          type: "conf",
          data: new Uint8Array([1, 2, 3]),
        });
        expect([0, 1, 2, 3, 4].map((i) => s.term(i))).toEqual([0, 1, 1, 1, 2]);
        await s.append(range(5, 5, 2), null, false);
        expect(s.initialState().hardState).toEqual(hardState); // null leaves the hard state alone
        await s.close();
      }),
    );

    it(
      "overwrites a conflicting suffix and forgets the entries after it",
      run(async (h) => {
        const s = await h.open();
        await s.append(range(1, 5, 1), null, true);
        await s.append(range(3, 4, 2), null, true);
        expect(s.lastIndex()).toBe(4);
        expect([1, 2, 3, 4].map((i) => s.term(i))).toEqual([1, 1, 2, 2]);
        expect(() => s.term(5)).toThrow(/UNAVAILABLE/);
        await s.append(range(5, 6, 3), null, true); // and the log grows again from there
        expect(text(s.entries(4, 7, Infinity))).toEqual(["4/2/normal/e4", "5/3/normal/e5", "6/3/normal/e6"]);
        await s.close();
      }),
    );

    it(
      "refuses an append that would leave a gap",
      run(async (h) => {
        const s = await h.open();
        await s.append(range(1, 2, 1), null, true);
        await expect(s.append(range(4, 4, 1), null, true)).rejects.toThrow(/gap/);
        expect(s.lastIndex()).toBe(2);
        await s.close();
      }),
    );

    it(
      "entries(): bounds and maxBytes (always at least one entry)",
      run(async (h) => {
        const s = await h.open();
        await s.append(range(1, 5, 1), null, true); // 2 bytes of data each
        expect(s.entries(2, 5, 4).map((e) => e.index)).toEqual([2, 3]); // at the limit
        expect(s.entries(2, 5, 5).map((e) => e.index)).toEqual([2, 3]); // just past it
        expect(s.entries(2, 5, 6).map((e) => e.index)).toEqual([2, 3, 4]);
        expect(s.entries(2, 5, 0).map((e) => e.index)).toEqual([2]);
        expect(s.entries(1, 6, Infinity)).toHaveLength(5);
        expect(() => s.entries(1, 7, Infinity)).toThrow(/UNAVAILABLE/);
        expect(() => s.entries(0, 2, Infinity)).toThrow(/COMPACTED/);
        await s.close();
      }),
    );

    it(
      "createSnapshot records the snapshot and compacts up to index - keepEntries",
      run(async (h) => {
        const s = await h.open({ keepEntries: 2 });
        await s.append(range(1, 10, 1), { term: 1, vote: "n1", commit: 8 }, true);
        await s.createSnapshot(8, conf, new Uint8Array([8, 8]));
        // Storage keeps the snapshot's metadata and size in memory, never its bytes.
        expect(s.snapshot()).toStrictEqual({ metadata: { index: 8, term: 1, conf }, totalBytes: 2 });
        expect(await heldSnapshot(s)).toEqual({ metadata: { index: 8, term: 1, conf }, data: new Uint8Array([8, 8]) });
        expect(await s.readSnapshotData(8, 1, 1)).toEqual(new Uint8Array([8]));
        await expect(s.readSnapshotData(7, 0, 1)).rejects.toThrow(/SNAPSHOT_OUT_OF_DATE/);
        expect(s.firstIndex()).toBe(7);
        expect(s.lastIndex()).toBe(10);
        expect(s.term(6)).toBe(1); // the entry before firstIndex keeps its term
        expect(() => s.term(5)).toThrow(/COMPACTED/);
        expect(() => s.entries(6, 8, Infinity)).toThrow(/COMPACTED/);
        expect(s.entries(7, 11, Infinity).map((e) => e.index)).toEqual([7, 8, 9, 10]);
        expect(s.initialState().conf).toEqual(conf);
        await expect(s.createSnapshot(8, conf, new Uint8Array())).rejects.toThrow(/SNAPSHOT_OUT_OF_DATE/);
        await expect(s.createSnapshot(11, conf, new Uint8Array())).rejects.toThrow(/UNAVAILABLE/);
        await s.close();
      }),
    );

    it(
      "createSnapshot keeps behind it only the entries that fit in keepBytes, however many keepEntries allows",
      run(async (h) => {
        const s = await h.open({ keepEntries: 5, keepBytes: 10 });
        const fourBytes = (index: number) => entry(index, 1, `e${String(index).padStart(3, "0")}`);
        await s.append([1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map(fourBytes), { term: 1, vote: "n1", commit: 10 }, true);
        await s.createSnapshot(8, conf, new Uint8Array([8]));
        expect(s.firstIndex()).toBe(7); // 8 and 7 are 8 bytes; with 6 they would be 12
        expect(s.entries(7, 11, Infinity).map((e) => e.index)).toEqual([7, 8, 9, 10]);
        await s.createSnapshot(10, conf, new Uint8Array([10]));
        expect(s.firstIndex()).toBe(9);
        await s.close();
        if (!h.durable) return;
        const reopened = await h.open({ keepEntries: 5, keepBytes: 10 });
        expect(reopened.firstIndex()).toBe(9);
        expect(reopened.snapshot().metadata.index).toBe(10);
        await reopened.close();
      }),
    );

    it(
      "createSnapshot keeps nothing behind it when one entry is larger than keepBytes",
      run(async (h) => {
        const s = await h.open({ keepEntries: 5, keepBytes: 3 });
        await s.append(
          range(1, 10, 1).map((e) => ({ ...e, data: new Uint8Array(4) })),
          null,
          true,
        );
        await s.createSnapshot(8, conf, new Uint8Array());
        expect(s.firstIndex()).toBe(9);
        expect(s.term(8)).toBe(1);
        await s.close();
      }),
    );

    it(
      "compact: discards up to the index, is idempotent, never passes the snapshot",
      run(async (h) => {
        const s = await h.open({ keepEntries: 100 });
        await s.append(range(1, 10, 3), null, true);
        await s.createSnapshot(6, conf, new Uint8Array());
        expect(s.firstIndex()).toBe(1); // keepEntries 100 kept everything
        expect(s.initialState().hardState.commit).toBe(6); // a snapshot covers committed entries only
        await s.compact(4);
        expect(s.firstIndex()).toBe(5);
        expect(s.term(4)).toBe(3);
        await s.compact(2); // already compacted: no-op
        expect(s.firstIndex()).toBe(5);
        await expect(s.compact(7)).rejects.toThrow(/past the snapshot/);
        await s.compact(6);
        expect(s.firstIndex()).toBe(7);
        await s.close();
      }),
    );

    it(
      "applySnapshot past the log replaces it; commit moves up to the snapshot",
      run(async (h) => {
        const s = await h.open();
        await s.append(range(1, 3, 1), { term: 1, vote: "", commit: 2 }, true);
        const snapConf: ConfState = { voters: ["n1", "n2"], learners: [] };
        await s.applySnapshot({ metadata: { index: 20, term: 4, conf: snapConf }, data: new Uint8Array([9]) });
        expect(s.firstIndex()).toBe(21);
        expect(s.lastIndex()).toBe(20);
        expect(s.term(20)).toBe(4);
        expect(() => s.term(3)).toThrow(/COMPACTED/);
        expect(s.initialState()).toEqual({ hardState: { term: 1, vote: "", commit: 20 }, conf: snapConf });
        await s.append(range(21, 22, 4), null, true);
        expect(s.lastIndex()).toBe(22);
        await expect(
          s.applySnapshot({ metadata: { index: 20, term: 4, conf: snapConf }, data: new Uint8Array() }),
        ).rejects.toThrow(/SNAPSHOT_OUT_OF_DATE/);
        await s.close();
      }),
    );

    it(
      "applySnapshot inside the log keeps the matching entries after it, drops a conflicting log",
      run(async (h) => {
        const s = await h.open();
        await s.append(range(1, 6, 2), null, true);
        await s.applySnapshot({ metadata: { index: 4, term: 2, conf }, data: new Uint8Array() });
        expect([s.firstIndex(), s.lastIndex()]).toEqual([5, 6]);
        await s.applySnapshot({ metadata: { index: 5, term: 9, conf }, data: new Uint8Array() }); // term differs: log is stale
        expect([s.firstIndex(), s.lastIndex(), s.term(5)]).toEqual([6, 5, 9]);
        await s.close();
      }),
    );

    it(
      "rejects writes after close",
      run(async (h) => {
        const s = await h.open();
        await s.close();
        await expect(s.append(range(1, 1, 1), null, true)).rejects.toThrow(/STORAGE_CLOSED/);
      }),
    );

    it(
      "serializes writes issued without awaiting each other",
      run(async (h) => {
        const s = await h.open({ keepEntries: 5 });
        const writes: Promise<void>[] = [];
        for (let index = 1; index <= 50; index++)
          writes.push(s.append([entry(index, 1)], { term: 1, vote: "", commit: index }, index % 10 === 0));
        writes.push(s.createSnapshot(40, conf, new Uint8Array([40])));
        writes.push(s.append(range(45, 46, 2), null, true));
        await Promise.all(writes);
        expect([s.firstIndex(), s.lastIndex(), s.term(44), s.term(46)]).toEqual([36, 46, 1, 2]);
        expect(s.initialState().hardState.commit).toBe(50);
        await s.close();
      }),
    );

    it(
      "survives close and reopen: entries, hard state, snapshot, compaction (durable storages)",
      run(async (h) => {
        if (!h.durable) return;
        const s = await h.open({ keepEntries: 1, conf });
        await s.append(range(1, 7, 1), { term: 1, vote: "n1", commit: 5 }, true);
        await s.append(range(6, 8, 2), { term: 2, vote: "n3", commit: 6 }, true);
        await s.createSnapshot(5, { voters: ["n1", "n3"], learners: [] }, new Uint8Array([5, 5, 5]));
        await s.close();
        const r = await h.open({ keepEntries: 1, conf: { voters: ["ignored"], learners: [] } });
        expect(r.initialState()).toEqual({
          hardState: { term: 2, vote: "n3", commit: 6 },
          conf: { voters: ["n1", "n3"], learners: [] },
        });
        expect([r.firstIndex(), r.lastIndex(), r.term(4)]).toEqual([5, 8, 1]);
        expect(text(r.entries(5, 9, Infinity))).toEqual([
          "5/1/normal/e5",
          "6/2/normal/e6",
          "7/2/normal/e7",
          "8/2/normal/e8",
        ]);
        expect(await heldSnapshot(r)).toEqual({
          metadata: { index: 5, term: 1, conf: { voters: ["n1", "n3"], learners: [] } },
          data: new Uint8Array([5, 5, 5]),
        });
        await r.applySnapshot({ metadata: { index: 30, term: 3, conf }, data: new Uint8Array([30]) });
        await r.close();
        const t = await h.open();
        expect([t.firstIndex(), t.lastIndex(), t.term(30), t.initialState().hardState.commit]).toEqual([31, 30, 3, 30]);
        expect((await heldSnapshot(t)).data).toEqual(new Uint8Array([30]));
        await t.close();
      }),
    );
  });
}
