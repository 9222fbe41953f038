import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { SlidingWindowLimiter } from "../src/ratelimit/sliding-window.js";
import { AsyncLimitEstimator, asyncKeysMax, asyncOvershootBound } from "../src/placement/async-estimator.js";

/** Equal shares of a tenth of the limit over the other nodes: the estimator's share mechanism alone. */
const equalShare = (limit: number, nodes: number): number => Math.max(1, Math.floor((0.1 * limit) / (nodes - 1)));
import { nextReservation, OwnerReservations, SuccessorReservations } from "../src/placement/reservations.js";
import { ownerOf, rankNodes } from "../src/placement/rendezvous.js";
import type { ReservationAsk } from "../src/placement/reservations.js";
import { servingNode } from "../src/placement/rendezvous.js";

const nodesArb = fc.uniqueArray(fc.string({ minLength: 1, maxLength: 6 }), { minLength: 1, maxLength: 9 });
const ids = Array.from({ length: 3000 }, (_, i) => `ident_${i}`);

describe("rendezvous placement", () => {
  it("owner = first of the ranking, independent of the order of the nodes", () => {
    fc.assert(
      fc.property(nodesArb, fc.string(), (nodes, id) => {
        const owner = ownerOf(id, nodes);
        expect(rankNodes(id, nodes)[0]).toBe(owner);
        expect(ownerOf(id, [...nodes].reverse())).toBe(owner);
      }),
    );
  });

  it("balanced: each of n nodes owns within 25% of 1/n of 3000 identifiers", () => {
    for (const n of [3, 5, 7]) {
      const nodes = Array.from({ length: n }, (_, i) => `node-${i + 1}`);
      const counts = new Map<string, number>();
      for (const id of ids) counts.set(ownerOf(id, nodes), (counts.get(ownerOf(id, nodes)) ?? 0) + 1);
      for (const node of nodes) {
        const share = (counts.get(node) ?? 0) / ids.length;
        expect(Math.abs(share - 1 / n)).toBeLessThan(0.25 / n);
      }
    }
  });

  it("minimal movement: removing a node moves only its identifiers, to their second choice; adding one moves only to it", () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.string({ minLength: 1, maxLength: 4 }), { minLength: 2, maxLength: 7 }),
        fc.array(fc.string(), { maxLength: 40 }),
        (nodes, idents) => {
          const removed = nodes[0] ?? "";
          const rest = nodes.slice(1);
          for (const id of idents) {
            const before = ownerOf(id, nodes);
            const after = ownerOf(id, rest);
            if (before !== removed) expect(after).toBe(before);
            else expect(after).toBe(rankNodes(id, nodes)[1]);
            // Adding `removed` back: an identifier moves only if it moves to the new node.
            expect([after, removed]).toContain(ownerOf(id, nodes));
          }
        },
      ),
    );
  });

  it("moves about 1/(n+1) of identifiers when a node joins", () => {
    const nodes = ["a", "b", "c", "d"];
    const moved = ids.filter((id) => ownerOf(id, nodes) !== ownerOf(id, [...nodes, "e"])).length / ids.length;
    expect(moved).toBeGreaterThan(0.15);
    expect(moved).toBeLessThan(0.25);
  });

  it("servingNode: the owner, else its successor, else nobody (fail closed)", () => {
    const nodes = ["a", "b", "c"];
    const [first, second] = rankNodes("x", nodes);
    expect(servingNode("x", nodes, () => true)).toBe(first);
    expect(servingNode("x", nodes, (n) => n !== first)).toBe(second);
    expect(servingNode("x", nodes, (n) => n !== first && n !== second)).toBeNull();
  });
});

