// The cluster rate limits (src/counters/ratelimit) in one process: three ClusterRateLimits with
// real limiters, joined by an in-memory transport that can take a node down or cut a link, and
// an in-memory reservation store that survives a node's "restart". Checks: exact across nodes,
// takeover and hand-back within the limit, a cut-off owner never admitting past it, the
// single-node path, async reconciliation, and the small pieces (subjects, liveness, config).
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { pino } from "pino";
import {
  keyStateMachine,
  movedBucketStartMs,
  rankNodes,
  SlidingWindowLimiter,
  type LimitCheck,
  type BucketCount,
} from "@keyraft/core";
import { ClusterRateLimits } from "../src/counters/ratelimit/cluster-limits.js";
import { parseRateLimitClusterConfig, rateLimitClusterDefaults } from "../src/counters/ratelimit/config.js";
import { PeerLiveness } from "../src/counters/ratelimit/liveness.js";
import {
  limitSubject,
  parseReservationKey,
  reservationKey,
  subjectOfLimiterKey,
  verifySubject,
} from "../src/counters/ratelimit/subject.js";
import type { CounterReply, CounterRequest, CounterTransport } from "../src/counters/ratelimit/wire.js";
import { mergePerKey, SuccessorSide } from "../src/counters/ratelimit/successor-side.js";
import type { CounterDurability, DurabilityBucket } from "../src/store/types.js";
import { LevelCounterDurability } from "../src/store/counter-durability.js";
import { openStoreDb } from "../src/store/level-db.js";
import { V1Error } from "../src/errors.js";

const logger = pino({ level: "silent" });

/**
 * A node's reservation store, kept across the node's restarts, as store/counter-durability.ts
 * keeps it: the higher count per bucket and holder, and a restart restores per bucket the sum
 * over its holders, a count held for another node (filed on its clock) one bucket later.
 */
class MemoryDurability implements CounterDurability {
  readonly buckets = new Map<string, DurabilityBucket>();
  cover(touched: readonly DurabilityBucket[]): Promise<void> | null {
    for (const bucket of touched) {
      const id = `${bucket.key}\u0000${bucket.durationMs}\u0000${bucket.bucketStartMs}\u0000${bucket.holder ?? ""}`;
      const held = this.buckets.get(id);
      if (held === undefined || held.count < bucket.count) this.buckets.set(id, { ...bucket });
    }
    return Promise.resolve();
  }
  restore(limiter: SlidingWindowLimiter, nowMs: number): void {
    const sums = new Map<string, BucketCount>();
    for (const held of this.buckets.values()) {
      const bucketStartMs =
        held.holder === undefined
          ? held.bucketStartMs
          : Math.max(
              held.bucketStartMs,
              movedBucketStartMs(held.bucketStartMs, limiter.bucketWidthMs(held.durationMs), nowMs),
            );
      const bucket = { ...held, bucketStartMs };
      const id = `${bucket.key}\u0000${bucket.durationMs}\u0000${bucket.bucketStartMs}`;
      const sum = sums.get(id);
      if (sum === undefined) sums.set(id, { ...bucket, holder: undefined } as BucketCount);
      else sum.count += bucket.count;
    }
    for (const bucket of sums.values()) limiter.restoreBucket(bucket);
  }
}

interface SimNode {
  id: string;
  up: boolean;
  /** Stopped (SIGSTOP): calls to it wait until it resumes. */
  paused: Promise<void> | null;
  resume: () => void;
  limiter: SlidingWindowLimiter;
  disk: MemoryDurability;
  limits: ClusterRateLimits;
  handler: ((from: string, request: CounterRequest) => Promise<CounterReply>) | null;
  calls: number;
}

class SimCluster {
  readonly nodes = new Map<string, SimNode>();
  readonly cut = new Set<string>();
  /** The voters each node has applied (default: `ids`); a membership change sets them node by node. */
  readonly votersOf = new Map<string, readonly string[]>();
  nowMs = 1_000_000;
  /** Each node's clock offset from `nowMs` (default 0). */
  readonly offsets = new Map<string, number>();

  constructor(readonly ids: readonly string[]) {
    for (const id of ids) this.boot(id, new MemoryDurability());
  }

  node(id: string): SimNode {
    return this.nodes.get(id)!;
  }

  /** Starts (or restarts, memory lost, disk kept) a node. */
  boot(id: string, disk: MemoryDurability): SimNode {
    const limiter = new SlidingWindowLimiter();
    disk.restore(limiter, this.nowMs + (this.offsets.get(id) ?? 0));
    const node: SimNode = {
      id,
      up: true,
      paused: null,
      resume: () => undefined,
      limiter,
      disk,
      limits: null as unknown as ClusterRateLimits,
      handler: null,
      calls: 0,
    };
    const transport: CounterTransport = {
      nodeId: id,
      voters: () => this.votersOf.get(id) ?? this.ids,
      call: async (peer, request) => {
        node.calls++;
        const target = this.nodes.get(peer);
        if (!node.up || target === undefined || !target.up || this.cut.has(linkId(id, peer)) || target.handler === null)
          return "notSent";
        await Promise.resolve();
        if (target.paused !== null) await target.paused;
        const reply = await target.handler(id, structuredClone(request));
        if (!node.up || !target.up) return new Promise<never>(() => undefined); // lost with a node
        return structuredClone(reply);
      },
      serve: (handler) => {
        node.handler = handler;
      },
    };
    this.nodes.set(id, node);
    node.limits = new ClusterRateLimits({
      transport,
      state: keyStateMachine().state,
      limiter,
      durability: disk,
      config: { ...rateLimitClusterDefaults, timeoutMs: 200 },
      nowMs: () => this.nowMs + (this.offsets.get(id) ?? 0),
      logger,
    });
    return node;
  }

  /** Every up node hears every other up node it is linked to (one round of beats). */
  async beats(): Promise<void> {
    for (const node of this.nodes.values()) if (node.up && node.paused === null) node.limits.beat();
    await settle();
  }

