// key-table.ts against the Map it replaces: every operation of a random sequence gives the same
// answers as a Map of records with a hash index, in the same order, while records move between
// arena chunks and slots are compacted; a capture keeps reading its moment.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  keyHasConnections,
  keyHasIdentity,
  keyHasRefill,
  KeyTable,
  LimitsOfSnapshot,
} from "../src/keystate/key-table.js";
import type { KeyRecord } from "../src/keystate/types.js";

const strings = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.constantFrom("", "é", "日本", "\ud800", "a\udc00b", "😀", "__proto__"),
);

function record(id: string, hash: string, over: Partial<KeyRecord> = {}): KeyRecord {
  return {
    id,
    apiId: "api_1",
    hash,
    start: "st",
    name: null,
    ownerId: null,
    identityId: null,
    meta: null,
    createdAtMs: 1,
    updatedAtMs: null,
    expiresAtMs: null,
    enabled: true,
    environment: null,
    remaining: null,
    refill: null,
    ratelimits: [],
    roleIds: [],
    permissionIds: [],
    ...over,
  };
}

const recordArb = (id: string, hash: string) =>
  fc
    .record({
      apiId: fc.constantFrom("api_1", "api_2", "api_root"),
      start: strings,
      name: fc.option(strings),
      ownerId: fc.option(strings),
      identityId: fc.option(fc.constantFrom("id_1", "id_2")),
      meta: fc.option(fc.dictionary(strings, fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 })),
      createdAtMs: fc.integer({ min: 0, max: 2 ** 45 }),
      updatedAtMs: fc.option(fc.integer({ min: 0, max: 2 ** 45 })),
      expiresAtMs: fc.option(fc.integer({ min: 0, max: 2 ** 45 })),
      enabled: fc.boolean(),
      environment: fc.option(strings),
      remaining: fc.option(fc.integer({ min: 0, max: 2 ** 50 })),
      refill: fc.option(
        fc.record({
          interval: fc.constantFrom("daily" as const, "monthly" as const),
          amount: fc.integer({ min: 0, max: 1000 }),
          refillDay: fc.option(fc.integer({ min: 1, max: 31 })),
          lastRefillAtMs: fc.integer({ min: 0, max: 2 ** 45 }),
        }),
      ),
      ratelimits: fc.array(
        fc.record({
          name: strings,
          limit: fc.integer({ min: 0, max: 1000 }),
          durationMs: fc.integer({ min: 1, max: 10 ** 6 }),
          autoApply: fc.boolean(),
        }),
        { maxLength: 2 },
      ),
      roleIds: fc.array(strings, { maxLength: 3 }),
      permissionIds: fc.array(strings, { maxLength: 3 }),
      pendingMigrationId: fc.option(strings, { nil: undefined }),
      // A large meta now and then, so records leave the common chunk size.
      padding: fc.nat({ max: 20 }),
    })
    .map(({ pendingMigrationId, padding, meta, ...fields }) => {
      const big = padding === 20 ? { pad: "x".repeat(300_000) } : null;
      // meta is JSON text by origin, where -0 and 0 are one value (the table keeps meta as JSON).
      const json = meta === null ? null : (JSON.parse(JSON.stringify(meta)) as KeyRecord["meta"]);
      const value = record(id, hash, { ...fields, meta: big ?? json });
      if (pendingMigrationId !== undefined) value.pendingMigrationId = pendingMigrationId;
      return value;
    });

type Op =
  | { op: "set"; id: number; hash: number; seed: number }
  | { op: "delete"; id: number }
  | { op: "capture" }
  | { op: "remaining"; id: number; value: number; cached: boolean };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      op: fc.constant("set" as const),
      id: fc.nat({ max: 60 }),
      hash: fc.nat({ max: 80 }),
      seed: fc.nat(),
    }),
  },
  { weight: 3, arbitrary: fc.record({ op: fc.constant("delete" as const), id: fc.nat({ max: 60 }) }) },
  { weight: 1, arbitrary: fc.constant({ op: "capture" as const }) },
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant("remaining" as const),
      id: fc.nat({ max: 60 }),
      value: fc.integer({ min: 0, max: 2 ** 50 }),
      cached: fc.boolean(),
    }),
  },
);

