import { mkdtemp, readdir, rm, stat, truncate } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { isDeepStrictEqual } from "node:util";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import {
  decodeValue,
  encodeValue,
  logIndexKey,
  logIndexMax,
  parseLogIndexKey,
  replaysEqual,
} from "../src/store/codec.js";
import { isStoreError } from "../src/store/errors.js";
import { LevelCommandLog, type CommandLogOptions } from "../src/store/level-command-log.js";
import { openStoreDb, storeSublevel, syncedBatchWrite, type StoreDb, type StoreOp } from "../src/store/level-db.js";
// @ts-expect-error plain JS fixture shared with the spawned crash child
import { FakeMachine } from "../../../test/e2e/fixtures/fake-machine.mjs";

type Command =
  | { type: "add"; name: string; amount: number }
  | { type: "blob"; name: string; data: Uint8Array; tags: Map<string, unknown> }
  | { type: "fail" };
interface Machine {
  apply(command: Command): { index: number; value?: number };
  snapshot(): unknown;
  restore(snapshot: unknown): void;
  applied: number;
  counters: Map<string, number>;
}
const newMachine = (): Machine => new FakeMachine() as Machine;

const dirs: string[] = [];
const dbs: StoreDb[] = [];
async function freshDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "keyraft-store-"));
  dirs.push(dir);
  return dir;
}
async function openDb(dir: string): Promise<StoreDb> {
  const db = await openStoreDb(dir);
  dbs.push(db);
  return db;
}
afterEach(async () => {
  for (const db of dbs.splice(0)) if (db.status === "open") await db.close();
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

const noFatal = (error: Error) => {
  throw new Error(`unexpected fatal: ${error.message}`);
};
async function openLog(db: StoreDb, machine: Machine, options: Partial<CommandLogOptions> = {}) {
  return LevelCommandLog.open<Command, ReturnType<Machine["apply"]>>(db, machine, { onFatal: noFatal, ...options });
}
const add = (name: string, amount = 1): Command => ({ type: "add", name, amount });

describe("codec", () => {
  it("round-trips Maps, Uint8Array, undefined and nesting exactly", () => {
    const value = {
      a: new Map<unknown, unknown>([
        ["x", 1],
        [2, { y: undefined }],
      ]),
      b: new Uint8Array([0, 1, 255]),
      c: undefined,
      d: [undefined, null, -0.5, 2 ** 53 - 1, "é"],
      e: new Set(["s"]),
    };
    const decoded = decodeValue(encodeValue(value));
    expect(isDeepStrictEqual(decoded, value)).toBe(true);
    expect((decoded as typeof value).b).toBeInstanceOf(Uint8Array);
    expect(Object.getPrototypeOf((decoded as typeof value).b)).toBe(Uint8Array.prototype);
  });

  it("decodes to an equal value for generated JSON-like values with Maps and bytes", () => {
    const leaf = fc.oneof(
      fc.string(),
      fc.integer(),
      fc.double({ noNaN: true, noDefaultInfinity: true }),
      fc.boolean(),
      fc.constant(null),
      fc.constant(undefined),
      fc.uint8Array(),
    );
    const tree = fc.letrec((tie) => ({
      node: fc.oneof(
        { depthSize: "small" },
        leaf,
        fc.array(tie("node")),
        fc.dictionary(fc.string(), tie("node"), { noNullPrototype: true }),
        fc.array(fc.tuple(fc.string(), tie("node"))).map((pairs) => new Map(pairs)),
      ),
    })).node;
    fc.assert(
      fc.property(tree, (value) => {
        const decoded = decodeValue(encodeValue(value));
        const hasProtoKey = (v: unknown): boolean =>
          v instanceof Map
            ? [...v.values()].some(hasProtoKey)
            : v instanceof Uint8Array || typeof v !== "object" || v === null
              ? false
              : Object.keys(v).includes("__proto__") || Object.values(v).some(hasProtoKey);
        // The one known difference: msgpackr renames "__proto__" keys; the log refuses such commands.
        expect(replaysEqual(value, decoded)).toBe(!hasProtoKey(value));
      }),
      { numRuns: 300 },
    );
  });

  it("replaysEqual treats -0 as 0 and notices renamed keys, types and bytes", () => {
    expect(replaysEqual({ a: -0 }, decodeValue(encodeValue({ a: -0 })))).toBe(true);
    const poisoned = JSON.parse('{"a":{"__proto__":1}}') as unknown;
    expect(replaysEqual(poisoned, decodeValue(encodeValue(poisoned)))).toBe(false);
    expect(replaysEqual(new Uint8Array([1]), new Uint8Array([2]))).toBe(false);
    expect(replaysEqual(new Map([[1, 2]]), { 1: 2 })).toBe(false);
    expect(replaysEqual([1], { 0: 1 })).toBe(false);
    expect(replaysEqual({ a: undefined }, {})).toBe(false);
  });

  it("log index keys sort bytewise in numeric order and parse back", () => {
    fc.assert(
      fc.property(fc.nat({ max: logIndexMax }), fc.nat({ max: logIndexMax }), (a, b) => {
        expect(parseLogIndexKey(logIndexKey(a))).toBe(a);
        expect(Buffer.compare(Buffer.from(logIndexKey(a)), Buffer.from(logIndexKey(b)))).toBe(Math.sign(a - b));
      }),
    );
    expect(logIndexKey(logIndexMax)).toBe("001fffffffffffff");
    expect(() => logIndexKey(logIndexMax + 1)).toThrow(RangeError);
    expect(() => logIndexKey(-1)).toThrow(RangeError);
    expect(() => parseLogIndexKey("10")).toThrow(RangeError);
  });
});

describe("LevelCommandLog", () => {
  it("applies synchronously, resolves with the outcome once durable, and restarts to the same state", async () => {
    const dir = await freshDir();
    let db = await openDb(dir);
    const machine = newMachine();
    const log = await openLog(db, machine);
    expect(log.appliedIndex()).toBe(0);
    const first = log.append(add("a", 2));
    expect(machine.counters.get("a")).toBe(2); // visible before the promise settles
    expect(log.appliedIndex()).toBe(1);
    const blob: Command = {
      type: "blob",
      name: "b",
      data: new Uint8Array([1, 2, 3]),
      tags: new Map([["k", undefined]]),
    };
    const outcomes = await Promise.all([first, log.append(blob), log.append(add("a", 3))]);
    expect(outcomes.map((o) => o.index)).toEqual([1, 2, 3]);
    await log.close();
    await db.close();

    db = await openDb(dir);
    const restarted = newMachine();
    const reopened = await openLog(db, restarted);
    expect(reopened.appliedIndex()).toBe(3);
    expect(isDeepStrictEqual(restarted.snapshot(), machine.snapshot())).toBe(true);
    // The log continues at the next index.
    expect((await reopened.append(add("a"))).index).toBe(4);
    await reopened.close();
  });

  it("groups concurrent appends into fewer fsynced batches, never overlapping writes", async () => {
    const db = await openDb(await freshDir());
    let inFlight = 0;
    let inFlightPeak = 0;
    const batchSizes: number[] = [];
    const real = syncedBatchWrite(db);
    const write = async (ops: readonly StoreOp[]) => {
      inFlight += 1;
      inFlightPeak = Math.max(inFlightPeak, inFlight);
      batchSizes.push(ops.length);
      try {
        await real(ops);
      } finally {
        inFlight -= 1;
      }
    };
    const log = await openLog(db, newMachine(), { write });
    const appends = 200;
    const waves: Promise<unknown>[] = [];
    for (let wave = 0; wave < 10; wave++) {
      for (let i = 0; i < appends / 10; i++) waves.push(log.append(add(`n${i}`)));
      await new Promise((resolve) => setImmediate(resolve));
    }
    await Promise.all(waves);
    const stats = log.statistics();
    expect(stats.itemsWritten).toBe(appends);
    expect(stats.batchesWritten).toBeLessThan(appends);
    expect(batchSizes.reduce((a, b) => a + b, 0)).toBe(appends);
    expect(inFlightPeak).toBe(1);
    await log.close();
  });

  it("never puts more than batchEntriesMax entries in one batch (at and past the limit)", async () => {
    const db = await openDb(await freshDir());
    const batchSizes: number[] = [];
    const real = syncedBatchWrite(db);
    const log = await openLog(db, newMachine(), {
      batchEntriesMax: 5,
      write: (ops) => {
        batchSizes.push(ops.length);
        return real(ops);
      },
    });
    // Queued in one tick: the first batch is cut at 5, and so on.
    await Promise.all(Array.from({ length: 12 }, (_, i) => log.append(add(`n${i}`))));
    expect(batchSizes).toEqual([5, 5, 2]);
    await log.close();
  });

  it("stops filling a batch at batchBytesMax (a lone larger entry is still written)", async () => {
    const db = await openDb(await freshDir());
    const batchSizes: number[] = [];
    const real = syncedBatchWrite(db);
    const entryBytes = encodeValue(add("n0")).byteLength;
    const log = await openLog(db, newMachine(), {
      batchBytesMax: 3 * entryBytes, // exactly three entries fit
      write: (ops) => {
        batchSizes.push(ops.length);
        return real(ops);
      },
    });
    await Promise.all(Array.from({ length: 7 }, (_, i) => log.append(add(`n${i}`))));
    expect(batchSizes).toEqual([3, 3, 1]);
    const big: Command = { type: "blob", name: "big", data: new Uint8Array(10 * entryBytes), tags: new Map() };
    await Promise.all([log.append(big), log.append(add("n1"))]);
    expect(batchSizes.slice(3)).toEqual([1, 1]);
    await log.close();
  });

  it("rejects appends past queueEntriesMax without applying them, and accepts again once drained", async () => {
    const db = await openDb(await freshDir());
    const machine = newMachine();
    const log = await openLog(db, machine, { queueEntriesMax: 10 });
    const accepted = Array.from({ length: 10 }, () => log.append(add("x")));
    const refused = log.append(add("x"));
    await expect(refused).rejects.toSatisfy((error: unknown) => isStoreError(error, "KEYRAFT_STORE_OVERLOADED"));
    expect(machine.counters.get("x")).toBe(10);
    expect(log.appliedIndex()).toBe(10);
    await Promise.all(accepted);
    expect((await log.append(add("x"))).index).toBe(11);
    await log.close();
  });

  it("treats a throwing apply as fatal: the command is not logged and nothing more is accepted", async () => {
    const dir = await freshDir();
    let db = await openDb(dir);
    const fatal: Error[] = [];
    const log = await openLog(db, newMachine(), { onFatal: (error) => fatal.push(error) });
    const first = log.append(add("a"));
    await expect(log.append({ type: "fail" })).rejects.toSatisfy(
      (error: unknown) => isStoreError(error, "KEYRAFT_STORE_FAILED") && /refuses/.test(String((error as Error).cause)),
    );
    expect(fatal).toHaveLength(1);
    await expect(log.append(add("a"))).rejects.toSatisfy((error: unknown) =>
      isStoreError(error, "KEYRAFT_STORE_FAILED"),
    );
    expect(log.appliedIndex()).toBe(1);
    await first; // what was applied before is still made durable
    await log.close();
    await db.close();
    db = await openDb(dir);
    expect((await openLog(db, newMachine())).appliedIndex()).toBe(1);
  });

  it("a failed write rejects every pending append, calls onFatal once, and loses nothing acknowledged", async () => {
    const dir = await freshDir();
    let db = await openDb(dir);
    const real = syncedBatchWrite(db);
    let writes = 0;
    const fatal: Error[] = [];
    const log = await openLog(db, newMachine(), {
      onFatal: (error) => fatal.push(error),
      write: (ops) => {
        writes += 1;
        return writes === 2 ? Promise.reject(new Error("disk full")) : real(ops);
      },
    });
    await log.append(add("a")); // batch 1: durable
    const failing = [log.append(add("a")), log.append(add("a"))]; // batch 2 fails
    for (const pending of failing) {
      await expect(pending).rejects.toSatisfy((error: unknown) => isStoreError(error, "KEYRAFT_STORE_FAILED"));
    }
    expect(fatal).toHaveLength(1);
    expect((fatal[0]?.cause as Error).message).toBe("disk full");
    await expect(log.append(add("a"))).rejects.toSatisfy((error: unknown) =>
      isStoreError(error, "KEYRAFT_STORE_FAILED"),
    );
    await log.close();
    await db.close();
    db = await openDb(dir);
    const machine = newMachine();
    expect((await openLog(db, machine)).appliedIndex()).toBe(1);
    expect(machine.counters.get("a")).toBe(1);
  });

  it("snapshots every snapshotEveryEntries, deletes the covered entries, and restarts to the same state", async () => {
    const dir = await freshDir();
    let db = await openDb(dir);
    const machine = newMachine();
    const log = await openLog(db, machine, { snapshotEveryEntries: 10 });
    await Promise.all(Array.from({ length: 35 }, (_, i) => log.append(add(`k${i % 4}`, i))));
    expect(log.statistics()).toMatchObject({ snapshotIndex: 30, snapshotsTaken: 3 });
    await log.close();
    const keys = await storeSublevel(db, "log").keys().all();
    expect(keys.map(parseLogIndexKey)).toEqual([31, 32, 33, 34, 35]);
    const snap = decodeValue((await storeSublevel(db, "snap").get("latest"))!) as { index: number };
    expect(snap.index).toBe(30);
    await db.close();

    db = await openDb(dir);
    const restarted = newMachine();
    const reopened = await openLog(db, restarted, { snapshotEveryEntries: 10 });
    expect(reopened.appliedIndex()).toBe(35);
    expect(isDeepStrictEqual(restarted.snapshot(), machine.snapshot())).toBe(true);
    // The next snapshot covers 31..40 only.
    await Promise.all(Array.from({ length: 5 }, () => reopened.append(add("z"))));
    await reopened.close();
    expect((await storeSublevel(db, "log").keys().all()).length).toBe(0);
  });

  it("snapshots once the entries since the last snapshot hold snapshotEveryBytes, and replays only what follows", async () => {
    const dir = await freshDir();
    let db = await openDb(dir);
    const machine = newMachine();
    const options = { snapshotEveryEntries: 10_000, snapshotEveryBytes: 2500 };
    const log = await openLog(db, machine, options);
    // Each entry encodes to a little over 1,000 bytes: the third one crosses 2,500.
    const blob = (i: number): Command => ({
      type: "blob",
      name: `b${i}`,
      data: new Uint8Array(1000).fill(i),
      tags: new Map(),
    });
    for (let i = 1; i <= 7; i++) await log.append(blob(i));
    expect(log.statistics()).toMatchObject({ snapshotIndex: 6, snapshotsTaken: 2 });
    await log.close();
    expect((await storeSublevel(db, "log").keys().all()).map(parseLogIndexKey)).toEqual([7]);
    await db.close();

    db = await openDb(dir);
    const restarted = newMachine();
    let replayed = 0;
    const apply = restarted.apply.bind(restarted);
    restarted.apply = (command) => {
      replayed += 1;
      return apply(command);
    };
    const reopened = await openLog(db, restarted, options);
    expect(replayed).toBe(1);
    expect(reopened.appliedIndex()).toBe(7);
    expect(isDeepStrictEqual(restarted.snapshot(), machine.snapshot())).toBe(true);
    // The replayed entry counts toward the next snapshot: two more take one at 9.
    await reopened.append(blob(8));
    await reopened.append(blob(9));
    expect(reopened.statistics()).toMatchObject({ snapshotIndex: 9 });
    await reopened.close();
  });

  it("takes snapshotEveryBytes 0 as only by entries", async () => {
    const db = await openDb(await freshDir());
    const log = await openLog(db, newMachine(), { snapshotEveryEntries: 10_000, snapshotEveryBytes: 0 });
    for (let i = 0; i < 5; i++)
      await log.append({ type: "blob", name: "b", data: new Uint8Array(100_000), tags: new Map() });
    expect(log.statistics()).toMatchObject({ snapshotIndex: 0, snapshotsTaken: 0 });
    await log.close();
  });

  it("refuses to start on a gap in the log, an undecodable entry, or an unknown format", async () => {
    const dir = await freshDir();
    let db = await openDb(dir);
    const log = await openLog(db, newMachine());
    for (let i = 0; i < 4; i++) await log.append(add("a"));
    await log.close();
    const logLevel = storeSublevel(db, "log");
    await logLevel.del(logIndexKey(2));
    await expect(openLog(db, newMachine())).rejects.toSatisfy(
      (error: unknown) =>
        isStoreError(error, "KEYRAFT_STORE_CORRUPT") && /expected index 2, found 3/.test((error as Error).message),
    );
    await logLevel.put(logIndexKey(2), new Uint8Array([0x92, 0x01])); // an array of two holding one item: torn
    await expect(openLog(db, newMachine())).rejects.toSatisfy((error: unknown) =>
      isStoreError(error, "KEYRAFT_STORE_CORRUPT"),
    );
    await storeSublevel(db, "meta").put("format", encodeValue(99));
    await expect(openLog(db, newMachine())).rejects.toSatisfy(
      (error: unknown) =>
        isStoreError(error, "KEYRAFT_STORE_CORRUPT") && /format version 99/.test((error as Error).message),
    );
    await db.close();
    db = await openDb(await freshDir());
    await storeSublevel(db, "log").put(logIndexKey(1), encodeValue(add("a")));
    await expect(openLog(db, newMachine())).rejects.toSatisfy((error: unknown) =>
      isStoreError(error, "KEYRAFT_STORE_CORRUPT"),
    );
  });

  it("recovers to the last whole batch when the write-ahead log ends in a torn write", async () => {
    const dir = await freshDir();
    let db = await openDb(dir);
    const machine = newMachine();
    const log = await openLog(db, machine);
    for (let i = 1; i <= 5; i++) await log.append(add("a", i)); // five batches, one entry each
    await log.close();
    await db.close(); // LevelDB keeps these in its write-ahead log until the next open
    const wal = (await readdir(dir)).filter((name) => name.endsWith(".log"));
    expect(wal).toHaveLength(1);
    const walPath = join(dir, wal[0]!);
    await truncate(walPath, (await stat(walPath)).size - 3); // the last record is now torn
    db = await openDb(dir);
    const recovered = newMachine();
    const reopened = await openLog(db, recovered);
    expect(reopened.appliedIndex()).toBe(4);
    expect(recovered.counters.get("a")).toBe(1 + 2 + 3 + 4);
    expect((await reopened.append(add("a"))).index).toBe(5);
  });

  it("refuses, without applying, a command that would not replay unchanged", async () => {
    const db = await openDb(await freshDir());
    const machine = newMachine();
    const log = await openLog(db, machine);
    const poisoned = JSON.parse('{"type":"add","name":"a","amount":1,"__proto__":{"x":1}}') as Command;
    await expect(log.append(poisoned)).rejects.toSatisfy((error: unknown) =>
      isStoreError(error, "KEYRAFT_STORE_UNENCODABLE"),
    );
    expect(log.appliedIndex()).toBe(0);
    expect(machine.counters.size).toBe(0);
  });

  it("refuses appends after close, and close waits for pending appends", async () => {
    const dir = await freshDir();
    let db = await openDb(dir);
    const log = await openLog(db, newMachine());
    const pending = Array.from({ length: 20 }, () => log.append(add("a")));
    await log.close();
    await expect(log.append(add("a"))).rejects.toSatisfy((error: unknown) =>
      isStoreError(error, "KEYRAFT_STORE_CLOSED"),
    );
    expect(log.statistics().itemsWritten).toBe(20);
    await Promise.all(pending);
    await db.close();
    db = await openDb(dir);
    expect((await openLog(db, newMachine())).appliedIndex()).toBe(20);
  });
});