describe("reservations across a takeover", () => {
  it("property: owner -> successor -> owner again (handBack with the successor's counts), with the stale owner still trying, stays within the limit", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 40 }),
        fc.array(
          fc.oneof(
            { arbitrary: fc.constant(0), weight: 6 },
            { arbitrary: fc.constant(1), weight: 6 },
            { arbitrary: fc.constant(2), weight: 1 },
            { arbitrary: fc.constant(3), weight: 1 },
          ),
          { minLength: 20, maxLength: 200, size: "max" },
        ),
        (limit, ops) => {
          const successor = new SuccessorReservations();
          let owner = new OwnerReservations(successor.handBack([]).generation);
          let phase: "owner" | "successor" | "owner-again" = "owner";
          let stale: { owner: OwnerReservations; count: number } | null = null;
          let ownerCount = 0; // the owner's limiter count for the bucket
          let successorCount = 0;
          let total = 0;
          const inFlight: ReservationAsk[] = [];
          for (const op of ops) {
            if (op === 0) {
              // An admission at whoever serves now.
              if (stale !== null && stale.count + 1 <= limit) {
                // The owner's earlier life (it never learned of the takeover) keeps trying with its old counts.
                if (stale.owner.covered("k", 0, stale.count + 1)) {
                  stale.count++;
                  total++;
                } else {
                  const ask = stale.owner.request({ key: "k", limit, bucketStartMs: 0, count: stale.count + 1 });
                  if (ask !== null) inFlight.push(ask);
                }
              }
              if (phase === "successor") {
                if (successorCount + 1 <= limit) {
                  successorCount++;
                  total++;
                }
              } else if (ownerCount + 1 <= limit) {
                if (owner.covered("k", 0, ownerCount + 1)) {
                  ownerCount++;
                  total++;
                } else {
                  const ask = owner.request({ key: "k", limit, bucketStartMs: 0, count: ownerCount + 1 });
                  if (ask !== null) inFlight.push(ask);
                }
              }
            } else if (op === 1 && inFlight.length > 0) {
              const ask = inFlight.shift();
              if (ask === undefined) continue;
              const ack = successor.accept(ask);
              for (const o of [owner, stale?.owner]) {
                if (o === undefined || o.generation !== ask.generation) continue;
                if (ack !== null) o.onAck(ack);
                else o.onLost(ask);
              }
            } else if (op === 2 && phase === "owner") {
              phase = "successor";
              stale = { owner, count: ownerCount };
              successorCount = successor.takeOver().reduce((sum, b) => sum + b.count, 0);
            } else if (op === 3 && phase === "successor") {
              phase = "owner-again";
              // The returning owner restarts from the handed-back counts, with fresh bookkeeping.
              // The returning owner restarts from the handed-back counts in the new generation; asks of
              // its earlier life still in flight are refused (another generation).
              const restored = successor.handBack([{ key: "k", limit, bucketStartMs: 0, count: successorCount }]);
              owner = new OwnerReservations(restored.generation);
              ownerCount = restored.buckets.reduce((sum, b) => Math.max(sum, b.count), 0);
            }
            expect(total).toBeLessThanOrEqual(limit);
          }
        },
      ),
      { numRuns: 500 },
    );
  });

  // With the real sliding-window limiter: the owner admits in its limiter and answers success only
  // once the touched bucket's count is covered by an acknowledged reservation (acks arrive late or
  // are lost); at a random instant the successor takes over, restores its reserved buckets into its
  // own limiter and serves; the old owner keeps answering what its acks cover. Every window of
  // durationMs holds at most `limit` answered successes (at the instant the limiter judged them).
  it("property: owner + successor with the real limiter never answer more than the limit in any window", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 30 }),
        fc.integer({ min: 10, max: 500 }),
        fc.array(fc.record({ dtMs: fc.integer({ min: 0, max: 60 }), op: fc.integer({ min: 0, max: 9 }) }), {
          minLength: 20,
          maxLength: 300,
          size: "max",
        }),
        fc.integer({ min: 0, max: 300 }),
        (limit, durationMs, steps, takeoverAt) => {
          const check = { key: "ns:id", limit, durationMs, cost: 1 };
          const ownerLimiter = new SlidingWindowLimiter();
          const successor = new SuccessorReservations();
          const owner = new OwnerReservations(successor.handBack([]).generation);
          let successorLimiter: SlidingWindowLimiter | null = null;
          const waiting: { count: number; bucketStartMs: number; decidedAtMs: number }[] = []; // owner admissions not yet answered
          const asks: ReservationAsk[] = [];
          const answered: number[] = [];
          let nowMs = 1_000_000;
          steps.forEach(({ dtMs, op }, i) => {
            nowMs += dtMs;
            if (i === takeoverAt && successorLimiter === null) {
              successorLimiter = new SlidingWindowLimiter();
              for (const b of successor.takeOver()) successorLimiter.restoreBucket({ ...b, durationMs });
            }
            if (op <= 3) {
              // A check at the old owner (it keeps serving until it learns of the takeover).
              const result = ownerLimiter.limit([check], nowMs);
              const touched = result.touched[0];
              if (result.success && touched !== undefined) {
                if (owner.covered(check.key, touched.bucketStartMs, touched.count)) answered.push(nowMs);
                else {
                  waiting.push({ count: touched.count, bucketStartMs: touched.bucketStartMs, decidedAtMs: nowMs });
                  const ask = owner.request({
                    key: check.key,
                    limit,
                    bucketStartMs: touched.bucketStartMs,
                    count: touched.count,
                  });
                  if (ask !== null) asks.push(ask);
                }
              }
            } else if (op <= 5 && asks.length > 0) {
              const ask = asks.shift();
              if (ask === undefined) return;
              const ack = successor.accept(ask);
              if (ack === null) owner.onLost(ask);
              else owner.onAck(ack);
              // Answer the waiting admissions now covered; the rest time out as failures after a while.
              for (const w of waiting.splice(0)) {
                if (owner.covered(check.key, w.bucketStartMs, w.count)) answered.push(w.decidedAtMs); // judged at its decision time
              }
            } else if (op === 6 && asks.length > 0) {
              const ask = asks.shift();
              if (ask !== undefined) owner.onLost(ask);
            } else if (op >= 7 && successorLimiter !== null) {
              const s: SlidingWindowLimiter = successorLimiter;
              if (s.limit([check], nowMs).success) answered.push(nowMs);
            }
          });
          answered.sort((a, b) => a - b);
          for (let i = 0, j = 0; i < answered.length; i++) {
            while ((answered[j] ?? 0) <= (answered[i] ?? 0) - durationMs) j++;
            expect(i - j + 1).toBeLessThanOrEqual(limit);
          }
        },
      ),
      { numRuns: 400 },
    );
  });

  it("generations: nothing is acknowledged before a hand-back, nor to an owner of an earlier generation", () => {
    const successor = new SuccessorReservations();
    const bucket = { key: "k", limit: 10, bucketStartMs: 0, count: 3 };
    expect(successor.accept({ ...bucket, generation: 0 })).toBeNull(); // no owner has restored counts yet
    const first = successor.handBack([]);
    const owner = new OwnerReservations(first.generation);
    const ask = owner.request(bucket);
    expect(ask).not.toBeNull();
    if (ask === null) return;
    expect(successor.accept(ask)).toMatchObject({ count: ask.count, generation: first.generation });
    successor.takeOver();
    expect(successor.accept(ask)).toBeNull(); // fenced
    // The successor served 9 in this bucket, then the owner comes back: a new generation.
    const second = successor.handBack([{ ...bucket, count: 9 }]);
    expect(second.generation).toBeGreaterThan(first.generation);
    expect(second.buckets).toEqual([{ key: "k", limit: 10, bucketStartMs: 0, count: 9 }]);
    // The stale owner (old generation, stale counts) is not acknowledged; the restored one is.
    expect(successor.accept({ ...bucket, count: 5, generation: first.generation })).toBeNull();
    const restored = new OwnerReservations(second.generation);
    const fresh = restored.request({ ...bucket, count: 10 });
    expect(fresh === null ? null : successor.accept(fresh)).toMatchObject({ generation: second.generation });
    expect(() => new OwnerReservations(0)).toThrow();
  });

  it("a takeover needs the owner's word that it covered what it held, in a generation after the last voter change", () => {
    const successor = new SuccessorReservations();
    const bucket = { key: "k", limit: 10, bucketStartMs: 0, count: 4 };
    const first = successor.handBack([]);
    // Handed back, but the owner has not yet covered here what it holds (its own counts, and those
    // it collected from other nodes): a takeover would serve from too little.
    expect(successor.handedBack()).toBe(false);
    successor.ownerCovered(first.generation - 1); // another generation's word counts for nothing
    expect(successor.handedBack()).toBe(false);
    expect(successor.accept({ ...bucket, generation: first.generation })).toMatchObject({ count: 4 });
    successor.ownerCovered(first.generation);
    expect(successor.handedBack()).toBe(true);
    // The voters change: the owner may cover at another node for a while. Asks of the old
    // generation are refused, what was reserved stays (it is still reported), and no takeover
    // until the next hand-back and the owner's word.
    successor.requireHandBack();
    expect(successor.handedBack()).toBe(false);
    expect(successor.accept({ ...bucket, count: 6, generation: first.generation })).toBeNull();
    expect(successor.held()).toEqual([{ key: "k", limit: 10, bucketStartMs: 0, count: 4 }]);
    successor.ownerCovered(first.generation);
    expect(successor.handedBack()).toBe(false);
    const second = successor.handBack([]);
    expect(second.buckets).toEqual([{ key: "k", limit: 10, bucketStartMs: 0, count: 4 }]);
    successor.ownerCovered(second.generation);
    expect(successor.handedBack()).toBe(true);
    // A takeover fences: the owner's word in the fenced generation does not make it current again.
    successor.takeOver();
    successor.requireHandBack();
    successor.ownerCovered(second.generation + 1);
    successor.ownerCovered(second.generation + 2);
    expect(successor.handedBack()).toBe(false);
  });
  it("nextReservation grows by ceil(limit/8), capped at the limit", () => {
    expect(nextReservation(0, 100)).toBe(13);
    expect(nextReservation(95, 100)).toBe(100);
    expect(nextReservation(0, 1)).toBe(1);
  });

  // Owner admits only when covered by an acknowledged reservation; the successor fences at takeover
  // and starts from its reserved count. Random interleavings of admits, lost/late acks and the
  // takeover: owner admissions + successor admissions never exceed the limit in the bucket.
  it("property: a takeover never lets a bucket admit more than its limit", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 60 }),
        fc.array(
          fc.oneof(
            { arbitrary: fc.constant("admit" as const), weight: 6 },
            { arbitrary: fc.constant("deliver" as const), weight: 5 },
            { arbitrary: fc.constant("drop" as const), weight: 1 },
            { arbitrary: fc.constant("takeover" as const), weight: 1 },
          ),
          { minLength: 20, maxLength: 200, size: "max" },
        ),
        (limit, ops) => {
          const successor = new SuccessorReservations();
          const owner = new OwnerReservations(successor.handBack([]).generation);
          const inFlight: ReservationAsk[] = [];
          let ownerCount = 0;
          let tookOver = false;
          let restored = 0;
          let successorAdmitted = 0;
          for (const op of ops) {
            if (op === "admit") {
              // The old owner keeps serving whatever it can cover (after a takeover it does not know yet).
              if (ownerCount + 1 <= limit) {
                if (owner.covered("k", 0, ownerCount + 1)) ownerCount++;
                else {
                  const ask = owner.request({ key: "k", limit, bucketStartMs: 0, count: ownerCount + 1 });
                  if (ask !== null) inFlight.push(ask);
                }
              }
              if (tookOver && restored + successorAdmitted + 1 <= limit) successorAdmitted++;
            } else if (op === "deliver" && inFlight.length > 0) {
              const ask = inFlight.shift();
              if (ask === undefined) continue;
              const ack = successor.accept(ask);
              if (ack !== null) owner.onAck(ack);
              else owner.onLost(ask);
            } else if (op === "drop" && inFlight.length > 0) {
              const ask = inFlight.shift();
              if (ask !== undefined) owner.onLost(ask);
            } else if (op === "takeover" && !tookOver) {
              tookOver = true;
              restored = successor.takeOver().reduce((sum, b) => sum + b.count, 0);
              expect(restored).toBeGreaterThanOrEqual(ownerCount);
            }
            expect(ownerCount).toBeLessThanOrEqual(limit);
            if (tookOver) {
              expect(ownerCount).toBeLessThanOrEqual(restored); // fenced: never covered past the takeover
              expect(ownerCount + successorAdmitted).toBeLessThanOrEqual(limit);
            }
          }
        },
      ),
      { numRuns: 500 },
    );
  });
});

