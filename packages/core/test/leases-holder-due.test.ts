// The holder's poll looks only at the keys that are due (leases/due-queue.ts). Its outputs must be
// those of a poll that looks at every key (`pollEveryKey`, the sweep it replaced): the same
// journal records and requests in the same order, lease numbers included, whatever the schedule.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { DueQueue } from "../src/leases/due-queue.js";
import { LeaseHolder, type HolderOutput, type LeaseHolderOptions } from "../src/leases/holder.js";
import type { CreditLeaseOutcome, CreditLeaseRefusal } from "../src/leases/types.js";

const options: LeaseHolderOptions = {
  ttlMs: 1000,
  requestTimeoutMs: 300,
  settleRetryMs: 100,
  requestCredits: 4,
  requestCreditsMax: 32,
  renewFraction: 0.25,
  refusedBackoffMs: 50,
};

const keys = ["a", "b", "c", "d"];
const refusals: CreditLeaseRefusal[] = ["stale-seq", "low-not-owner", "empty", "too-many-leases"];

/** One step of a schedule: [kind, choice, amount]; time steps and polls weigh more than in a uniform draw. */
const step = fc.tuple(fc.nat(13), fc.nat(15), fc.nat(1000));

describe("LeaseHolder poll by due time", () => {
  it("gives the outputs of a poll over every key, step by step (property)", () => {
    fc.assert(
      fc.property(fc.array(step, { minLength: 100, maxLength: 400 }), (steps) => {
        const due = LeaseHolder.create("n1", options);
        const every = LeaseHolder.create("n1", options);
        let nowMs = 0;
        const asked: Array<{ keyId: string; seq: number }> = [];
        const settling: Array<{ keyId: string; seq: number }> = [];
        const both = (call: (holder: LeaseHolder) => HolderOutput): void => {
          const out = call(due);
          expect(out).toEqual(call(every));
          for (const request of out.requests) {
            if (request.type === "grantCreditLease") asked.push({ keyId: request.keyId, seq: request.seq });
            else settling.push({ keyId: request.keyId, seq: request.seq });
          }
        };
        for (const [kind, choice, amount] of steps) {
          const keyId = keys[choice % keys.length]!;
          switch (kind) {
            case 0:
            case 1:
            case 2: {
              const cost = choice % 4;
              const a = due.verify(keyId, cost, nowMs);
              expect(a).toEqual(every.verify(keyId, cost, nowMs));
              break;
            }
            case 3:
            case 10:
              // Up to past a whole ttl: keys fall out of use between their verifications.
              nowMs += 1 + (choice % 2 === 0 ? amount % 100 : amount * 1.5);
              break;
            case 4:
            case 11:
              both((holder) => (holder === due ? holder.poll(nowMs) : holder.pollEveryKey(nowMs)));
              break;
            case 5:
            case 6: {
              const request = asked[amount % Math.max(1, asked.length)];
              if (request === undefined) break;
              // Most answers are taken off the list; some are kept, to be answered again (a duplicate).
              if (choice % 5 !== 0) asked.splice(asked.indexOf(request), 1);
              const outcome: CreditLeaseOutcome =
                kind === 5
                  ? {
                      type: "granted",
                      ...request,
                      nodeId: "n1",
                      granted: amount % 17,
                      epoch: choice % 7 === 0 ? 1 : 0,
                      ownerNodeId: choice % 3 === 0 ? "n2" : "n1",
                      low: choice % 4 === 0,
                    }
                  : {
                      type: "refused",
                      ...request,
                      nodeId: "n1",
                      reason: refusals[choice % refusals.length]!,
                      ownerNodeId: "n2",
                    };
              both((holder) => holder.onOutcome(outcome, nowMs));
              break;
            }
            case 7: {
              const settle = settling[amount % Math.max(1, settling.length)];
              if (settle === undefined) break;
              settling.splice(settling.indexOf(settle), 1);
              const outcome: CreditLeaseOutcome =
                choice % 3 === 0
                  ? { type: "expired", ...settle, nodeId: "n1" }
                  : { type: choice % 2 === 0 ? "settled" : "ignored", ...settle, nodeId: "n1", returned: 0 };
              both((holder) => holder.onOutcome(outcome, nowMs));
              break;
            }
            case 8:
              both((holder) => holder.onEpoch(keyId, amount % 3, nowMs));
              break;
            default:
              // Time runs and the timer fires in the same step (the node's 50 ms tick).
              nowMs += 50;
              both((holder) => (holder === due ? holder.poll(nowMs) : holder.pollEveryKey(nowMs)));
          }
          expect(due.heldLeases()).toBe(every.heldLeases());
          expect(due.owedSettles()).toBe(every.owedSettles());
        }
      }),
      { numRuns: 300 },
    );
  });

  it("a key looked at exactly when its renewal window opens is looked at again by the next poll", () => {
    const holder = LeaseHolder.create("n1", options);
    holder.verify("k", 1, 0);
    holder.poll(0);
    holder.onOutcome(
      { type: "granted", keyId: "k", nodeId: "n1", seq: 1, granted: 4, epoch: 0, ownerNodeId: "n1", low: false },
      100,
    );
    holder.poll(100);
    expect(holder.verify("k", 1, 700).result.type).toBe("admitted"); // in use within the window
    // Deadline 1000, window 250: at 750 the deadline is not yet nearer than the window.
    expect(holder.poll(750)).toEqual({ journal: [], requests: [] });
    expect(holder.poll(800).requests).toEqual([
      { type: "grantCreditLease", keyId: "k", nodeId: "n1", seq: 2, requested: 4 },
    ]);
  });

  it("a poll with nothing due does nothing, however many keys hold leases", () => {
    const holder = LeaseHolder.create("n1", options);
    for (let i = 0; i < 1000; i++) holder.verify(`k${i}`, 1, 0);
    const asked = holder.poll(0).requests;
    expect(asked).toHaveLength(1000);
    for (const request of asked) {
      holder.onOutcome(
        {
          type: "granted",
          keyId: request.keyId,
          nodeId: "n1",
          seq: request.seq,
          granted: 100,
          epoch: 0,
          ownerNodeId: "n1",
          low: false,
        },
        1,
      );
    }
    expect(holder.poll(2)).toEqual({ journal: [], requests: [] });
    // One key spent close to empty: it alone asks for its renewal.
    for (let i = 0; i < 80; i++) holder.verify("k7", 1, 3);
    expect(holder.poll(4).requests).toEqual([
      expect.objectContaining({ type: "grantCreditLease", keyId: "k7", seq: 1001 }),
    ]);
    // Every lease reaches its deadline together (sent at 0, ttl 1000): all close in one poll, and
    // k7's renewal, never answered, is abandoned (settled with 0).
    const settles = holder.poll(1000).requests.filter((r) => r.type === "settleCreditLease");
    expect(settles).toHaveLength(1001);
    expect(settles).toContainEqual({ type: "settleCreditLease", keyId: "k7", nodeId: "n1", seq: 1001, spent: 0 });
  });
});

describe("DueQueue", () => {
  it("gives entries back in due-time order, only once due (property)", () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.nat(1000), fc.nat(50))), fc.nat(1000), (entries, nowMs) => {
        const queue = new DueQueue();
        for (const [dueMs, key] of entries) queue.push(dueMs, `k${key}`);
        const out: number[] = [];
        for (let entry = queue.popDue(nowMs); entry !== undefined; entry = queue.popDue(nowMs)) out.push(entry.dueMs);
        const expected = entries
          .map(([dueMs]) => dueMs)
          .filter((dueMs) => dueMs <= nowMs)
          .sort((a, b) => a - b);
        expect(out).toEqual(expected);
        expect(queue.size).toBe(entries.length - expected.length);
      }),
    );
  });
});
