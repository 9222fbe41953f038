// Unit tests of the credit-lease parts of a node (src/counters/credits): the journal on disk,
// the spend reservations, the outbox, the leader's expiry and refill timers, the config, and the
// spender wired to an in-process key state (the "log" applies each proposal at once).
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { pino } from "pino";
import { afterEach, describe, expect, it } from "vitest";
import {
  applyCommand,
  createKeyState,
  creditBatchCommandsMax,
  keyStateMachine,
  LeaseHolder,
  ownerOf,
  rankNodes,
  replayHolderJournal,
  type CommandOutcome,
  type HolderJournalRecord,
  type KeyCommand,
} from "@keyraft/core";
import { parseCreditLeaseConfig, holderOptions } from "../src/counters/credits/config.js";
import { ObservedKeyMachine } from "../src/counters/credits/credit-events.js";
import { JournalBehindLedgerError, startCreditLeases } from "../src/counters/credits/credit-leases.js";
import { ForwardedSpendUnknown, type ForwardedSpendReply } from "../src/counters/credits/forward.js";
import { V1Error } from "../src/errors.js";
import { LeaseJournalStore } from "../src/counters/credits/journal-store.js";
import { LeaseExpiryDriver } from "../src/counters/credits/lease-expiry.js";
import { LeaseSpender } from "../src/counters/credits/lease-spender.js";
import { LeaseOutbox, outboxInFlightMax } from "../src/counters/credits/outbox.js";
import { dueRefillBatches, RefillScheduler } from "../src/counters/credits/refill-scheduler.js";
import { SpendReservations } from "../src/counters/credits/spend-reservations.js";
import {
  openStoreDb,
  storeSublevel,
  syncedBatchWrite,
  type StoreDb,
  type StoreOp,
  type SyncedBatchWrite,
} from "../src/store/level-db.js";

const dirs: string[] = [];
const dbs: StoreDb[] = [];
afterEach(async () => {
  for (const db of dbs.splice(0)) await db.close().catch(() => undefined);
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});
async function tempDb(): Promise<{ dir: string; db: StoreDb }> {
  const dir = await mkdtemp(join(tmpdir(), "keyraft-credits-"));
  dirs.push(dir);
  const db = await openStoreDb(dir);
  dbs.push(db);
  return { dir, db };
}
const fatal = (error: Error) => {
  throw error;
};
const tick = () => new Promise((resolve) => setImmediate(resolve));
const startMs = Date.UTC(2026, 0, 1, 12);

function createKey(keyId: string, remaining: number, refill: number | null = null): KeyCommand {
  return {
    type: "createKey",
    keyId,
    apiId: "api_a",
    hash: `h_${keyId}`,
    start: "s",
    name: null,
    ownerId: null,
    identity: null,
    meta: null,
    expiresAtMs: null,
    remaining,
    refill: refill === null ? null : { interval: "daily", amount: refill, refillDay: null },
    ratelimit: null,
    enabled: true,
    environment: null,
    permissions: [],
    roles: [],
    allowCreatePermissions: false,
    allowCreateRoles: false,
    nowMs: startMs,
  };
}