describe("async limits", () => {
  it("each node alone never exceeds the limit; the cluster overshoot stays within the stated bound", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 2, max: 5 }),
        fc.integer({ min: 1, max: 50 }),
        fc.integer({ min: 1, max: 10 }),
        fc.integer({ min: 0, max: 10_000 }),
        (nodes, limit, reconcileEvery, seed) => {
          const durationMs = 1000;
          const estimators = Array.from({ length: nodes }, () => new AsyncLimitEstimator(durationMs, 100));
          let x = seed;
          const rand = (n: number): number => {
            x = (Math.imul(x, 1103515245) + 12345) >>> 0;
            return x % n;
          };
          const admittedAt: number[] = [];
          const perNodePerRound = new Array<number>(nodes).fill(0);
          let maxPerNodePerRound = 0;
          for (let t = 0; t < 900; t += 10) {
            // Everything within one window (t < durationMs): the cluster total is the window count.
            const i = rand(nodes);
            const est = estimators[i];
            if (est !== undefined && est.admit("id", limit, 1, t).success) {
              admittedAt.push(t);
              perNodePerRound[i] = (perNodePerRound[i] ?? 0) + 1;
            }
            if ((t / 10) % reconcileEvery === 0) {
              maxPerNodePerRound = Math.max(maxPerNodePerRound, ...perNodePerRound);
              perNodePerRound.fill(0);
              for (const [a, ea] of estimators.entries())
                for (const [b, eb] of estimators.entries()) if (a !== b) eb.merge(`n${a}`, ea.report(t));
            }
          }
          maxPerNodePerRound = Math.max(maxPerNodePerRound, ...perNodePerRound);
          expect(admittedAt.length).toBeLessThanOrEqual(limit + asyncOvershootBound(limit, nodes, maxPerNodePerRound));
        },
      ),
      { numRuns: 300 },
    );
  });

  it("a steady stream over 3 nodes with R from the formula stays within 10% overshoot", () => {
    // Aggregate rate r = 3 x limit per window, spread round-robin; R chosen so that
    // (n - 1) * r * R / (n * limit) <= 0.1, i.e. R <= 0.1 * n * limit / ((n - 1) * r).
    const nodes = 3;
    const limit = 300;
    const durationMs = 1000;
    const ratePerMs = (3 * limit) / durationMs;
    const reconcileMs = Math.floor((0.1 * nodes * limit) / ((nodes - 1) * ratePerMs));
    const estimators = Array.from({ length: nodes }, () => new AsyncLimitEstimator(durationMs, 100));
    const admittedAt: number[] = [];
    const gapMs = 1 / ratePerMs;
    let next = 0;
    for (let t = 0; t < 10_000; t++) {
      while (next <= t) {
        const est = estimators[Math.floor(next / gapMs) % nodes];
        if (est?.admit("id", limit, 1, t).success === true) admittedAt.push(t);
        next += gapMs;
      }
      if (t % reconcileMs === 0) {
        for (const [a, ea] of estimators.entries())
          for (const [b, eb] of estimators.entries()) if (a !== b) eb.merge(`n${a}`, ea.report(t));
      }
    }
    let worst = 0;
    for (let i = 0, j = 0; i < admittedAt.length; i++) {
      while ((admittedAt[j] ?? 0) <= (admittedAt[i] ?? 0) - durationMs) j++;
      worst = Math.max(worst, i - j + 1);
    }
    expect(worst).toBeGreaterThanOrEqual(limit); // the load saturates the limit
    expect(worst / limit - 1).toBeLessThanOrEqual(0.1);
  });
});