  pause(id: string): void {
    const node = this.node(id);
    node.paused = new Promise<void>((resolve) => {
      node.resume = () => {
        node.paused = null;
        resolve();
      };
    });
  }

  cutLink(a: string, b: string): void {
    this.cut.add(linkId(a, b));
    this.cut.add(linkId(b, a));
  }
}

function linkId(from: string, to: string): string {
  return `${from}->${to}`;
}

async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
}

const subject = limitSubject("ns_1", "user-1");

function check(limit: number, cost = 1): LimitCheck {
  return { key: `r:ns_1:${limit}:60000:user-1`, limit, durationMs: 60_000, cost };
}

interface Tally {
  admitted: number;
  refused: number;
  unavailable: number;
}

async function hit(cluster: SimCluster, from: readonly string[], perNode: number, limit: number): Promise<Tally> {
  const tally: Tally = { admitted: 0, refused: 0, unavailable: 0 };
  await Promise.all(
    from.flatMap((id) =>
      Array.from({ length: perNode }, async () => {
        try {
          const answer = await cluster.node(id).limits.limit(subject, check(limit), false);
          if (answer.success) tally.admitted++;
          else tally.refused++;
        } catch (error) {
          expect(error).toBeInstanceOf(V1Error);
          expect((error as V1Error).statusCode).toBe(503);
          tally.unavailable++;
        }
      }),
    ),
  );
  return tally;
}

/** Hits until `rounds` rounds passed or nothing was admitted for two rounds in a row (beats in between). */
async function hitUntilRefused(
  cluster: SimCluster,
  from: readonly string[],
  limit: number,
  rounds = 30,
): Promise<Tally> {
  const total: Tally = { admitted: 0, refused: 0, unavailable: 0 };
  let idle = 0;
  for (let round = 0; round < rounds && idle < 2; round++) {
    const tally = await hit(cluster, from, 5, limit);
    total.admitted += tally.admitted;
    total.refused += tally.refused;
    total.unavailable += tally.unavailable;
    idle = tally.admitted === 0 && tally.refused > 0 ? idle + 1 : 0;
    cluster.nowMs += 10;
    await cluster.beats();
  }
  return total;
}

describe("cluster rate limits (async: false)", () => {
  const ids = ["n1", "n2", "n3"];
  const [ownerId, successorId, otherId] = rankNodes(subject, ids) as [string, string, string];

  it("admits exactly the limit in total when every node is hit at once", async () => {
    const cluster = new SimCluster(ids);
    await cluster.beats();
    const tally = await hit(cluster, ids, 30, 40);
    expect(tally).toEqual({ admitted: 40, refused: 50, unavailable: 0 });
    // Only the owner counted; the others forwarded.
    expect(cluster.node(otherId).limiter.size()).toBe(0);
    expect(cluster.node(ownerId).limiter.size()).toBe(1);
  });

  it("a one-member cluster judges locally: no calls, today's behaviour", async () => {
    const cluster = new SimCluster(["solo"]);
    const tally = await hit(cluster, ["solo"], 30, 12);
    expect(tally).toEqual({ admitted: 12, refused: 18, unavailable: 0 });
    await cluster.beats();
    expect(cluster.node("solo").calls).toBe(0);
  });

  it("after the owner dies the successor takes over without exceeding the limit, and hands back when it returns", async () => {
    const limit = 40;
    const cluster = new SimCluster(ids);
    await cluster.beats();
    const before = await hit(cluster, ids, 5, limit);
    expect(before.admitted).toBe(15);
    const ownerDisk = cluster.node(ownerId).disk;
    cluster.node(ownerId).up = false;
    const during = await hitUntilRefused(cluster, [successorId, otherId], limit);
    expect(during.admitted).toBeGreaterThan(0); // the successor served
    expect(before.admitted + during.admitted).toBeLessThanOrEqual(limit);
    expect(cluster.node(successorId).limits.successor.takeovers).toBe(1);
    // The owner restarts (memory lost, its disk kept) and asks for its limits back.
    cluster.boot(ownerId, ownerDisk);
    await cluster.beats();
    await cluster.beats();
    const after = await hitUntilRefused(cluster, ids, limit);
    expect(before.admitted + during.admitted + after.admitted).toBeLessThanOrEqual(limit);
    expect(cluster.node(successorId).limits.successor.handBacks).toBeGreaterThanOrEqual(1);
    expect(cluster.node(ownerId).limits.owner.handBacksRestored).toBeGreaterThanOrEqual(1);
  });

  it("an owner cut off from its successor only (still reached by others) never lets the limit be exceeded", async () => {
    const limit = 30;
    const cluster = new SimCluster(ids);
    await cluster.beats();
    const before = await hit(cluster, ids, 4, limit);
    cluster.cutLink(ownerId, successorId);
    cluster.node(successorId).limits.liveness.lost(ownerId);
    // The successor takes over for what reaches it; the owner keeps serving only what its acknowledgements cover.
    const split = await hitUntilRefused(cluster, ids, limit);
    expect(before.admitted + split.admitted).toBeLessThanOrEqual(limit);
    // Healed: the owner gets its limits back through a hand-back, still within the limit.
    cluster.cut.clear();
    await cluster.beats();
    const healed = await hitUntilRefused(cluster, ids, limit);
    expect(before.admitted + split.admitted + healed.admitted).toBeLessThanOrEqual(limit);
  });

  it("an owner stopped (SIGSTOP) past the suspicion time is taken over; resumed, it serves only what was covered, then asks for a hand-back", async () => {
    const limit = 40;
    const cluster = new SimCluster(ids);
    await cluster.beats();
    const before = await hit(cluster, ids, 4, limit);
    expect(before.admitted).toBe(12);
    cluster.pause(ownerId);
    // Checks forwarded to the stopped owner time out (503) until it has been silent for suspectAfterMs.
    const waiting = await hit(cluster, [otherId], 2, limit);
    expect(waiting).toEqual({ admitted: 0, refused: 0, unavailable: 2 });
    cluster.nowMs += rateLimitClusterDefaults.suspectAfterMs + 1;
    await cluster.beats();
    const during = await hitUntilRefused(cluster, [successorId, otherId], limit);
    expect(during.admitted).toBeGreaterThan(0);
    expect(cluster.node(successorId).limits.successor.takeovers).toBe(1);
    // Resumed: its late work is answered from its old acknowledgements only; then it gets its limits back.
    cluster.node(ownerId).resume();
    await cluster.beats();
    const after = await hitUntilRefused(cluster, ids, limit);
    expect(before.admitted + during.admitted + after.admitted).toBeLessThanOrEqual(limit);
    expect(cluster.node(ownerId).limits.owner.handBacksRestored).toBeGreaterThanOrEqual(2);
  });

  it("fails closed (503) when neither the owner nor its successor is reachable", async () => {
    const cluster = new SimCluster(ids);
    await cluster.beats();
    cluster.node(ownerId).up = false;
    cluster.node(successorId).up = false;
    const tally = await hitUntilRefused(cluster, [otherId], 10, 3);
    expect(tally.admitted).toBe(0);
    expect(tally.unavailable).toBeGreaterThan(0);
  });
});