describe("LeaseJournalStore", () => {
  it("replays what was appended after a reopen, drops settled leases and keeps the numbering", async () => {
    const { dir, db } = await tempDb();
    const { store, records } = await LeaseJournalStore.open(db, { onFatal: fatal });
    expect(records).toEqual([]);
    await store.append([
      { t: "request", keyId: "k", seq: 1 },
      { t: "grant", keyId: "k", seq: 1, granted: 10, epoch: 0 },
    ]);
    await store.append([
      { t: "spend", keyId: "k", seq: 1, cost: 3 },
      { t: "request", keyId: "k", seq: 2 },
    ]);
    await store.append([
      { t: "close", keyId: "k", seq: 2 },
      { t: "settled", keyId: "k", seq: 2 },
    ]);
    await store.append([
      { t: "request", keyId: "j", seq: 3 },
      { t: "close", keyId: "j", seq: 3 },
      { t: "settled", keyId: "j", seq: 3 },
    ]);
    expect(store.leasesOnDisk()).toBe(1);
    await store.close();
    await db.close();
    const reopened = await openStoreDb(dir);
    dbs.push(reopened);
    const again = await LeaseJournalStore.open(reopened, { onFatal: fatal });
    const { leases, seqMax } = replayHolderJournal(again.records);
    expect(seqMax).toBe(3);
    expect(leases.get(1)).toMatchObject({ keyId: "k", granted: 10, spent: 3, closed: false, settled: false });
    const restored = LeaseHolder.restore("n1", again.records);
    expect(restored.holder.owedSettles()).toBe(1);
    expect(restored.journal).toEqual([{ t: "close", keyId: "k", seq: 1 }]);
    await again.store.close();
  });

  it("packs the records of many leases appended while a write is on its way into one put", async () => {
    const { db } = await tempDb();
    const batches: StoreOp[][] = [];
    const real = syncedBatchWrite(db);
    const { store } = await LeaseJournalStore.open(db, {
      onFatal: fatal,
      write: (ops) => {
        batches.push([...ops]);
        return real(ops);
      },
    });
    batches.length = 0;
    // 200 keys each journal a request and a grant in the same turn of the event loop.
    const appends = Array.from({ length: 200 }, (_, i) =>
      store.append([
        { t: "request", keyId: `k${i}`, seq: i + 1 },
        { t: "grant", keyId: `k${i}`, seq: i + 1, granted: 10, epoch: 0 },
      ]),
    );
    // Then each spends, while the first pack is being written: they share the next one.
    await tick();
    const spends = Array.from({ length: 200 }, (_, i) =>
      store.append([{ t: "spend", keyId: `k${i}`, seq: i + 1, cost: 3 }]),
    );
    await Promise.all([...appends, ...spends]);
    const puts = batches.flat().filter((op) => op.type === "put");
    // Two packs and the numbering floor, in two batches (one fsync each), for 600 records.
    expect(batches).toHaveLength(2);
    expect(puts.map((op) => op.key).filter((key) => key !== "seqmax")).toHaveLength(2);
    expect(store.leasesOnDisk()).toBe(200);
    expect(store.packsOnDisk()).toBe(2);
    await store.close();
  });

  it("records written ahead wait for company: an append, a hurry or a close writes them at once, in order", async () => {
    const { dir, db } = await tempDb();
    const batches: StoreOp[][] = [];
    const real = syncedBatchWrite(db);
    // A delay no test run reaches: what is written ahead waits until something else writes it.
    const { store } = await LeaseJournalStore.open(db, {
      onFatal: fatal,
      aheadDelayMs: 600_000,
      write: (ops) => {
        batches.push([...ops]);
        return real(ops);
      },
    });
    await store.append([
      { t: "request", keyId: "k", seq: 1 },
      { t: "grant", keyId: "k", seq: 1, granted: 100, epoch: 0 },
    ]);
    batches.length = 0;
    // Alone, a record written ahead waits.
    let aheadDone = false;
    const ahead = store.appendAhead([{ t: "spend", keyId: "k", seq: 1, cost: 24 }]).then(() => (aheadDone = true));
    for (let i = 0; i < 5; i++) await tick();
    expect(batches).toHaveLength(0);
    expect(aheadDone).toBe(false);
    // An append someone waits for takes it along: one batch, the ahead record first.
    await store.append([{ t: "spend", keyId: "k", seq: 1, cost: 1 }]);
    await ahead;
    expect(batches).toHaveLength(1);
    // A hurry writes what waits for company without the delay.
    const hurried = store.appendAhead([{ t: "spend", keyId: "k", seq: 1, cost: 2 }]);
    store.hurry();
    await hurried;
    expect(batches).toHaveLength(2);
    // A close writes what is still waiting.
    const last = store.appendAhead([{ t: "spend", keyId: "k", seq: 1, cost: 3 }]);
    await store.close();
    await last;
    expect(batches).toHaveLength(3);
    await db.close();
    const reopened = await openStoreDb(dir);
    dbs.push(reopened);
    // Alone, with the default delay, it is written after it.
    const again = await LeaseJournalStore.open(reopened, { onFatal: fatal });
    expect(replayHolderJournal(again.records).leases.get(1)).toMatchObject({ granted: 100, spent: 30 });
    await again.store.appendAhead([{ t: "spend", keyId: "k", seq: 1, cost: 4 }]);
    await again.store.close();
  });

  it("deletes a pack once its leases are settled, and never brings a settled lease back from a pack kept by another", async () => {
    const { dir, db } = await tempDb();
    const { store } = await LeaseJournalStore.open(db, { onFatal: fatal });
    // One pack holds leases 1 and 2.
    await store.append([
      { t: "request", keyId: "a", seq: 1 },
      { t: "request", keyId: "b", seq: 2 },
      { t: "grant", keyId: "a", seq: 1, granted: 10, epoch: 0 },
      { t: "grant", keyId: "b", seq: 2, granted: 10, epoch: 0 },
    ]);
    // Lease 1 is settled; lease 2 keeps the pack (and lease 1's records in it): a guard is written.
    await store.append([
      { t: "close", keyId: "a", seq: 1 },
      { t: "settled", keyId: "a", seq: 1 },
    ]);
    expect(store.packsOnDisk()).toBe(2);
    await store.close();
    await db.close();
    const reopened = await openStoreDb(dir);
    dbs.push(reopened);
    const again = await LeaseJournalStore.open(reopened, { onFatal: fatal });
    const { leases } = replayHolderJournal(again.records);
    expect(leases.get(1)).toBeUndefined();
    expect(leases.get(2)).toMatchObject({ keyId: "b", granted: 10, closed: false });
    // Lease 2 settles too: every pack goes, only the numbering floor stays.
    await again.store.append([
      { t: "close", keyId: "b", seq: 2 },
      { t: "settled", keyId: "b", seq: 2 },
    ]);
    expect(again.store.packsOnDisk()).toBe(0);
    expect(again.store.leasesOnDisk()).toBe(0);
    await again.store.close();
    expect(await storeSublevel(reopened, "lease").keys().all()).toEqual(["seqmax"]);
  });

  it("keeps a guard until the last pack it guards is gone", async () => {
    const { db } = await tempDb();
    const { store } = await LeaseJournalStore.open(db, { onFatal: fatal });
    await store.append([
      { t: "request", keyId: "a", seq: 1 },
      { t: "request", keyId: "b", seq: 2 },
    ]);
    await store.append([{ t: "request", keyId: "c", seq: 3 }]);
    // Settling 1 writes a guard (pack 1 stays for lease 2); the guard holds lease 4 as well.
    await store.append([
      { t: "settled", keyId: "a", seq: 1 },
      { t: "request", keyId: "d", seq: 4 },
    ]);
    expect(store.packsOnDisk()).toBe(3);
    // Lease 4 settles: the guard still guards pack 1 (lease 2), so it stays, itself guarded now.
    await store.append([{ t: "settled", keyId: "d", seq: 4 }]);
    expect(store.packsOnDisk()).toBe(4);
    // Lease 2 settles: pack 1 goes, and with it both guards; pack 2 (lease 3) stays.
    await store.append([{ t: "settled", keyId: "b", seq: 2 }]);
    expect(store.packsOnDisk()).toBe(1);
    expect(store.leasesOnDisk()).toBe(1);
    await store.close();
  });

  it("reopens a journal whose settled leases left records in packs kept for others (their requests gone)", async () => {
    const { dir, db } = await tempDb();
    const { store } = await LeaseJournalStore.open(db, { onFatal: fatal });
    await store.append([{ t: "request", keyId: "a", seq: 1 }]); // pack 1: lease 1 only
    await store.append([
      { t: "grant", keyId: "a", seq: 1, granted: 10, epoch: 0 },
      { t: "request", keyId: "b", seq: 2 },
    ]); // pack 2: leases 1 and 2
    // Lease 1 settles: pack 1 goes (its request with it), pack 2 stays for lease 2, guarded.
    await store.append([{ t: "settled", keyId: "a", seq: 1 }]);
    await store.close();
    await db.close();
    const reopened = await openStoreDb(dir);
    dbs.push(reopened);
    const again = await LeaseJournalStore.open(reopened, { onFatal: fatal });
    const { leases, seqMax } = replayHolderJournal(again.records);
    expect([...leases.keys()]).toEqual([2]);
    expect(seqMax).toBe(2);
    await again.store.close();
  });

  it("refuses appends after close", async () => {
    const { db } = await tempDb();
    const { store } = await LeaseJournalStore.open(db, { onFatal: fatal });
    await store.close();
    await expect(store.append([{ t: "request", keyId: "k", seq: 1 }])).rejects.toThrow();
  });
});