describe("async limits with unconfirmed shares", () => {
  /**
   * Nodes exchange their counts in rounds with random delays (a report reaches a peer, then the
   * peer's acknowledgement comes back); traffic comes in bursts on random nodes at one instant.
   * Returns the most admitted in one window and the bound.
   */
  function burstRun(
    seed: number,
    nodes: number,
    limit: number,
    withShares: boolean,
  ): { admitted: number; bound: number } {
    const durationMs = 60_000;
    const estimators = Array.from({ length: nodes }, () => new AsyncLimitEstimator(durationMs, 6_000));
    const rounds = new Array<number>(nodes).fill(1);
    const confirmed = Array.from({ length: nodes }, () => new Array<number>(nodes).fill(0));
    let x = seed >>> 0;
    const rand = (n: number): number => {
      x = (Math.imul(x, 1103515245) + 12345) >>> 0;
      return (x >>> 8) % n;
    };
    // Messages in flight: [deliverAtMs, run].
    const inFlight: Array<[number, () => void]> = [];
    let admitted = 0;
    for (let t = 0; t < 3_000; t++) {
      for (const message of inFlight.filter(([at]) => at <= t)) message[1]();
      for (let i = inFlight.length - 1; i >= 0; i--) if (inFlight[i]![0] <= t) inFlight.splice(i, 1);
      if (t % 50 === 0) {
        // A beat of every node: its counts reach each peer after 1-40 ms, the reply as long again.
        for (let a = 0; a < nodes; a++) {
          const round = rounds[a]!;
          rounds[a] = round + 1;
          const counts = estimators[a]!.report(t);
          for (let b = 0; b < nodes; b++) {
            if (a === b) continue;
            const there = t + 1 + rand(40);
            inFlight.push([
              there,
              () => {
                estimators[b]!.merge(`n${a}`, counts);
                inFlight.push([
                  there + 1 + rand(40),
                  () => {
                    confirmed[a]![b] = Math.max(confirmed[a]![b]!, round);
                    let all = rounds[a]! - 1;
                    for (let p = 0; p < nodes; p++) if (p !== a) all = Math.min(all, confirmed[a]![p]!);
                    estimators[a]!.confirm(all);
                  },
                ]);
              },
            ]);
          }
        }
      }
      if (rand(100) < 3) {
        // A burst: up to 4 x limit requests at once on random nodes.
        const size = 1 + rand(4 * limit);
        for (let k = 0; k < size; k++) {
          const i = rand(nodes);
          const share = withShares ? { round: rounds[i]!, shareMax: equalShare(limit, nodes) } : undefined;
          if (estimators[i]!.admit("id", limit, 1, t, share).success) admitted++;
        }
      }
    }
    return { admitted, bound: limit + (nodes - 1) * equalShare(limit, nodes) };
  }

  it("bursts of any size on any nodes admit at most limit + (nodes - 1) x share in a window (at most 10% over, or nodes - 1)", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 2, max: 5 }),
        fc.integer({ min: 1, max: 400 }),
        fc.integer({ min: 0, max: 1_000_000 }),
        (nodes, limit, seed) => {
          const { admitted, bound } = burstRun(seed, nodes, limit, true);
          expect(admitted, `seed ${seed}`).toBeLessThanOrEqual(bound);
          expect(bound - limit).toBeLessThanOrEqual(Math.max(0.1 * limit, nodes - 1));
        },
      ),
      { numRuns: 200 },
    );
  });

  it("mutation check: without the shares, bursts overshoot by more than 10%", () => {
    const over = Array.from({ length: 50 }, (_, seed) => burstRun(seed, 3, 50, false)).some(
      ({ admitted }) => admitted > 55,
    );
    expect(over).toBe(true);
  });

  it("a confirmed round frees the share; an unconfirmed one holds it", () => {
    const estimator = new AsyncLimitEstimator(1000, 100);
    const share = { round: 1, shareMax: 2 };
    expect(estimator.admit("id", 100, 1, 0, share).success).toBe(true);
    expect(estimator.admit("id", 100, 1, 0, share).success).toBe(true);
    expect(estimator.admit("id", 100, 1, 0, share)).toEqual({ success: false, remaining: 98 });
    estimator.confirm(0);
    expect(estimator.unconfirmedOf("id")).toBe(2);
    estimator.confirm(1);
    expect(estimator.unconfirmedOf("id")).toBe(0);
    expect(estimator.admit("id", 100, 1, 0, { round: 2, shareMax: 2 }).success).toBe(true);
  });
});

