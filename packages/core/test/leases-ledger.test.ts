import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { creditLeasePolicyDefaults } from "../src/leases/policy.js";
import { ownerOf } from "../src/placement/rendezvous.js";
import {
  applyCreditAdjust,
  applyCreditDirectSpend,
  applyCreditLeaseCommand,
  applyCreditRefill,
  applyCreditSet,
  applyGrantCreditLease,
  applySettleCreditLease,
  createCreditLedger,
  creditLedgerViolation,
  leasesPerKeyMax,
  ledgerRemaining,
} from "../src/leases/ledger.js";
import { leaseGrantSize } from "../src/leases/policy.js";
import type { CreditLedgerRecord } from "../src/leases/types.js";

const voters = ["n1", "n2", "n3"];
const context = { voters, policy: creditLeasePolicyDefaults };

describe("credit ledger with leases", () => {
  it("grants at most a share above the low mark, and keeps the accounting exact", () => {
    const record = createCreditLedger("key_a", 1000);
    const { record: next, outcome } = applyGrantCreditLease(
      record,
      { type: "grantCreditLease", keyId: "key_a", nodeId: "n1", seq: 1, requested: 500 },
      context,
    );
    expect(outcome).toMatchObject({ type: "granted", granted: Math.floor(1000 / (3 * 2)) });
    expect(next.unleased).toBe(1000 - 166);
    expect(ledgerRemaining(next)).toBe(1000);
    expect(creditLedgerViolation(next)).toBeNull();
    expect(record.unleased).toBe(1000); // input untouched
  });

  it("settle returns the unspent part once; a late duplicate grant of a settled seq is refused", () => {
    let record = createCreditLedger("key_a", 100);
    record = applyGrantCreditLease(
      record,
      { type: "grantCreditLease", keyId: "key_a", nodeId: "n1", seq: 1, requested: 10 },
      context,
    ).record;
    const settled = applySettleCreditLease(record, {
      type: "settleCreditLease",
      keyId: "key_a",
      nodeId: "n1",
      seq: 1,
      spent: 4,
    });
    expect(settled.outcome).toMatchObject({ type: "settled", returned: 6 });
    expect(settled.record.unleased).toBe(96);
    const again = applySettleCreditLease(settled.record, {
      type: "settleCreditLease",
      keyId: "key_a",
      nodeId: "n1",
      seq: 1,
      spent: 0,
    });
    expect(again.outcome.type).toBe("ignored");
    expect(again.record.unleased).toBe(96);
    const late = applyGrantCreditLease(
      again.record,
      { type: "grantCreditLease", keyId: "key_a", nodeId: "n1", seq: 1, requested: 10 },
      context,
    );
    expect(late.outcome).toMatchObject({ type: "refused", reason: "stale-seq" });
  });

  it("a settle that arrives before its grant fences the grant", () => {
    let record = createCreditLedger("key_a", 100);
    record = applySettleCreditLease(record, {
      type: "settleCreditLease",
      keyId: "key_a",
      nodeId: "n2",
      seq: 7,
      spent: 0,
    }).record;
    const grant = applyGrantCreditLease(
      record,
      { type: "grantCreditLease", keyId: "key_a", nodeId: "n2", seq: 7, requested: 5 },
      context,
    );
    expect(grant.outcome).toMatchObject({ type: "refused", reason: "stale-seq" });
    expect(grant.record.unleased).toBe(100);
  });

  it("low credits go to the key's owner only", () => {
    const owner = ownerOf("key_low", voters);
    const other = voters.find((v) => v !== owner) ?? "";
    const record = createCreditLedger("key_low", 10);
    const refused = applyGrantCreditLease(
      record,
      { type: "grantCreditLease", keyId: "key_low", nodeId: other, seq: 1, requested: 5 },
      context,
    );
    expect(refused.outcome).toMatchObject({ type: "refused", reason: "low-not-owner", ownerNodeId: owner });
    const granted = applyGrantCreditLease(
      record,
      { type: "grantCreditLease", keyId: "key_low", nodeId: owner, seq: 1, requested: 50 },
      context,
    );
    expect(granted.outcome).toMatchObject({ type: "granted", granted: 10, low: true });
  });

  it("a set starts a new epoch: old leases settle without returning credits", () => {
    let record = createCreditLedger("key_a", 1000);
    record = applyGrantCreditLease(
      record,
      { type: "grantCreditLease", keyId: "key_a", nodeId: "n1", seq: 1, requested: 100 },
      context,
    ).record;
    record = applyCreditSet(record, 50);
    expect(record).toMatchObject({ unleased: 50, epoch: 1, epochBalance: 50 });
    const settled = applySettleCreditLease(record, {
      type: "settleCreditLease",
      keyId: "key_a",
      nodeId: "n1",
      seq: 1,
      spent: 10,
    });
    expect(settled.outcome).toMatchObject({ type: "settled", returned: 0 });
    expect(settled.record.unleased).toBe(50);
  });

  it("refill tops up only when the unleased credits are below the amount", () => {
    const rich = createCreditLedger("key_a", 500);
    expect(applyCreditRefill(rich, 100)).toBe(rich);
    const poor = applyCreditRefill(createCreditLedger("key_a", 20), 100);
    expect(poor).toMatchObject({ unleased: 100, epoch: 1 });
  });

  it("decrement is floored at the unleased credits", () => {
    let record = createCreditLedger("key_a", 1000);
    record = applyGrantCreditLease(
      record,
      { type: "grantCreditLease", keyId: "key_a", nodeId: "n1", seq: 1, requested: 100 },
      context,
    ).record;
    const after = applyCreditAdjust(record, -5000);
    expect(after.unleased).toBe(0);
    expect(creditLedgerViolation(after)).toBeNull();
  });

  it(`refuses grants past leasesPerKeyMax (${leasesPerKeyMax}) unsettled leases`, () => {
    let record = createCreditLedger("key_a", 10_000_000);
    for (let seq = 1; seq <= leasesPerKeyMax; seq++) {
      const applied = applyGrantCreditLease(
        record,
        { type: "grantCreditLease", keyId: "key_a", nodeId: "n1", seq, requested: 1 },
        context,
      );
      expect(applied.outcome.type).toBe("granted");
      record = applied.record;
    }
    const past = applyGrantCreditLease(
      record,
      { type: "grantCreditLease", keyId: "key_a", nodeId: "n1", seq: leasesPerKeyMax + 1, requested: 1 },
      context,
    );
    expect(past.outcome).toMatchObject({ type: "refused", reason: "too-many-leases" });
  });

  it("leaseGrantSize never grants more than is unleased", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 10_000 }),
        fc.integer({ min: 0, max: 10_000 }),
        fc.integer({ min: 1, max: 9 }),
        fc.boolean(),
        (requested, unleased, n, owner) => {
          const size = leaseGrantSize(requested, unleased, n, owner, creditLeasePolicyDefaults);
          expect(size.granted).toBeLessThanOrEqual(Math.min(requested, unleased));
          expect(size.granted).toBeGreaterThanOrEqual(0);
        },
      ),
    );
  });

  // The model: holders that follow the protocol (spend <= grant, settle once with what they spent),
  // random interleavings with resets, adjustments, refills and direct spends. The sum of admitted
  // costs never exceeds the credits put in (initial + sets + increments + refill resets), and the
  // accounting of the current epoch is exact.
  it("property: admitted <= initial + sets + increments + refills, over random histories", () => {
    const op = fc.oneof(
      fc.record({
        t: fc.constant("grant" as const),
        node: fc.integer({ min: 0, max: 2 }),
        requested: fc.integer({ min: 1, max: 80 }),
      }),
      fc.record({ t: fc.constant("spend" as const), lease: fc.nat(), cost: fc.integer({ min: 0, max: 30 }) }),
      fc.record({ t: fc.constant("settle" as const), lease: fc.nat() }),
      fc.record({ t: fc.constant("set" as const), value: fc.integer({ min: 0, max: 300 }) }),
      fc.record({ t: fc.constant("adjust" as const), delta: fc.integer({ min: -100, max: 100 }) }),
      fc.record({ t: fc.constant("refill" as const), amount: fc.integer({ min: 0, max: 300 }) }),
      fc.record({ t: fc.constant("direct" as const), cost: fc.integer({ min: 0, max: 30 }) }),
    );
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 500 }),
        fc.array(op, { minLength: 10, maxLength: 150, size: "max" }),
        (initial, ops) => {
          let record: CreditLedgerRecord = createCreditLedger("key_m", initial);
          let supplied = initial;
          let admitted = 0;
          const admittedByEpoch = new Map<number, number>();
          const held: { node: string; seq: number; granted: number; spent: number; epoch: number }[] = [];
          let seq = 0;
          for (const o of ops) {
            if (o.t === "grant") {
              seq++;
              const applied = applyCreditLeaseCommand(
                record,
                {
                  type: "grantCreditLease",
                  keyId: "key_m",
                  nodeId: voters[o.node] ?? "n1",
                  seq,
                  requested: o.requested,
                },
                context,
              );
              record = applied.record;
              if (applied.outcome.type === "granted")
                held.push({
                  node: applied.outcome.nodeId,
                  seq,
                  granted: applied.outcome.granted,
                  spent: 0,
                  epoch: applied.outcome.epoch,
                });
            } else if (o.t === "spend" && held.length > 0) {
              const lease = held[o.lease % held.length];
              if (lease !== undefined && lease.spent + o.cost <= lease.granted) {
                lease.spent += o.cost;
                admitted += o.cost;
                admittedByEpoch.set(lease.epoch, (admittedByEpoch.get(lease.epoch) ?? 0) + o.cost);
              }
            } else if (o.t === "settle" && held.length > 0) {
              const [lease] = held.splice(o.lease % held.length, 1);
              if (lease !== undefined)
                record = applyCreditLeaseCommand(
                  record,
                  { type: "settleCreditLease", keyId: "key_m", nodeId: lease.node, seq: lease.seq, spent: lease.spent },
                  context,
                ).record;
            } else if (o.t === "set") {
              record = applyCreditSet(record, o.value);
              supplied += o.value;
            } else if (o.t === "adjust") {
              record = applyCreditAdjust(record, o.delta);
              if (o.delta > 0) supplied += o.delta;
            } else if (o.t === "refill") {
              const next = applyCreditRefill(record, o.amount);
              if (next !== record) supplied += o.amount;
              record = next;
            } else if (o.t === "direct") {
              const spend = applyCreditDirectSpend(record, o.cost);
              record = spend.record;
              if (spend.admitted) {
                admitted += o.cost;
                admittedByEpoch.set(record.epoch, (admittedByEpoch.get(record.epoch) ?? 0) + o.cost);
              }
            }
            expect(creditLedgerViolation(record)).toBeNull();
            expect(admitted).toBeLessThanOrEqual(supplied);
            const current = admittedByEpoch.get(record.epoch) ?? 0;
            expect(current).toBeLessThanOrEqual(record.epochBalance - record.unleased);
          }
          // Settle everything: the current epoch's credits are exactly balance - admitted.
          for (const lease of held.splice(0)) {
            record = applyCreditLeaseCommand(
              record,
              { type: "settleCreditLease", keyId: "key_m", nodeId: lease.node, seq: lease.seq, spent: lease.spent },
              context,
            ).record;
          }
          expect(record.leases).toEqual([]);
          expect(record.unleased).toBe(record.epochBalance - (admittedByEpoch.get(record.epoch) ?? 0));
        },
      ),
      { numRuns: 300 },
    );
  });
});