describe("cluster rate limits (async: true)", () => {
  it("answers locally and counts what the others reported at the last beat", async () => {
    const ids = ["n1", "n2", "n3"];
    const cluster = new SimCluster(ids);
    const limit = 30;
    const admit = async (id: string, times: number) => {
      let admitted = 0;
      for (let i = 0; i < times; i++)
        if ((await cluster.node(id).limits.limit(subject, check(limit), true)).success) admitted++;
      return admitted;
    };
    // Before its counts are confirmed heard, a node admits only its unconfirmed share:
    // max(1, floor(0.1 * 30 / 2)) = 1, refused at once past it (no network wait).
    expect(await admit("n1", 10)).toBe(1);
    expect(await admit("n2", 10)).toBe(1);
    // Every beat the peers answer confirms the round: the share is free again.
    let n1 = 1;
    let n2 = 1;
    for (let round = 0; round < 9; round++) {
      await cluster.beats();
      n1 += await admit("n1", 3);
      n2 += await admit("n2", 3);
    }
    expect([n1, n2]).toEqual([10, 10]);
    await cluster.beats();
    // n3 now sees 20 elsewhere: 10 left, one share per round.
    let n3 = 0;
    for (let round = 0; round < 15; round++) {
      n3 += await admit("n3", 5);
      await cluster.beats();
    }
    expect(n3).toBe(10);
    expect(await admit("n1", 5)).toBe(0);
    expect(cluster.node("n1").calls).toBeGreaterThan(0);
  });
});

describe("subjects, liveness, config", () => {
  it("maps limiter keys to their subjects", () => {
    expect(subjectOfLimiterKey("v:key_1:default")).toBe(verifySubject("key_1"));
    expect(subjectOfLimiterKey("v:id_9:per:minute")).toBe("v:id_9");
    expect(subjectOfLimiterKey("r:ns_1:10:60000:user:with:colons")).toBe(limitSubject("ns_1", "user:with:colons"));
    expect(subjectOfLimiterKey("x:other")).toBeNull();
    expect(parseReservationKey(reservationKey(60_000, "v:key_1:default"))).toEqual({
      durationMs: 60_000,
      limiterKey: "v:key_1:default",
    });
    expect(parseReservationKey("nope")).toBeNull();
  });

  it("a hand-back too big for one message merges each key's counts into its newest bucket, losing none", () => {
    const merged = mergePerKey([
      { key: "60000|v:a:x", limit: 10, bucketStartMs: 6000, count: 3 },
      { key: "60000|v:a:x", limit: 10, bucketStartMs: 12000, count: 4 },
      { key: "60000|v:b:x", limit: 5, bucketStartMs: 6000, count: 1 },
    ]);
    expect(merged).toEqual([
      { key: "60000|v:a:x", limit: 10, bucketStartMs: 12000, count: 7 },
      { key: "60000|v:b:x", limit: 5, bucketStartMs: 6000, count: 1 },
    ]);
  });

  it("takes a peer for down after silence or a lost connection", () => {
    const liveness = new PeerLiveness(1000);
    expect(liveness.isUp("n2", 0)).toBe(false);
    liveness.heard("n2", 0);
    expect(liveness.isUp("n2", 999)).toBe(true);
    expect(liveness.isUp("n2", 1000)).toBe(false);
    liveness.heard("n2", 1000);
    liveness.lost("n2");
    expect(liveness.isUp("n2", 1001)).toBe(false);
  });

  it("reads its knobs and refuses bad ones", () => {
    const errors: string[] = [];
    expect(parseRateLimitClusterConfig({}, errors)).toEqual(rateLimitClusterDefaults);
    expect(
      parseRateLimitClusterConfig(
        { KEYRAFT_RATELIMIT_RECONCILE_MS: "20", KEYRAFT_RATELIMIT_SUSPECT_MS: "500" },
        errors,
      ),
    ).toMatchObject({ reconcileMs: 20, suspectAfterMs: 500 });
    expect(errors).toEqual([]);
    parseRateLimitClusterConfig({ KEYRAFT_RATELIMIT_RECONCILE_MS: "0" }, errors);
    expect(errors).toEqual([expect.stringMatching(/^KEYRAFT_RATELIMIT_RECONCILE_MS/)]);
    const tooClose: string[] = [];
    parseRateLimitClusterConfig(
      { KEYRAFT_RATELIMIT_RECONCILE_MS: "600", KEYRAFT_RATELIMIT_SUSPECT_MS: "1000" },
      tooClose,
    );
    expect(tooClose).toEqual([expect.stringMatching(/twice/)]);
  });
});