describe("async reset", () => {
  it("is when the next request of the same cost fits the counts this node knows, within duration + one bucket", () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ atMs: fc.integer({ min: 0, max: 5_000 }), peer: fc.boolean() }), { maxLength: 40 }),
        fc.integer({ min: 1, max: 20 }),
        fc.integer({ min: 1, max: 3 }),
        fc.integer({ min: 5_000, max: 8_000 }),
        (hits, limit, cost, nowMs) => {
          const durationMs = 3_000;
          const widthMs = 300;
          const here = new AsyncLimitEstimator(durationMs, widthMs);
          const peer = new AsyncLimitEstimator(durationMs, widthMs);
          for (const hit of [...hits].sort((a, b) => a.atMs - b.atMs))
            (hit.peer ? peer : here).admit("id", limit, 1, hit.atMs);
          here.merge("p", peer.report(nowMs));
          const resetMs = here.fitTimeMs("id", limit, cost, nowMs);
          expect(resetMs).toBeGreaterThanOrEqual(nowMs);
          expect(resetMs - nowMs).toBeLessThan(durationMs + widthMs);
          if (cost > limit) return;
          expect(here.estimate("id", resetMs) + cost).toBeLessThanOrEqual(limit);
          if (resetMs > nowMs) expect(here.estimate("id", resetMs - 1) + cost).toBeGreaterThan(limit);
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe("async limits with clocks apart", () => {
  it("a peer whose clock is ahead by a whole duration is still counted (its buckets start in this node's future)", () => {
    const durationMs = 1000;
    const ahead = new AsyncLimitEstimator(durationMs, 100);
    const here = new AsyncLimitEstimator(durationMs, 100);
    // The peer's clock reads 1500 ms more than this node's: it files 8 admissions at 6500.
    for (let i = 0; i < 8; i++) expect(ahead.admit("id", 10, 1, 6_500).success).toBe(true);
    here.merge("ahead", ahead.report(6_500));
    expect(here.estimate("id", 5_000)).toBe(8);
    expect(here.admit("id", 10, 3, 5_000).success).toBe(false);
    expect(here.admit("id", 10, 2, 5_000).success).toBe(true);
  });
});

describe("AsyncLimitEstimator: identifiers are the callers' to choose", () => {
  it("holds at most asyncKeysMax identifiers per view, forgetting the least recently used", () => {
    const estimator = new AsyncLimitEstimator(60_000, 6_000);
    expect(estimator.admit("hot", 10, 3, 0).success).toBe(true);
    for (let i = 0; i < asyncKeysMax + 10; i++) {
      estimator.admit(`flood-${i}`, 1_000, 1, 1);
      // "hot" stays in use, so it is never the least recently used.
      if (i % 1000 === 0) estimator.admit("hot", 10, 0, 1);
      if (i % 50_000 === 0) estimator.admit("hot", 10, 1, 1);
    }
    const reported = estimator.report(1);
    expect(reported.length).toBeLessThanOrEqual(asyncKeysMax);
    expect(estimator.estimate("hot", 1)).toBe(6);
    expect(estimator.estimate("flood-0", 1)).toBe(0);
    // Peers' reports are bounded the same way.
    estimator.merge(
      "n2",
      Array.from({ length: asyncKeysMax + 5 }, (_, i) => ({ key: `p${i}`, bucketStartMs: 0, count: 1 })),
    );
    expect(estimator.estimate("p0", 1)).toBe(0);
    expect(estimator.estimate(`p${asyncKeysMax + 4}`, 1)).toBe(1);
  });
});