describe("SpendReservations", () => {
  it("journals ahead: the journal covers every answer when it is given, never past the grant or a quarter lease beyond the answers", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 200 }),
        fc.array(fc.record({ cost: fc.integer({ min: 1, max: 9 }), durableWrites: fc.integer({ min: 0, max: 3 }) }), {
          maxLength: 100,
        }),
        async (granted, steps) => {
          const reservations = new SpendReservations();
          // Journal writes land in order: `writes` is the journal, `durableCount` of them are on disk.
          const writes: Array<{ cost: number; resolve(): void; durable: Promise<void> }> = [];
          let durableCount = 0;
          const queue = (records: readonly HolderJournalRecord[]): Promise<void> => {
            let resolve = () => undefined as void;
            const durable = new Promise<void>((r) => (resolve = r));
            let cost = 0;
            for (const record of records) if (record.t === "spend") cost += record.cost;
            writes.push({ cost, resolve, durable });
            return durable;
          };
          const durableSum = () => writes.slice(0, durableCount).reduce((sum, w) => sum + w.cost, 0);
          const journaledSum = () => writes.reduce((sum, w) => sum + w.cost, 0);
          const settle = async (count: number) => {
            for (let i = 0; i < count && durableCount < writes.length; i++) writes[durableCount++]!.resolve();
            await tick();
          };
          const grant = reservations.observe([{ t: "grant", keyId: "k", seq: 1, granted, epoch: 0 }]);
          grant.onQueued(queue(grant.records));
          const headroom = Math.ceil(granted / 4) - 1;
          let answered = 0;
          let ownWrites = 0;
          const checks: Array<Promise<void>> = [];
          for (const { cost, durableWrites } of steps) {
            if (answered + cost > granted) break; // the holder never spends past its grant
            answered += cost;
            const mustCover = answered;
            const cover = reservations.cover({ t: "spend", keyId: "k", seq: 1, cost });
            if (cover.type === "write") {
              ownWrites++;
              const durable = queue([cover.record]);
              cover.onQueued(durable);
              checks.push(durable.then(() => expect(durableSum()).toBeGreaterThanOrEqual(mustCover)));
            } else {
              if (cover.ahead !== null) cover.ahead.onQueued(queue([cover.ahead.record]));
              if (cover.type === "durable") expect(durableSum()).toBeGreaterThanOrEqual(mustCover);
              else checks.push(cover.durable.then(() => expect(durableSum()).toBeGreaterThanOrEqual(mustCover)));
            }
            expect(journaledSum()).toBeGreaterThanOrEqual(answered);
            expect(journaledSum()).toBeLessThanOrEqual(granted);
            // The crash forfeit: under a quarter lease.
            expect(journaledSum() - answered).toBeLessThanOrEqual(Math.max(0, headroom));
            await settle(durableWrites);
          }
          await settle(writes.length);
          await Promise.all(checks);
          // Spends of 1 credit never wait for a write of their own once a lease has room ahead.
          if (headroom >= 2 && steps.every((s) => s.cost === 1)) expect(ownWrites).toBe(0);
        },
      ),
    );
  });

  it("reserves a lease's first spends with its grant, not a lease closed at once", () => {
    const reservations = new SpendReservations();
    const out = reservations.observe([
      { t: "grant", keyId: "k", seq: 1, granted: 100, epoch: 0 },
      { t: "grant", keyId: "j", seq: 2, granted: 100, epoch: 0 },
      { t: "close", keyId: "j", seq: 2 },
    ]);
    expect(out.records).toEqual([
      { t: "grant", keyId: "k", seq: 1, granted: 100, epoch: 0 },
      { t: "spend", keyId: "k", seq: 1, cost: 24 },
      { t: "grant", keyId: "j", seq: 2, granted: 100, epoch: 0 },
      { t: "close", keyId: "j", seq: 2 },
    ]);
    // A grant of at most 4 credits reserves nothing ahead (its forfeit stays under a quarter lease).
    const small = reservations.observe([{ t: "grant", keyId: "s", seq: 3, granted: 4, epoch: 0 }]);
    expect(small.records).toEqual([{ t: "grant", keyId: "s", seq: 3, granted: 4, epoch: 0 }]);
  });

  it("waits for the grant's write, answers from a durable reservation, and writes spends of untracked leases one by one", async () => {
    const reservations = new SpendReservations();
    const grant = reservations.observe([{ t: "grant", keyId: "k", seq: 1, granted: 100, epoch: 0 }]);
    let release = () => undefined as void;
    const durable = new Promise<void>((resolve) => (release = resolve));
    grant.onQueued(durable);
    const first = reservations.cover({ t: "spend", keyId: "k", seq: 1, cost: 1 });
    expect(first.type === "pending" && first.durable).toBe(durable);
    release();
    await durable;
    await tick();
    expect(reservations.cover({ t: "spend", keyId: "k", seq: 1, cost: 1 })).toEqual({ type: "durable", ahead: null });
    reservations.observe([{ t: "close", keyId: "k", seq: 1 }]);
    const untracked = reservations.cover({ t: "spend", keyId: "k", seq: 1, cost: 2 });
    expect(untracked.type === "write" && untracked.record).toEqual({ t: "spend", keyId: "k", seq: 1, cost: 2 });
    expect(reservations.tracked()).toBe(0);
  });

  it("answers nothing more from a lease once a reservation write failed", async () => {
    const reservations = new SpendReservations();
    const grant = reservations.observe([{ t: "grant", keyId: "k", seq: 1, granted: 100, epoch: 0 }]);
    const failed = Promise.reject(new Error("disk full"));
    failed.catch(() => undefined);
    grant.onQueued(failed);
    await tick();
    const cover = reservations.cover({ t: "spend", keyId: "k", seq: 1, cost: 1 });
    expect(cover.type).toBe("pending");
    if (cover.type === "pending") await expect(cover.durable).rejects.toThrow("disk full");
  });
});