describe("the successor's acknowledgements", () => {
  const durationMs = 1000;
  const nowMs = 1_700_000_000_000;
  /** A subject whose ranking over `voters` is [owner, successor, ...]. */
  const subjectRanked = (voters: string[], owner: string, successor: string): string => {
    for (let i = 0; ; i++) {
      const subject = limitSubject("ns", `id${i}`);
      const ranked = rankNodes(subject, voters);
      if (ranked[0] === owner && ranked[1] === successor) return subject;
    }
  };
  const limiterKeyOf = (subject: string) => `${subject.replace(/^r:ns:/, "r:ns:10:1000:")}`;
  const world = (voters: string[]) => {
    const current = { voters };
    const side = new SuccessorSide({
      nodeId: "n2",
      boot: "boot",
      limiter: new SlidingWindowLimiter(),
      durability: { cover: () => null },
      voters: () => current.voters,
      knownNodes: () => [],
      nowMs: () => nowMs,
      logger,
    });
    return { side, current };
  };
  const ask = (subject: string, generation: number, bucketStartMs = nowMs - (nowMs % 100)) => ({
    key: reservationKey(durationMs, limiterKeyOf(subject)),
    limit: 10,
    bucketStartMs,
    count: 2,
    generation,
  });

  it("acknowledge only an asker that ranks first for the subject, with this node second", async () => {
    const voters = ["n1", "n2", "n3"];
    const { side, current } = world(voters);
    const subject = subjectRanked(voters, "n1", "n2");
    expect(subjectOfLimiterKey(limiterKeyOf(subject))).toBe(subject);
    const handBack = side.handBack("n1");
    expect(handBack.t).toBe("handBack");
    const generation = handBack.t === "handBack" ? handBack.generation : 0;
    expect((await side.accept("n1", "boot", [ask(subject, generation)])).acks[0]).not.toBeNull();
    // n3 asks for a subject n1 owns: refused.
    side.handBack("n3");
    expect((await side.accept("n3", "boot", [ask(subject, generation)])).acks[0]).toBeNull();
    // n1 removed from the voters (it never applied its removal and keeps asking): refused.
    current.voters = ["n2", "n3"];
    const again = side.handBack("n1");
    const next = again.t === "handBack" ? again.generation : 0;
    expect((await side.accept("n1", "boot", [ask(subject, next)])).acks[0]).toBeNull();
  });

  it("refuse a reservation for a bucket more than one bucket width in this node's future", async () => {
    const voters = ["n1", "n2", "n3"];
    const { side } = world(voters);
    const subject = subjectRanked(voters, "n1", "n2");
    const handBack = side.handBack("n1");
    const generation = handBack.t === "handBack" ? handBack.generation : 0;
    const current = nowMs - (nowMs % 100);
    expect((await side.accept("n1", "boot", [ask(subject, generation, current + 100)])).acks[0]).not.toBeNull();
    expect((await side.accept("n1", "boot", [ask(subject, generation, current + 2000)])).acks[0]).toBeNull();
  });

  it("a restart gives a collector no fewer counts than before it: a reservation and a copy of one bucket are added", async () => {
    // The same limiter key and bucket held both as a reservation for owner n1 and as a copy for
    // n3 (a serving successor of an earlier voter set): they may count different admissions, so a
    // node collecting the subject counts both, before and after n2 restarts.
    const voters = ["n1", "n2", "n3"];
    const subject = subjectRanked(voters, "n1", "n2");
    const dir = await mkdtemp(join(tmpdir(), "keyraft-held-"));
    try {
      const start = async () => {
        const db = await openStoreDb(dir);
        const durability = await LevelCounterDurability.open(db, {
          nowMs: () => nowMs,
          onFatal: (error) => {
            throw error;
          },
        });
        const limiter = new SlidingWindowLimiter();
        durability.restore(limiter, nowMs);
        const side = new SuccessorSide({
          nodeId: "n2",
          boot: `boot-${db.status}`,
          limiter,
          durability,
          voters: () => voters,
          knownNodes: () => voters,
          nowMs: () => nowMs,
          logger,
        });
        return { db, side };
      };
      // A collector ranking first over its own voters (only itself): it is told every count held.
      const collected = (side: SuccessorSide): number => {
        const reply = side.countsFor("n9", ["n9"]);
        expect(reply.t).toBe("collect");
        return reply.t === "collect" ? reply.buckets.reduce((sum, bucket) => sum + bucket.count, 0) : 0;
      };
      const first = await start();
      const handBack = first.side.handBack("n1");
      const generation = handBack.t === "handBack" ? handBack.generation : 0;
      // Counts a chunk (ceil(limit / 8)) below the limit apart, so that neither disk record (a
      // chunk ahead of its count) covers both.
      const reserved = { ...ask(subject, generation), limit: 100, count: 20 };
      expect((await first.side.accept("n1", `boot-open`, [reserved])).acks[0]).not.toBeNull();
      const copy = { key: reserved.key, limit: reserved.limit, bucketStartMs: reserved.bucketStartMs, count: 30 };
      expect((await first.side.keepCopies("n3", [copy], voters)).t).toBe("copy");
      const before = collected(first.side);
      expect(before).toBe(reserved.count + copy.count);
      await first.db.close(); // the process "died"

      const second = await start();
      // From disk into the limiter: each record is a chunk ahead of its count, and both are added.
      expect(collected(second.side)).toBeGreaterThanOrEqual(before);
      await second.db.close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe("membership changes (docs/counters.md: counts move with their subjects)", () => {
  const limit = 20;
  /** Admits `limit` on the subject through its owner (with beats, so reservations are acknowledged). */
  async function fill(cluster: SimCluster, from: string): Promise<number> {
    return (await hitUntilRefused(cluster, [from], limit)).admitted;
  }

  it("a voter removed: its subjects move to their successor with their counts, and the removed node (lagging) admits nothing more", async () => {
    const ids = ["n1", "n2", "n3"];
    const cluster = new SimCluster(ids);
    await cluster.beats();
    const [owner, successor, other] = rankNodes(subject, ids) as [string, string, string];
    expect(await fill(cluster, owner)).toBe(limit);
    // The owner is removed: the others apply the new set; the removed node never does.
    const rest = ids.filter((id) => id !== owner);
    for (const id of rest) cluster.votersOf.set(id, rest);
    await cluster.beats();
    expect(rankNodes(subject, rest)[0]).toBe(successor);
    const after = await hitUntilRefused(cluster, [successor, other, owner], limit, 10);
    expect(after.admitted).toBe(0);
  });

  it("a voter added: subjects that move to it keep their counts (the old owner, now second, hands them over)", async () => {
    const ids = ["n1", "n2", "n3"];
    // A new node id that becomes the owner of the subject.
    const added = Array.from({ length: 200 }, (_, i) => `m${i}`).find(
      (id) => rankNodes(subject, [...ids, id])[0] === id,
    )!;
    const cluster = new SimCluster(ids);
    await cluster.beats();
    const [owner] = rankNodes(subject, ids) as [string];
    expect(await fill(cluster, owner)).toBe(limit);
    const grown = [...ids, added];
    cluster.votersOf.set(added, grown);
    cluster.boot(added, new MemoryDurability());
    // The old owner lags: the new node's hand-back is refused until it applied the change too.
    const early = await hit(cluster, [added], 5, limit);
    expect(early.admitted).toBe(0);
    for (const id of ids) cluster.votersOf.set(id, grown);
    await cluster.beats();
    expect(rankNodes(subject, grown)[1]).toBe(owner);
    const after = await hitUntilRefused(cluster, [...grown], limit, 10);
    expect(after.admitted).toBe(0);
  });
});

/**
 * A seeded schedule of hits, beats and membership changes applied node by node (lagging nodes keep
 * the old set for a while). `quick`: a change may follow the previous one before every node applied
 * it and beat (two changes in quick succession); otherwise one change at a time. Returns the first
 * window over the limit, or null.
 */
async function membershipSchedule(seed: number, quick: boolean): Promise<string | null> {
  const log = (line: string) => {
    if (process.env["MSEED"] !== undefined) console.log(line);
  };
  let x = seed * 2654435761;
  const rand = (n: number): number => {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    return (x >>> 8) % n;
  };
  const all = ["n1", "n2", "n3", "n4", "n5"];
  const limit = 5 + rand(30);
  let voters = ["n1", "n2", "n3"];
  const cluster = new SimCluster(voters);
  await cluster.beats();
  let admitted = 0;
  /** Nodes that have not applied the latest voter set yet. */
  let lagging: string[] = [];
  /** One change at a time: the next only once every node applied this one and beat (see docs/counters.md). */
  let beatSinceChange = true;
  for (let step = 0; step < 40; step++) {
    const roll = rand(10);
    if (roll < 5) {
      const from = [...cluster.nodes.keys()].filter((id) => cluster.node(id).up);
      const at = from[rand(from.length)]!;
      log(
        `  counts: ${[...cluster.nodes.keys()]
          .map(
            (id) =>
              `${id}=${cluster
                .node(id)
                .limiter.snapshot(cluster.nowMs)
                .reduce((n, b) => n + b.count, 0)}`,
          )
          .join(" ")}`,
      );
      const tally = await hit(cluster, [at], 1 + rand(4), limit);
      admitted += tally.admitted;
      log(`step ${step}: hit at ${at}: ${JSON.stringify(tally)} total ${admitted}`);
    } else if (roll < 7) {
      cluster.nowMs += 10;
      await cluster.beats();
      beatSinceChange = lagging.length === 0;
      log(`step ${step}: beats`);
    } else if (roll < 8 && lagging.length > 0) {
      // A lagging node applies the current set.
      const id = lagging.splice(rand(lagging.length), 1)[0]!;
      cluster.votersOf.set(id, voters);
      log(`step ${step}: ${id} applies ${voters.join(",")}`);
    } else if (roll < 9 && (quick || (lagging.length === 0 && beatSinceChange))) {
      beatSinceChange = false;
      // A membership change: add a node, or remove one (never below 2); a few nodes lag.
      const outside = all.filter((id) => !voters.includes(id));
      const removed = voters[rand(voters.length)]!;
      const next =
        voters.length > 2 && (outside.length === 0 || rand(2) === 0)
          ? voters.filter((id) => id !== removed)
          : [...voters, outside[rand(outside.length)]!];
      // Quick: a node lagging the previous change applies it now, with no beat since (so nothing
      // has been handed over yet), and may lag this one. (A node two changes behind whose successor
      // is too would still judge: docs/counters.md.)
      for (const id of lagging) cluster.votersOf.set(id, voters);
      voters = next;
      for (const id of next)
        if (!cluster.nodes.has(id)) {
          cluster.votersOf.set(id, next);
          cluster.boot(id, new MemoryDurability());
        }
      const known = [...cluster.nodes.keys()];
      lagging = known.filter(() => rand(3) === 0);
      for (const id of known) if (!lagging.includes(id)) cluster.votersOf.set(id, next);
      log(
        `step ${step}: voters ${next.join(",")} (ranking ${rankNodes(subject, next).join(",")}); lagging ${lagging.join(",")}`,
      );
    }
    if (admitted > limit) return `seed ${seed}, step ${step}: ${admitted} admitted, limit ${limit}`;
  }
  // Everyone applies the last set: the limit is still the limit.
  for (const id of cluster.nodes.keys()) cluster.votersOf.set(id, voters);
  await cluster.beats();
  admitted += (await hitUntilRefused(cluster, voters, limit, 15)).admitted;
  return admitted > limit
    ? `seed ${seed}: ${admitted} admitted after everyone applied the last set, limit ${limit}`
    : null;
}

const membershipSeeds = (fallback: number): [number, number] =>
  process.env["MSEED"] === undefined
    ? [1, Number(process.env["MSEEDS"] ?? fallback)]
    : [Number(process.env["MSEED"]), Number(process.env["MSEED"])];

describe("membership changes under random schedules", () => {
  it("voters added and removed one change at a time, applied node by node (lagging nodes keep the old set): never more than the limit in the window", async () => {
    const [from, to] = membershipSeeds(200);
    for (let seed = from; seed <= to; seed++) expect(await membershipSchedule(seed, false)).toBeNull();
  }, 60_000);

  it("seed 7: counts moved to a node that is replaced as owner before it received them are collected from the node holding them", async () => {
    // n3 owns and admits 5 (covered at n5); n3 is removed: n5 takes the counts over; n1 is added
    // and owns, n4 is added right after and owns, n1 second: n1 never had the counts handed to it,
    // so n4's hand-back from n1 carries nothing and only collecting them from n5 keeps the limit
    // (without it: 7 admitted for a limit of 5; 12 of the first 200 schedules over the limit).
    expect(await membershipSchedule(7, true)).toBeNull();
  });

  it("two changes in quick succession (the second before every node applied the first): never more than the limit in the window", async () => {
    const [from, to] = membershipSeeds(200);
    for (let seed = from; seed <= to; seed++) expect(await membershipSchedule(seed, true)).toBeNull();
  }, 60_000);
});

/**
 * A seeded schedule of hits, time passing (windows of 2 s roll over), kills and restarts (memory
 * lost, disk kept), pauses (SIGSTOP: calls to the node wait), cut links and false suspicions, on
 * three nodes. Returns the first interval of the window holding more than the limit, or null.
 */
async function faultSchedule(seed: number, membership = false): Promise<string | null> {
  const trace = process.env["FSEED"] !== undefined ? (line: string) => console.log(line) : () => undefined;
  let x = seed * 2654435761;
  const rand = (n: number): number => {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    return (x >>> 8) % n;
  };
  const nodeIds = ["n1", "n2", "n3"];
  let voters = [...nodeIds];
  /** Nodes removed from the voters: never killed or paused afterwards. */
  const removed = new Set<string>();
  const limit = 3 + rand(20);
  const durationMs = 2_000;
  const limitCheck: LimitCheck = { key: `r:ns_1:${limit}:${durationMs}:user-1`, limit, durationMs, cost: 1 };
  const cluster = new SimCluster(nodeIds);
  await cluster.beats();
  const admittedAt: number[] = [];
  const paused = new Set<string>();
  const usable = () => nodeIds.filter((id) => cluster.node(id).up && !paused.has(id));
  for (let step = 0; step < 80; step++) {
    const roll = rand(membership ? 26 : 24);
    if (roll >= 24) {
      // A membership change, applied by every node at once (one change at a time): n4 added, or
      // a voter removed (never below 2); a removed node keeps running.
      // A removed node keeps running and reachable (a removal, not a crash): the counts only it
      // holds (those it admitted serving as a successor) are collected from it by the new owner.
      const upVoters = voters.filter((id) => cluster.node(id).up && !paused.has(id));
      const drop = upVoters[rand(Math.max(1, upVoters.length))];
      const next =
        !voters.includes("n4") && rand(2) === 0
          ? [...voters, "n4"]
          : voters.length > 2
            ? voters.filter((id) => id !== drop)
            : voters;
      if (next === voters) continue;
      if (drop !== undefined && !next.includes(drop)) removed.add(drop);
      voters = next;
      if (!nodeIds.includes("n4") && voters.includes("n4")) nodeIds.push("n4");
      for (const id of nodeIds) cluster.votersOf.set(id, voters);
      if (voters.includes("n4") && !cluster.nodes.has("n4")) cluster.boot("n4", new MemoryDurability());
      await cluster.beats();
      trace(`${step}: voters ${voters.join(",")} (ranking ${rankNodes(subject, voters).join(",")})`);
    } else if (roll < 10) {
      const from = usable();
      if (from.length === 0) continue;
      const at = from[rand(from.length)]!;
      const atMs = cluster.nowMs;
      const answers = await Promise.all(
        Array.from({ length: 1 + rand(4) }, () =>
          cluster
            .node(at)
            .limits.limit(subject, limitCheck, false)
            .then(
              (answer) => answer.success,
              () => false,
            ),
        ),
      );
      for (const admitted of answers) if (admitted) admittedAt.push(atMs);
      trace(`${step} @${atMs}: hit at ${at}: ${answers.filter(Boolean).length} of ${answers.length}`);
    } else if (roll < 15) {
      cluster.nowMs += 20 + rand(500);
      await cluster.beats();
      trace(`${step}: time ${cluster.nowMs}, beats`);
    } else if (roll < 16) {
      const up = nodeIds.filter((id) => cluster.node(id).up && !removed.has(id));
      if (up.length < 2) continue;
      const id = up[rand(up.length)]!;
      cluster.node(id).up = false;
      if (paused.delete(id)) cluster.node(id).resume();
      trace(`${step}: kill ${id}`);
    } else if (roll < 18) {
      const down = nodeIds.filter((id) => !cluster.node(id).up);
      if (down.length === 0) continue;
      const id = down[rand(down.length)]!;
      cluster.boot(id, cluster.node(id).disk);
      trace(`${step}: restart ${id}`);
    } else if (roll < 19) {
      const pausable = usable().filter((node) => !removed.has(node));
      const id = pausable[rand(Math.max(1, pausable.length))];
      if (id === undefined || usable().length < 2) continue;
      cluster.pause(id);
      paused.add(id);
      trace(`${step}: pause ${id}`);
    } else if (roll < 20) {
      for (const id of paused) cluster.node(id).resume();
      paused.clear();
      trace(`${step}: resume all`);
    } else if (roll < 21) {
      const a = nodeIds[rand(3)]!;
      const b = nodeIds.filter((id) => id !== a)[rand(2)]!;
      cluster.cutLink(a, b);
      trace(`${step}: cut ${a}-${b}`);
    } else if (roll < 23) {
      cluster.cut.clear();
      trace(`${step}: heal`);
    } else {
      const a = nodeIds[rand(3)]!;
      const b = nodeIds.filter((id) => id !== a)[rand(2)]!;
      cluster.node(a).limits.liveness.lost(b);
      trace(`${step}: ${a} suspects ${b}`);
    }
  }
  for (const id of paused) cluster.node(id).resume();
  trace(`admitted ${admittedAt.length}, limit ${limit}`);
  admittedAt.sort((a, b) => a - b);
  let from = 0;
  for (let i = 0; i < admittedAt.length; i++) {
    while (admittedAt[from]! <= admittedAt[i]! - durationMs) from++;
    if (i - from + 1 > limit)
      return `seed ${seed}: ${i - from + 1} admitted in (${admittedAt[i]! - durationMs}, ${admittedAt[i]}], limit ${limit}`;
  }
  return null;
}

describe("fault schedules", () => {
  it("kills, restarts, pauses, cut links and false suspicions while windows roll over: never more than the limit in a window", async () => {
    const [from, to] =
      process.env["FSEED"] === undefined
        ? [Number(process.env["FFROM"] ?? 1), Number(process.env["FSEEDS"] ?? 20)]
        : [Number(process.env["FSEED"]), Number(process.env["FSEED"])];
    for (let seed = from; seed <= to; seed++) expect(await faultSchedule(seed)).toBeNull();
  }, 120_000);

  // n4 removed (n1, its successor, takes its counts over and owns), added back, n1 killed, n4
  // removed again: n2 takes n1 over from what n1 covered there. n1 had kept the generation of an
  // earlier hand-back from n2, so the counts it took over were never covered at n2 (9 admitted for
  // a limit of 8) until a voter change made every owner link start over with a hand-back.
  it("seed 21: counts taken over at a membership change are covered at the successor before the owner decides", async () => {
    expect(await faultSchedule(21, true)).toBeNull();
  });

  it("the same with voters added and removed (one change at a time) among the faults", async () => {
    const [from, to] =
      process.env["FSEED"] === undefined
        ? [Number(process.env["FFROM"] ?? 1), Number(process.env["FSEEDS"] ?? 20)]
        : [Number(process.env["FSEED"]), Number(process.env["FSEED"])];
    for (let seed = from; seed <= to; seed++) expect(await faultSchedule(seed, true)).toBeNull();
  }, 120_000);
});

/**
 * The fault campaign's membership changes (cluster/faults): a voter is removed and its process
 * stopped, then started on its data dir and added back (`removed: "stopped"`), or kept running
 * (`"running"`), or (`"fresh"`) a brand-new node is added and another voter removed for good; each
 * node applies a change on its own time (some lag), among kills and restarts (memory lost, disk
 * kept), cut links and false suspicions, with per-node clock offsets below a bucket, bursts of up
 * to 25 calls, and windows of 2 s rolling over. A change starts at least two windows after the
 * last one ended, as the campaign's slots are apart. Returns the first interval of the window
 * holding more than the limit, or null.
 */
async function membershipFaultSchedule(seed: number, removed: "stopped" | "running" | "fresh"): Promise<string | null> {
  const trace = process.env["MFSEED"] !== undefined ? (line: string) => console.log(line) : () => undefined;
  let x = seed * 2654435761;
  const rand = (n: number): number => {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    return (x >>> 8) % n;
  };
  const nodeIds = ["n1", "n2", "n3"];
  let voters = [...nodeIds];
  const limit = 3 + rand(20);
  const durationMs = 2_000;
  const limitCheck: LimitCheck = { key: `r:ns_1:${limit}:${durationMs}:user-1`, limit, durationMs, cost: 1 };
  const cluster = new SimCluster(nodeIds);
  for (const id of nodeIds) cluster.offsets.set(id, rand(151));
  await cluster.beats();
  const admittedAt: number[] = [];
  /** Removed and stopped, to be added back. */
  let out: string | null = null;
  const gone = new Set<string>();
  let lagging: string[] = [];
  let nextId = 4;
  let slotEndMs = Number.NEGATIVE_INFINITY;
  /** Applies `voters` on every node but a few, which lag (they apply it in a later step). */
  const apply = (except: readonly string[]) => {
    lagging = nodeIds.filter((id) => voters.includes(id) && !except.includes(id) && rand(3) === 0);
    for (const id of nodeIds) if (!lagging.includes(id) && !except.includes(id)) cluster.votersOf.set(id, voters);
  };
  for (let step = 0; step < 120; step++) {
    const roll = rand(30);
    if (roll >= 26) {
      if (lagging.length > 0) {
        const id = lagging.splice(rand(lagging.length), 1)[0]!;
        cluster.votersOf.set(id, voters);
        trace(`${step}: ${id} applies ${voters.join(",")}`);
        continue;
      }
      const slotFree = cluster.nowMs - slotEndMs >= 2 * durationMs;
      if (removed === "fresh" && voters.length === 3) {
        if (!slotFree) continue;
        const added = `n${nextId++}`;
        nodeIds.push(added);
        cluster.offsets.set(added, rand(151));
        voters = [...voters, added];
        cluster.votersOf.set(added, voters);
        cluster.boot(added, new MemoryDurability());
        apply([added]);
        trace(`${step}: add ${added} (new); voters ${voters.join(",")}; lagging ${lagging.join(",")}`);
      } else if (removed === "fresh") {
        const victim = voters[rand(voters.length)]!;
        voters = voters.filter((id) => id !== victim);
        apply([victim]);
        cluster.node(victim).up = false;
        gone.add(victim);
        slotEndMs = cluster.nowMs;
        trace(`${step}: remove ${victim} for good; voters ${voters.join(",")}; lagging ${lagging.join(",")}`);
      } else if (out === null) {
        if (!slotFree) continue;
        const victim = voters[rand(voters.length)]!;
        voters = voters.filter((id) => id !== victim);
        out = victim;
        apply([victim]);
        // The removed node may or may not have applied its own removal.
        if (rand(2) === 0) cluster.votersOf.set(victim, voters);
        if (removed === "stopped") cluster.node(victim).up = false;
        trace(`${step}: remove ${victim} (${removed}); voters ${voters.join(",")}; lagging ${lagging.join(",")}`);
      } else {
        const back = out;
        if (!cluster.node(back).up) cluster.boot(back, cluster.node(back).disk);
        voters = [...voters, back];
        out = null;
        apply([]);
        slotEndMs = cluster.nowMs;
        trace(`${step}: add ${back} back; voters ${voters.join(",")}; lagging ${lagging.join(",")}`);
      }
      await cluster.beats();
    } else if (roll < 10) {
      const from = nodeIds.filter((id) => cluster.node(id).up && voters.includes(id));
      if (from.length === 0) continue;
      const at = from[rand(from.length)]!;
      const calls = 1 + rand(rand(3) === 0 ? 25 : 4);
      const answers = await Promise.all(
        Array.from({ length: calls }, () =>
          cluster
            .node(at)
            .limits.limit(subject, limitCheck, false)
            .then(
              (answer) => answer.success,
              () => false,
            ),
        ),
      );
      for (const admitted of answers) if (admitted) admittedAt.push(cluster.nowMs);
      trace(`${step} @${cluster.nowMs}: hit at ${at}: ${answers.filter(Boolean).length} of ${calls}`);
    } else if (roll < 15) {
      cluster.nowMs += 20 + rand(500);
      await cluster.beats();
      trace(`${step}: time ${cluster.nowMs}, beats`);
    } else if (roll < 17) {
      const up = nodeIds.filter((id) => cluster.node(id).up);
      if (up.length < 2) continue;
      const id = up[rand(up.length)]!;
      cluster.node(id).up = false;
      trace(`${step}: kill ${id}`);
    } else if (roll < 20) {
      const down = nodeIds.filter((id) => !cluster.node(id).up && id !== out && !gone.has(id));
      if (down.length === 0) continue;
      const id = down[rand(down.length)]!;
      cluster.boot(id, cluster.node(id).disk);
      trace(`${step}: restart ${id}`);
    } else if (roll < 21) {
      const a = nodeIds[rand(nodeIds.length)]!;
      const b = nodeIds.filter((id) => id !== a)[rand(nodeIds.length - 1)]!;
      cluster.cutLink(a, b);
      trace(`${step}: cut ${a}-${b}`);
    } else if (roll < 23) {
      cluster.cut.clear();
      trace(`${step}: heal`);
    } else {
      const a = nodeIds[rand(nodeIds.length)]!;
      const b = nodeIds.filter((id) => id !== a)[rand(nodeIds.length - 1)]!;
      cluster.node(a).limits.liveness.lost(b);
      trace(`${step}: ${a} suspects ${b}`);
    }
  }
  admittedAt.sort((a, b) => a - b);
  let from = 0;
  for (let i = 0; i < admittedAt.length; i++) {
    while (admittedAt[from]! <= admittedAt[i]! - durationMs) from++;
    if (i - from + 1 > limit)
      return `seed ${seed} (${removed}): ${i - from + 1} admitted in (${admittedAt[i]! - durationMs}, ${admittedAt[i]}], limit ${limit}`;
  }
  return null;
}

describe("membership changes as the fault campaign makes them", () => {
  const seeds = (fallback: number): [number, number] =>
    process.env["MFSEED"] === undefined
      ? [Number(process.env["MFFROM"] ?? 1), Number(process.env["MFSEEDS"] ?? fallback)]
      : [Number(process.env["MFSEED"]), Number(process.env["MFSEED"])];

  // Every schedule of the first 1,000 that went over the limit before the fixes of these
  // mechanisms (4 with the removed node stopped, 11 with it running, 6 with a new node): a serving
  // successor removed and stopped with the only record of its admissions (now copied to the node
  // ranked next, copy-side.ts); a successor still serving, or taking over from reservations, after
  // the voters changed under it; a successor taking over after a hand-back before the owner
  // covered what it had collected; a successor a change behind taking over while the owner
  // covered at its new successor (docs/counters.md, membership changes).
  it.each([
    [57, "stopped"],
    [140, "stopped"],
    [701, "stopped"],
    [881, "stopped"],
    [14, "running"],
    [60, "running"],
    [458, "running"],
    [601, "running"],
    [675, "running"],
    [949, "running"],
    [22, "fresh"],
    [472, "fresh"],
    [610, "fresh"],
    [973, "fresh"],
    // Counts a successor held for an owner, restored at its restart where the owner had filed
    // them: this node's clock, 86 ms ahead of the removed owner's, dropped them from the window
    // early (8 admitted for 7). A count held for another node is restored one bucket later;
    // without that, 572 and these two of the first 2,000 of each kind go over the limit.
    [572, "fresh"],
    [1408, "stopped"],
    [1408, "running"],
  ] as const)("seed %i (removed node %s): never more than the limit in a window", async (seed, removed) => {
    expect(await membershipFaultSchedule(seed, removed)).toBeNull();
  });

  it.each(["stopped", "running", "fresh"] as const)(
    "voters removed (%s) and added among kills, restarts, cut links and lagging nodes: never more than the limit in a window",
    async (removed) => {
      const [from, to] = seeds(300);
      for (let seed = from; seed <= to; seed++) expect(await membershipFaultSchedule(seed, removed)).toBeNull();
    },
    120_000,
  );
});
