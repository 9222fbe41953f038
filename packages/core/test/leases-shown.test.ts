// The credits a node shows (leases/shown.ts): the replica's `remaining` less the node's own spends
// from leases the ledger still counts in full. A seeded model of the ledger and its holders (one
// replica, requests delivered late, duplicated or lost, holders restarted from their journals,
// resets and increments) checks at every step:
//   - one node: the shown balance is exactly the true balance;
//   - three nodes: each node shows at least the true balance and at most it plus the other
//     nodes' own unsettled spends, and never more than it showed at its previous step unless
//     credits were added.
// Mutation checks: the formulas keyraft used before (the replica's remaining alone, as getKey
// showed it; the lease remainder plus the unleased credits, as a verification answered it) and
// one that counts leases of older epochs are each caught by the same checks.
import { describe, expect, it } from "vitest";
import {
  applyCreditAdjust,
  applyCreditDirectSpend,
  applyCreditLeaseCommand,
  applyCreditSet,
  createCreditLedger,
  ledgerRemaining,
} from "../src/leases/ledger.js";
import { creditLeasePolicyDefaults } from "../src/leases/policy.js";
import { LeaseHolder, type HolderRequest, type LeaseHolderOptions } from "../src/leases/holder.js";
import type { HolderJournalRecord } from "../src/leases/journal.js";
import { ownUnsettledSpent, shownCredits } from "../src/leases/shown.js";
import type { CreditLedgerRecord } from "../src/leases/types.js";

const options: LeaseHolderOptions = {
  ttlMs: 100,
  requestTimeoutMs: 40,
  settleRetryMs: 20,
  requestCredits: 6,
  requestCreditsMax: 24,
  renewFraction: 0.25,
  refusedBackoffMs: 10,
};

/** A small seeded PRNG (mulberry32): every run of a seed is the same. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Node {
  id: string;
  holder: LeaseHolder;
  journal: HolderJournalRecord[];
}

/** What a node shows, given the ledger and the node (the formula under test). */
type ShowFormula = (ledger: CreditLedgerRecord, node: Node, nowMs: number) => number;

const shown: ShowFormula = (ledger, node) =>
  shownCredits(ledger, node.id, (seq) => node.holder.spentOf(ledger.keyId, seq));

const mutants: Record<string, ShowFormula> = {
  "the replica's remaining alone": (ledger) => ledgerRemaining(ledger),
  "the lease remainder plus the unleased credits": (ledger, node, nowMs) =>
    node.holder.leaseRemaining(ledger.keyId, nowMs) + ledger.unleased,
  "own spends of every epoch": (ledger, node) => {
    let spent = 0;
    for (const lease of ledger.leases)
      if (lease.nodeId === node.id) spent += node.holder.spentOf(ledger.keyId, lease.seq);
    return ledgerRemaining(ledger) - spent;
  },
};