describe("KeyTable", () => {
  it("answers as a Map with a hash index, in the Map's order; captures keep their moment", () => {
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 300 }), fc.integer(), (ops, seed) => {
        const table = new KeyTable();
        const model = new Map<string, KeyRecord>();
        const captures: { read: () => KeyRecord[]; then: KeyRecord[] }[] = [];
        for (const step of ops) {
          if (step.op === "set") {
            const id = `key_${step.id}`;
            const hash = `h${step.hash}`;
            const holder = [...model.values()].find((key) => key.hash === hash);
            if (holder !== undefined && holder.id !== id) continue; // hashes are unique
            const value = fc.sample(recordArb(id, hash), { numRuns: 1, seed: seed ^ step.seed })[0]!;
            table.set(id, value);
            model.set(id, value);
          } else if (step.op === "remaining") {
            // The credit ledger's write: the balance alone, from the bytes (or a cached decode).
            const id = `key_${step.id}`;
            const held = model.get(id);
            if (step.cached) table.get(id);
            expect(table.remainingOf(id)).toBe(held === undefined ? undefined : held.remaining);
            if (held === undefined || held.remaining === null) continue;
            table.setRemaining(id, step.value);
            model.set(id, { ...held, remaining: step.value });
            expect(table.get(id)).toEqual(model.get(id));
          } else if (step.op === "delete") {
            expect(table.delete(`key_${step.id}`)).toBe(model.delete(`key_${step.id}`));
          } else {
            const capture = table.capture();
            captures.push({ read: () => capture.slice(0), then: structuredClone([...model.values()]) });
          }
          expect(table.size).toBe(model.size);
        }
        expect([...table.values()]).toEqual([...model.values()]);
        expect([...table.keys()]).toEqual([...model.keys()]);
        for (const [id, value] of model) {
          expect(table.remainingOf(id)).toBe(value.remaining);
          expect(table.get(id)).toEqual(value);
          expect(table.idOfHash(value.hash)).toBe(id);
        }
        for (let i = 0; i <= 60; i++) if (!model.has(`key_${i}`)) expect(table.get(`key_${i}`)).toBeUndefined();
        for (const apiId of ["api_1", "api_2", "api_root"]) {
          const ids = [...model.values()].filter((key) => key.apiId === apiId).map((key) => key.id);
          expect(table.idsOfApi(apiId)).toEqual(ids);
          expect(table.countOfApi(apiId)).toBe(ids.length);
        }
        const flagged = (flag: number, has: (key: KeyRecord) => boolean) =>
          expect([...table.valuesWith(flag)]).toEqual([...model.values()].filter(has));
        flagged(keyHasConnections, (key) => key.roleIds.length + key.permissionIds.length > 0);
        flagged(keyHasIdentity, (key) => key.identityId !== null);
        flagged(keyHasRefill, (key) => key.refill !== null);
        for (const capture of captures) expect(capture.read()).toEqual(capture.then);
        // The table's bytes load into another table (a snapshot of this release) as the same map.
        const capture = table.capture();
        const loaded = new KeyTable();
        const limits = new LimitsOfSnapshot(capture.limits);
        for (let start = 0; start < capture.length; start += 7)
          loaded.loadEncoded(capture.encodedSlice(start, start + 7), limits);
        expect([...loaded.values()]).toEqual([...model.values()]);
        for (const value of model.values()) expect(loaded.idOfHash(value.hash)).toBe(value.id);
      }),
      { numRuns: 150 },
    );
  });

  it("moves records out of mostly dead chunks and compacts deleted slots, keeping order and answers", () => {
    const table = new KeyTable();
    const meta = { text: "m".repeat(200) };
    const count = 40_000;
    for (let i = 0; i < count; i++) table.set(`key_${i}`, record(`key_${i}`, `hash_${i}`, { meta }));
    const full = table.arenaByteLength;
    const early = table.capture();
    // Delete nine of ten, then rewrite the rest: dead chunks are let go or evacuated.
    for (let i = 0; i < count; i++) if (i % 10 !== 0) table.delete(`key_${i}`);
    for (let i = 0; i < count; i += 10) table.set(`key_${i}`, record(`key_${i}`, `new_${i}`, { meta, name: "n" }));
    expect(table.size).toBe(count / 10);
    expect(table.arenaByteLength).toBeLessThan(full / 2);
    // New keys after the holes: the compaction of slots keeps the order.
    for (let i = count; i < count + 5000; i++) table.set(`key_${i}`, record(`key_${i}`, `hash_${i}`));
    const ids = [...table.keys()];
    const expected = [
      ...Array.from({ length: count / 10 }, (_, i) => `key_${i * 10}`),
      ...Array.from({ length: 5000 }, (_, i) => `key_${count + i}`),
    ];
    expect(ids).toEqual(expected);
    expect(table.idOfHash("hash_10")).toBeUndefined();
    expect(table.idOfHash("new_10")).toBe("key_10");
    expect(table.get("key_10")?.name).toBe("n");
    // The capture taken before still reads every record of its moment.
    expect(early.length).toBe(count);
    expect(early.at(count - 1)).toEqual(record(`key_${count - 1}`, `hash_${count - 1}`, { meta }));
  });

  it("answers the same while its indexes grow a step at a time, through sets, rehashes and deletes", () => {
    // Seeded: a failing seed is printed by the assertion's message and can be fixed here.
    for (const seed of [1, 2, 3]) {
      let state = seed;
      const next = (n: number) => {
        state = (Math.imul(state, 1103515245) + 12345) >>> 0;
        return state % n;
      };
      const table = new KeyTable();
      const model = new Map<string, KeyRecord>();
      const hashOf = new Map<string, string>();
      for (let step = 0; step < 30_000; step++) {
        const id = `key_${next(6000)}`;
        const op = next(10);
        if (op < 6) {
          const hash = op === 0 ? `h_${id}_${step}` : (hashOf.get(id) ?? `h_${id}`);
          table.set(id, record(id, hash, { name: `n${step}` }));
          model.set(id, record(id, hash, { name: `n${step}` }));
          hashOf.set(id, hash);
        } else if (op < 9) {
          expect(table.delete(id), `seed ${seed} step ${step}`).toBe(model.delete(id));
          hashOf.delete(id);
        } else {
          expect(table.get(id), `seed ${seed} step ${step}`).toEqual(model.get(id));
          const hash = hashOf.get(id);
          if (hash !== undefined) expect(table.idOfHash(hash), `seed ${seed} step ${step}`).toBe(id);
        }
      }
      expect([...table.values()]).toEqual([...model.values()]);
      for (const [id, hash] of hashOf) expect(table.idOfHash(hash)).toBe(id);
    }
  });

  it("does not file a key again that is deleted while the indexes grow (a slot in the next step's range)", () => {
    // The growth moves indexGrowthSlotsPerStep slots per change: a delete that took its step
    // before marking its slot dead had the step file that slot in the new indexes, and a later
    // lookup found a dead slot. Looks inside: the moment is a growth under way with the deleted
    // key's slot (keys inserted in order: key_i in slot i) among the next ones to move.
    type Growth = { oldIdIndex: Int32Array | null; growthDone: number; growthEnd: number };
    for (const size of [1_000, 5_000, 40_000]) {
      const table = new KeyTable();
      const growth = table as unknown as Growth;
      let count = 0;
      const add = () => {
        table.set(`key_${count}`, record(`key_${count}`, `hash_${count}`));
        count++;
      };
      while (count < size || growth.oldIdIndex === null || growth.growthEnd - growth.growthDone < 2) add();
      const gone = growth.growthDone + 1;
      const what = `${count} keys, key_${gone} deleted while slots ${growth.growthDone}..${growth.growthEnd} move`;
      expect(table.delete(`key_${gone}`), what).toBe(true);
      while (growth.oldIdIndex !== null) add();
      expect(table.get(`key_${gone}`), what).toBeUndefined();
      expect(table.hasHash(`hash_${gone}`), what).toBe(false);
      table.set(`key_${gone}`, record(`key_${gone}`, `hash_${gone}`));
      expect(table.size, what).toBe(count);
      expect(table.idOfHash(`hash_${gone}`), what).toBe(`key_${gone}`);
    }
  });

  it("refuses an encoded part that repeats a key id or a hash", () => {
    const table = new KeyTable();
    table.set("key_1", record("key_1", "h1"));
    table.set("key_2", record("key_2", "h2"));
    const capture = table.capture();
    const limits = new LimitsOfSnapshot(capture.limits);
    const target = new KeyTable();
    target.loadEncoded(capture.encodedSlice(0, 1), limits);
    expect(() => target.loadEncoded(capture.encodedSlice(0, 1), limits)).toThrow(/key id stored twice/);
    const other = new KeyTable();
    other.set("key_9", record("key_9", "h2"));
    expect(() => other.loadEncoded(capture.encodedSlice(1, 2), limits)).toThrow(/hash held by two keys/);
  });

  it("refuses a second key with a hash another key holds, and a record stored under another id", () => {
    const table = new KeyTable();
    table.set("key_1", record("key_1", "h"));
    expect(() => table.set("key_2", record("key_2", "h"))).toThrow(/hash held by two keys/);
    table.set("key_2", record("key_2", "g"));
    expect(() => table.set("key_2", record("key_2", "h"))).toThrow(/hash held by two keys/);
    expect(() => table.set("key_3", record("key_4", "x"))).toThrow(/another id/);
    expect(table.idOfHash("g")).toBe("key_2");
  });
});