describe("LeaseOutbox", () => {
  it("proposes queued requests in creditBatch commands of bounded size, with the voters on grants", async () => {
    const proposed: KeyCommand[] = [];
    const outbox = new LeaseOutbox({
      propose: async (command) => {
        proposed.push(command);
        return { ok: true };
      },
      voters: () => ["n2", "n1"],
      onError: () => undefined,
    });
    const requests = Array.from({ length: creditBatchCommandsMax + 3 }, (_, i) => ({
      type: "grantCreditLease" as const,
      keyId: "k",
      nodeId: "n1",
      seq: i + 1,
      requested: 5,
    }));
    outbox.push(requests);
    await tick();
    await tick();
    expect(proposed.length).toBe(2);
    const batches = proposed.map((command) => (command.type === "creditBatch" ? command.commands : []));
    expect(batches.map((b) => b.length)).toEqual([creditBatchCommandsMax, 3]);
    expect(batches[0]?.[0]).toMatchObject({ seq: 1, voters: ["n1", "n2"] });
    expect(outbox.stats()).toMatchObject({ queued: 0, dropped: 0 });
  });

  it("keeps at most a few proposals in flight and survives failed proposals", async () => {
    let inFlight = 0;
    let most = 0;
    let errors = 0;
    const outbox = new LeaseOutbox({
      propose: async () => {
        inFlight++;
        most = Math.max(most, inFlight);
        await new Promise((resolve) => setTimeout(resolve, 5));
        inFlight--;
        throw new Error("no leader");
      },
      voters: () => ["n1"],
      onError: () => errors++,
    });
    for (let i = 0; i < 10; i++)
      outbox.push(
        Array.from({ length: creditBatchCommandsMax }, (_, j) => ({
          type: "settleCreditLease" as const,
          keyId: "k",
          nodeId: "n1",
          seq: i * 1000 + j + 1,
          spent: 0,
        })),
      );
    for (let i = 0; i < 50 && errors < 10; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(errors).toBe(10);
    expect(most).toBe(outboxInFlightMax);
  });
});

/** A one-node world: the key state is the log; proposals apply at once (after a turn). */
async function world(
  options: {
    leaseWaitMs?: number;
    propose?: (command: KeyCommand) => Promise<CommandOutcome>;
    voters?: string[];
    forward?: (owner: string, keyId: string, cost: number) => Promise<ForwardedSpendReply>;
    /** Wraps the journal's synced write (to hold writes back). */
    write?: (write: SyncedBatchWrite) => SyncedBatchWrite;
  } = {},
) {
  const { db } = await tempDb();
  const machine = new ObservedKeyMachine(keyStateMachine());
  machine.apply({ type: "createApi", apiId: "api_a", name: "a", nowMs: startMs });
  let mono = 0;
  const propose =
    options.propose ??
    (async (command: KeyCommand) => {
      await tick();
      return machine.apply(command);
    });
  const write = options.write === undefined ? syncedBatchWrite(db) : options.write(syncedBatchWrite(db));
  const { store: journal, records } = await LeaseJournalStore.open(db, { onFatal: fatal, write });
  const holder = LeaseHolder.restore(
    "n1",
    records,
    holderOptions({ leaseTtlMs: 2000, clockDriftMax: 0.01, leaseCredits: 10, leaseCreditsMax: 10 }),
  ).holder;
  const outbox = new LeaseOutbox({ propose, voters: () => options.voters ?? ["n1"], onError: () => undefined });
  const spender = new LeaseSpender({
    holder,
    journal,
    outbox,
    state: machine.state,
    monoNowMs: () => mono,
    leaseWaitMs: options.leaseWaitMs ?? 200,
    pollIntervalMs: 10_000,
    onError: () => undefined,
    ...(options.forward === undefined ? {} : { forward: options.forward }),
    ownerOf: (keyId: string) => ownerOf(keyId, options.voters ?? ["n1"]),
  });
  machine.listen({
    onLease: (outcome) => spender.onLease(outcome),
    onEpoch: (keyId, epoch) => spender.onEpoch(keyId, epoch),
    onRestore: () => undefined,
  });
  return { machine, spender, holder, journal, advance: (ms: number) => (mono += ms) };
}

async function untilLeased(w: { holder: LeaseHolder }, keyId: string): Promise<void> {
  for (let i = 0; i < 100 && w.holder.leaseRemaining(keyId, 0) === 0; i++)
    await new Promise((resolve) => setTimeout(resolve, 2));
  expect(w.holder.leaseRemaining(keyId, 0)).toBeGreaterThan(0);
}

describe("LeaseSpender", () => {
  it("spends from a lease it asks for, exactly the key's credits in all, and the replica agrees once settled", async () => {
    const w = await world();
    w.machine.apply(createKey("k1", 25));
    let admitted = 0;
    let fellBack = 0;
    const answers = await Promise.all(Array.from({ length: 40 }, () => w.spender.spend("k1", 1)));
    for (const answer of answers) {
      if (answer === null) fellBack++;
      else admitted++;
    }
    // Fallbacks go to the log; apply them as the route would.
    let logAdmitted = 0;
    for (let i = 0; i < fellBack; i++)
      if (w.machine.apply({ type: "spendCredits", keyId: "k1", cost: 1, nowMs: startMs }).ok) logAdmitted++;
    expect(admitted).toBeGreaterThan(0);
    expect(admitted + logAdmitted).toBe(25);
    for (const answer of answers) if (answer !== null) expect(answer).toMatchObject({ t: "admitted" });
    // Past the ttl the leases close and settle: the replica shows exactly what is left.
    w.advance(5000);
    w.spender.poll();
    for (let i = 0; i < 20 && w.holder.owedSettles() > 0; i++) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(w.holder.owedSettles()).toBe(0);
    expect(w.machine.state.keys.get("k1")?.remaining).toBe(0);
    expect(w.machine.state.creditLedgers.get("k1")?.leases).toEqual([]);
    await w.journal.close();
  });

  /** A journal whose writes can be held, and a wait until none is in flight (the grant and its reservation on disk). */
  async function heldWorld() {
    let hold = false;
    let inFlight = 0;
    const held: Array<() => void> = [];
    const w = await world({
      write: (write) => async (ops) => {
        inFlight++;
        try {
          if (hold) await new Promise<void>((resolve) => held.push(resolve));
          return await write(ops);
        } finally {
          inFlight--;
        }
      },
    });
    return {
      w,
      hold: () => (hold = true),
      release: () => {
        hold = false;
        for (const release of held.splice(0)) release();
      },
      // Bounded by time, not by loop turns: an fsync on a loaded machine outlasts 500 of them (a
      // clean-clone run failed so).
      written: async () => {
        const deadlineMs = performance.now() + 5_000;
        while (inFlight > 0 && performance.now() < deadlineMs) await new Promise((resolve) => setTimeout(resolve, 1));
        expect(inFlight).toBe(0);
      },
    };
  }

  it("answers a spend only once its journal record is durable (rule 1)", async () => {
    const { w, hold, release, written } = await heldWorld();
    w.machine.apply(createKey("k1", 100));
    expect(await w.spender.spend("k1", 1)).toBeNull();
    await untilLeased(w, "k1");
    await written();
    hold();
    // The grant's write reserved 2 credits (a quarter of the 10 granted, less one): answered at once.
    expect(await w.spender.spend("k1", 1)).toEqual({ t: "admitted", remaining: 99 });
    expect(await w.spender.spend("k1", 1)).toEqual({ t: "admitted", remaining: 98 });
    // Past what is on disk: the reservation ahead, asked for by the spend before, is still being written.
    let answered = false;
    const spend = w.spender.spend("k1", 1).then((answer) => {
      answered = true;
      return answer;
    });
    for (let i = 0; i < 20; i++) await tick();
    expect(answered).toBe(false);
    release();
    expect(await spend).toEqual({ t: "admitted", remaining: 97 });
    await w.journal.close();
  });

  it("spendNow answers at once (no promise) a spend its journal already covers, and waits otherwise", async () => {
    const { w, hold, release, written } = await heldWorld();
    w.machine.apply(createKey("k1", 100));
    expect(await w.spender.spendNow("k1", 1)).toBeNull(); // no lease yet: the log decides
    await untilLeased(w, "k1");
    // Before the grant's write (and the reservation in it) is on disk: a promise.
    hold();
    const early = w.spender.spendNow("k1", 1);
    if (early instanceof Promise) {
      release();
      expect(await early).toMatchObject({ t: "admitted" });
    } else expect(early).toEqual({ t: "admitted", remaining: 99 }); // the grant's write had landed already
    await written();
    hold();
    // Inside the durable reservation: a plain answer; the next reservation is written meanwhile.
    expect(w.spender.spendNow("k1", 1)).toEqual({ t: "admitted", remaining: 98 });
    // Past it, with the next one in flight: a promise (never answered before it is on disk).
    const late = w.spender.spendNow("k1", 1);
    expect(late).toBeInstanceOf(Promise);
    release();
    expect(await late).toEqual({ t: "admitted", remaining: 97 });
    await written();
    expect(w.spender.spendNow("k1", 1)).toEqual({ t: "admitted", remaining: 96 });
    await w.journal.close();
  });

  it("falls back to the log when no lease comes within the wait", async () => {
    const w = await world({ leaseWaitMs: 20, propose: () => new Promise<CommandOutcome>(() => undefined) });
    w.machine.apply(createKey("k1", 25));
    expect(await w.spender.spend("k1", 1)).toBeNull();
    expect(w.spender.status()).toMatchObject({ fallback: 1, leased: 0 });
    await w.journal.close();
  });

  it("a reset stops the old lease; a graceful drain settles every lease with its exact spends", async () => {
    const w = await world();
    w.machine.apply(createKey("k1", 100));
    // First use: the verification that asks for the key's first lease spends on the log (null);
    // the ones after it spend from the lease.
    expect(await w.spender.spend("k1", 1)).toBeNull();
    await untilLeased(w, "k1");
    expect(await w.spender.spend("k1", 2)).toEqual({ t: "admitted", remaining: 98 });
    expect(w.holder.heldLeases()).toBeGreaterThan(0);
    // A reset: the old lease stops at once and returns nothing; the next spend takes a new lease.
    w.machine.apply({ type: "updateRemaining", keyId: "k1", op: "set", value: 50, nowMs: startMs });
    expect(w.holder.leaseRemaining("k1", 0)).toBe(0);
    expect(await w.spender.spend("k1", 5)).toBeNull();
    await untilLeased(w, "k1");
    expect(await w.spender.spend("k1", 5)).toEqual({ t: "admitted", remaining: 45 });
    await w.spender.drain(1000);
    expect(w.holder.owedSettles()).toBe(0);
    expect(w.machine.state.creditLedgers.get("k1")?.leases).toEqual([]);
    expect(w.machine.state.keys.get("k1")?.remaining).toBe(45);
    expect(w.machine.state.creditLedgers.get("k1")).toMatchObject({
      epoch: 1,
      epochBalance: 50,
      epochSpent: 5,
      unleased: 45,
    });
    await w.journal.close();
  });
});

describe("LeaseSpender forwarding a low key to its owner", () => {
  // A key id whose owner among [n1, n2] is n2, so n1 (this holder) is refused low-not-owner.
  const keyId = Array.from({ length: 100 }, (_, i) => `k${i}`).find((id) => rankNodes(id, ["n1", "n2"])[0] === "n2")!;

  it("asks the owner, answers its outcome, and spends on the log when the owner cannot be asked", async () => {
    const asked: string[] = [];
    let reply: ForwardedSpendReply | Error = { t: "admitted", remaining: 7 };
    const w = await world({
      voters: ["n1", "n2"],
      forward: async (owner, key, cost) => {
        asked.push(`${owner}:${key}:${cost}`);
        if (reply instanceof Error) throw reply;
        return reply;
      },
    });
    w.machine.apply(createKey(keyId, 20)); // at or below the low mark: leases for the owner only
    // The first spend waits for its lease request, which is refused (low-not-owner, owner n2): it asks n2.
    expect(await w.spender.spend(keyId, 2)).toEqual({ t: "admitted", remaining: 7 });
    expect(await w.spender.spend(keyId, 2)).toEqual({ t: "admitted", remaining: 7 });
    reply = { t: "exceeded", remaining: 1 };
    expect(await w.spender.spend(keyId, 3)).toEqual({ t: "exceeded", remaining: 1 });
    expect(asked).toEqual([`n2:${keyId}:2`, `n2:${keyId}:2`, `n2:${keyId}:3`]);
    reply = new Error("no connection");
    expect(await w.spender.spend(keyId, 1)).toBeNull();
    // A spend forwarded to this node is never forwarded again.
    expect(await w.spender.spend(keyId, 1, { forwarded: true })).toBeNull();
    expect(asked.length).toBe(4);
    await w.journal.close();
  });
});

describe("LeaseSpender: a forwarded spend whose answer is lost", () => {
  const keyId = Array.from({ length: 100 }, (_, i) => `k${i}`).find((id) => rankNodes(id, ["n1", "n2"])[0] === "n2")!;

  it("is not spent again on the log (503 instead); one that certainly did not reach the owner is", async () => {
    let reply: ForwardedSpendReply | Error = new ForwardedSpendUnknown("n2", "no answer before the deadline");
    const logSpends: KeyCommand[] = [];
    let machine: ObservedKeyMachine | null = null;
    const w = await world({
      voters: ["n1", "n2"],
      propose: async (command) => {
        if (command.type === "spendCredits") logSpends.push(command);
        return machine!.apply(command);
      },
      forward: async () => {
        if (reply instanceof Error) throw reply;
        return reply;
      },
    });
    machine = w.machine;
    w.machine.apply(createKey(keyId, 20)); // low: n2 owns the last credits
    const lost = await w.spender.spend(keyId, 2).then(
      () => null,
      (error: unknown) => error,
    );
    expect(lost).toBeInstanceOf(V1Error);
    expect((lost as V1Error).statusCode).toBe(503);
    expect(logSpends).toEqual([]);
    // Certainly not sent (no connection): the asker spends on the log itself, once.
    reply = { t: "undecided", message: "no open connection to n2" };
    expect(await w.spender.spend(keyId, 2)).toBeNull();
    await w.journal.close();
  });
});

describe("LeaseExpiryDriver", () => {
  it("as leader, proposes expiry only after ttl * (1 + drift) + margin of its clock since the grant was applied", async () => {
    const state = createKeyState();
    applyCommand(state, { type: "createApi", apiId: "api_a", name: "a", nowMs: startMs });
    applyCommand(state, createKey("k1", 100));
    const granted = applyCommand(state, {
      type: "grantCreditLease",
      keyId: "k1",
      nodeId: "n2",
      seq: 1,
      requested: 10,
      voters: ["n1", "n2"],
    });
    let leader = false;
    let mono = 0;
    const proposed: KeyCommand[] = [];
    const driver = new LeaseExpiryDriver({
      ttlMs: 1000,
      driftMax: 0.1,
      marginMs: 50,
      state,
      isLeader: () => leader,
      monoNowMs: () => mono,
      onError: () => undefined,
      propose: async (command) => {
        proposed.push(command);
        return applyCommand(state, command);
      },
    });
    driver.tick();
    expect(driver.watched()).toBe(0);
    leader = true;
    driver.tick(); // became leader: watches the open lease from now
    expect(driver.watched()).toBe(1);
    mono = 1149;
    driver.tick();
    expect(proposed).toEqual([]);
    mono = 1150;
    driver.tick();
    expect(proposed).toEqual([
      { type: "creditBatch", commands: [{ type: "expireCreditLease", keyId: "k1", nodeId: "n2", seq: 1 }] },
    ]);
    await tick();
    expect(state.creditLedgers.get("k1")?.leases[0]?.state).toBe("expired");
    if (granted.ok && granted.lease !== undefined)
      driver.onLease({ type: "expired", keyId: "k1", nodeId: "n2", seq: 1 });
    expect(driver.watched()).toBe(0);
    leader = false;
    driver.tick();
  });
});

describe("refills", () => {
  it("lists the keys whose 00:00 UTC refill is due and proposes them once per day as leader", async () => {
    const state = createKeyState();
    applyCommand(state, { type: "createApi", apiId: "api_a", name: "a", nowMs: startMs });
    applyCommand(state, createKey("k1", 10, 50));
    applyCommand(state, createKey("k2", 10));
    expect(dueRefillBatches(state, startMs + 1000)).toEqual([]);
    const nextDay = Date.UTC(2026, 0, 2, 0, 0, 1);
    expect(dueRefillBatches(state, nextDay)).toEqual([["k1"]]);
    const proposed: KeyCommand[] = [];
    const scheduler = new RefillScheduler({
      state,
      isLeader: () => true,
      nowMs: () => nextDay,
      onError: () => undefined,
      propose: async (command) => {
        proposed.push(command);
        return applyCommand(state, command);
      },
    });
    scheduler.tick();
    await tick();
    await tick();
    scheduler.tick();
    await tick();
    expect(proposed).toEqual([{ type: "refillCredits", keyIds: ["k1"], nowMs: nextDay }]);
    expect(state.keys.get("k1")?.remaining).toBe(50);
    expect(dueRefillBatches(state, nextDay)).toEqual([]);
  });

  it("a key made unlimited with a refill is refilled too: its credits become the refill's amount", async () => {
    const state = createKeyState();
    applyCommand(state, { type: "createApi", apiId: "api_a", name: "a", nowMs: startMs });
    applyCommand(state, createKey("k1", 10));
    const refill = { interval: "daily", amount: 40, refillDay: null } as const;
    expect(applyCommand(state, { type: "updateKey", keyId: "k1", nowMs: startMs, remaining: null, refill }).ok).toBe(
      true,
    );
    expect(dueRefillBatches(state, startMs + 1000)).toEqual([]);
    const nextDay = Date.UTC(2026, 0, 2, 0, 0, 1);
    expect(dueRefillBatches(state, nextDay)).toEqual([["k1"]]);
    const scheduler = new RefillScheduler({
      state,
      isLeader: () => true,
      nowMs: () => nextDay,
      onError: () => undefined,
      propose: async (command) => applyCommand(state, command),
    });
    scheduler.tick();
    await tick();
    await tick();
    expect(state.keys.get("k1")?.remaining).toBe(40);
    expect(dueRefillBatches(state, nextDay)).toEqual([]);
  });
});

describe("credit lease config", () => {
  it("reads the knobs and names each invalid one", () => {
    const errors: string[] = [];
    expect(parseCreditLeaseConfig({}, errors)).toEqual({
      leaseTtlMs: 10000,
      clockDriftMax: 0.01,
      leaseCredits: 100,
      leaseCreditsMax: 1600,
    });
    expect(
      parseCreditLeaseConfig(
        { KEYRAFT_CREDIT_LEASE_TTL_MS: "750", KEYRAFT_CLOCK_DRIFT_MAX: "0", KEYRAFT_CREDIT_LEASE_CREDITS: "5" },
        errors,
      ),
    ).toEqual({ leaseTtlMs: 750, clockDriftMax: 0, leaseCredits: 5, leaseCreditsMax: 80 });
    expect(
      parseCreditLeaseConfig({ KEYRAFT_CREDIT_LEASE_CREDITS: "50", KEYRAFT_CREDIT_LEASE_CREDITS_MAX: "50" }, errors),
    ).toMatchObject({ leaseCredits: 50, leaseCreditsMax: 50 });
    expect(errors).toEqual([]);
    parseCreditLeaseConfig(
      {
        KEYRAFT_CREDIT_LEASE_TTL_MS: "10",
        KEYRAFT_CLOCK_DRIFT_MAX: "0.5",
        KEYRAFT_CREDIT_LEASE_CREDITS: "1.5",
        KEYRAFT_CREDIT_LEASE_CREDITS_MAX: "lots",
      },
      errors,
    );
    expect(errors.length).toBe(4);
    for (const name of [
      "KEYRAFT_CREDIT_LEASE_TTL_MS",
      "KEYRAFT_CLOCK_DRIFT_MAX",
      "KEYRAFT_CREDIT_LEASE_CREDITS",
      "KEYRAFT_CREDIT_LEASE_CREDITS_MAX",
    ])
      expect(errors.join("\n")).toContain(name);
    const below: string[] = [];
    parseCreditLeaseConfig({ KEYRAFT_CREDIT_LEASE_CREDITS: "50", KEYRAFT_CREDIT_LEASE_CREDITS_MAX: "49" }, below);
    expect(below).toEqual([expect.stringContaining("KEYRAFT_CREDIT_LEASE_CREDITS_MAX=49 is invalid")]);
    const options = holderOptions({ leaseTtlMs: 400, clockDriftMax: 0.01, leaseCredits: 7, leaseCreditsMax: 70 });
    expect(options).toMatchObject({ ttlMs: 400, requestTimeoutMs: 200, requestCredits: 7, requestCreditsMax: 70 });
  });
});

describe("ObservedKeyMachine", () => {
  it("reports lease outcomes and epoch resets as it applies them", () => {
    const machine = new ObservedKeyMachine(keyStateMachine());
    const events: string[] = [];
    machine.listen({
      onLease: (o) => events.push(`${o.type}:${o.seq}`),
      onEpoch: (k, e) => events.push(`epoch:${k}:${e}`),
      onRestore: () => events.push("restore"),
    });
    machine.apply({ type: "createApi", apiId: "api_a", name: "a", nowMs: startMs });
    machine.apply(createKey("k1", 100));
    machine.apply({
      type: "creditBatch",
      commands: [{ type: "grantCreditLease", keyId: "k1", nodeId: "n1", seq: 1, requested: 5, voters: ["n1"] }],
    });
    machine.apply({ type: "updateRemaining", keyId: "k1", op: "set", value: 7, nowMs: startMs });
    machine.apply({ type: "settleCreditLease", keyId: "k1", nodeId: "n1", seq: 1, spent: 2 });
    // A refill at 00:00 UTC that tops the key up is a reset too (the holder stops older leases).
    machine.apply(createKey("k2", 5, 40));
    machine.apply({ type: "refillCredits", keyIds: ["k2"], nowMs: Date.UTC(2026, 0, 2, 0, 0, 5) });
    machine.restore(machine.snapshot());
    expect(events).toEqual(["granted:1", "epoch:k1:1", "settled:1", "epoch:k2:1", "restore"]);
  });
});

describe("startCreditLeases", () => {
  const config = { leaseTtlMs: 2000, clockDriftMax: 0.01, leaseCredits: 10, leaseCreditsMax: 10 };
  const start = async (db: StoreDb, machine: ObservedKeyMachine) =>
    startCreditLeases({
      nodeId: "n1",
      db,
      machine,
      config,
      propose: async (command) => machine.apply(command),
      isLeader: () => true,
      voters: () => ["n1"],
      transport: { call: async () => ({ t: "undecided", message: "none" }), serve: () => undefined },
      nowMs: () => startMs,
      logger: pino({ level: "silent" }),
      onFatal: fatal,
    });

  it("refuses to start on a journal older than the ledger's record of this node (a storage fault stops the node)", async () => {
    const { db } = await tempDb();
    const machine = new ObservedKeyMachine(keyStateMachine());
    machine.apply({ type: "createApi", apiId: "api_a", name: "a", nowMs: startMs });
    machine.apply(createKey("k1", 1000));
    // The replicated ledger holds lease 7 of n1, granted in an earlier life of this node.
    machine.apply({ type: "grantCreditLease", keyId: "k1", nodeId: "n1", seq: 7, requested: 100, voters: ["n1"] });
    await expect(start(db, machine)).rejects.toBeInstanceOf(JournalBehindLedgerError);
  });

  it("starts when its journal covers every lease number the ledger knows of it", async () => {
    const { db } = await tempDb();
    const machine = new ObservedKeyMachine(keyStateMachine());
    machine.apply({ type: "createApi", apiId: "api_a", name: "a", nowMs: startMs });
    machine.apply(createKey("k1", 1000));
    const leases = await start(db, machine);
    await leases.close();
  });
});