/** Runs one seeded history; returns the first violation (null: none). */
function run(seed: number, nodeCount: number, formula: ShowFormula, steps = 400): string | null {
  const random = prng(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const voters = Array.from({ length: nodeCount }, (_, i) => `n${i + 1}`);
  const nodes: Node[] = voters.map((id) => ({ id, holder: LeaseHolder.create(id, options), journal: [] }));
  let ledger = createCreditLedger("k", 60 + Math.floor(random() * 200));
  /** Admitted per epoch: the true balance is epochBalance - admitted[epoch]. */
  const admitted = new Map<number, number>();
  const inFlight: HolderRequest[] = [];
  let nowMs = 0;
  let last: Array<number | null> = nodes.map(() => null);
  const emit = (node: Node, out: { journal: HolderJournalRecord[]; requests: HolderRequest[] }) => {
    node.journal.push(...out.journal);
    inFlight.push(...out.requests);
  };
  const trueBalance = () => ledger.epochBalance - (admitted.get(ledger.epoch) ?? 0);
  const unsettledSpent = (node: Node) =>
    ownUnsettledSpent(ledger, node.id, (seq) => node.holder.spentOf(ledger.keyId, seq));
  for (let step = 0; step < steps; step++) {
    let added = false;
    const roll = random();
    const node = pick(nodes);
    if (roll < 0.4) {
      const cost = 1 + Math.floor(random() * 3);
      const leaseEpoch = (seq: number) => node.journal.find((r) => r.t === "grant" && r.seq === seq);
      const out = node.holder.verify("k", cost, nowMs);
      if (out.result.type === "admitted") {
        const spend = out.journal[0]!;
        const grant = spend.t === "spend" ? leaseEpoch(spend.seq) : undefined;
        const epoch = grant?.t === "grant" ? grant.epoch : ledger.epoch;
        admitted.set(epoch, (admitted.get(epoch) ?? 0) + cost);
        node.journal.push(...out.journal);
      } else if (random() < 0.3) {
        const direct = applyCreditDirectSpend(ledger, cost);
        ledger = direct.record;
        if (direct.admitted) admitted.set(ledger.epoch, (admitted.get(ledger.epoch) ?? 0) + cost);
      }
    } else if (roll < 0.6) {
      nowMs += Math.floor(random() * 30);
      emit(node, node.holder.poll(nowMs));
    } else if (roll < 0.85 && inFlight.length > 0) {
      // Deliver one request (in any order); some are duplicated, some lost.
      const at = Math.floor(random() * inFlight.length);
      const request = inFlight[at]!;
      const fate = random();
      if (fate > 0.1) inFlight.splice(at, 1);
      if (fate > 0.05) {
        const applied = applyCreditLeaseCommand(ledger, request, { voters, policy: creditLeasePolicyDefaults });
        ledger = applied.record;
        const owner = nodes.find((n) => n.id === applied.outcome.nodeId)!;
        emit(owner, owner.holder.onOutcome(applied.outcome, nowMs));
      }
    } else if (roll < 0.88) {
      // A restart: the holder from its journal (every spend journaled, as the core rules ask).
      const restored = LeaseHolder.restore(node.id, node.journal, options);
      node.holder = restored.holder;
      node.journal.push(...restored.journal);
    } else if (roll < 0.9) {
      // The leader expires a lease (it changes nothing shown).
      const lease = ledger.leases.length === 0 ? undefined : pick(ledger.leases);
      if (lease !== undefined)
        ledger = applyCreditLeaseCommand(
          ledger,
          { type: "expireCreditLease", keyId: "k", nodeId: lease.nodeId, seq: lease.seq },
          { voters, policy: creditLeasePolicyDefaults },
        ).record;
    } else if (roll < 0.92) {
      ledger = applyCreditSet(ledger, Math.floor(random() * 150));
      for (const n of nodes) emit(n, n.holder.onEpoch("k", ledger.epoch, nowMs));
      added = true;
    } else if (roll < 0.94) {
      const delta = Math.floor(random() * 40) - 20;
      ledger = applyCreditAdjust(ledger, delta);
      added = delta > 0;
    }
    const balance = trueBalance();
    for (const [i, n] of nodes.entries()) {
      const value = formula(ledger, n, nowMs);
      const where = `seed ${seed}, step ${step}, ${n.id}: shows ${value}, true balance ${balance}`;
      if (nodeCount === 1 && value !== balance) return `${where} (one node: exact)`;
      const others = nodes.filter((o) => o !== n).reduce((sum, o) => sum + unsettledSpent(o), 0);
      if (value < balance || value > balance + others) return `${where}, others' unsettled spends ${others} (bound)`;
      const before = last[i];
      if (!added && before !== null && value > before) return `${where}: rose from ${before} without an addition`;
    }
    last = nodes.map((n) => formula(ledger, n, nowMs));
  }
  return null;
}

const seeds = Array.from({ length: 200 }, (_, i) => i + 1);

describe("the credits a node shows (leases/shown.ts)", () => {
  it("one node: exactly the true balance at every step, whatever the delivery order, restarts and resets", () => {
    for (const seed of seeds) expect(run(seed, 1, shown), `seed ${seed}`).toBeNull();
  });

  it("three nodes: within [true, true + others' unsettled spends], never rising without an addition", () => {
    for (const seed of seeds) expect(run(seed, 3, shown), `seed ${seed}`).toBeNull();
  });

  for (const [name, mutant] of Object.entries(mutants)) {
    it(`mutation check: ${name} is caught`, () => {
      const caught = seeds.map((seed) => run(seed, 1, mutant) ?? run(seed, 3, mutant)).find((v) => v !== null);
      expect(caught, `the mutant "${name}" passed every seed`).toBeDefined();
    });
  }
});
