import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { applyCommand } from "../src/keystate/machine.js";
import { createKeyState } from "../src/keystate/state.js";
import { snapshotKeyState } from "../src/keystate/snapshot.js";
import type { KeyCommand } from "../src/keystate/commands.js";
import type { KeyState } from "../src/keystate/types.js";
import { keyStateViolation } from "../src/keystate/invariants.js";
import { ledgerRemaining } from "../src/leases/ledger.js";
import { restoreKeyState, captureKeyState, readCapture } from "../src/keystate/snapshot.js";

// Properties of the credit-lease commands inside the key-state machine: replay determinism,
// snapshots, invariants (every key's `remaining` is its ledger's view), and no overspend when
// holders spend only what leases granted them.
const dayMs = 86_400_000;
const startMs = Date.UTC(2026, 0, 1, 12);
const keyIds = ["key_1", "key_2"];
const nodes = ["n1", "n2", "n3"];

function createKey(keyId: string, remaining: number | null, refillAmount: number | null, nowMs: number): KeyCommand {
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
    refill: refillAmount === null ? null : { interval: "daily", amount: refillAmount, refillDay: null },
    ratelimit: null,
    enabled: true,
    environment: null,
    permissions: [],
    roles: [],
    allowCreatePermissions: false,
    allowCreateRoles: false,
    nowMs,
  };
}

type Step =
  | { kind: "grant"; keyId: string; node: string; requested: number }
  | { kind: "spend"; keyId: string; node: string; cost: number }
  | { kind: "settle"; keyId: string; node: string }
  | { kind: "expire"; keyId: string; node: string }
  | { kind: "direct"; keyId: string; cost: number }
  | { kind: "set"; keyId: string; value: number }
  | { kind: "adjust"; keyId: string; delta: number }
  | { kind: "refill"; keyId: string }
  | { kind: "unlimited"; keyId: string }
  | { kind: "delete"; keyId: string }
  | { kind: "duplicate" }
  | { kind: "advance"; ms: number };

const pick = <T>(values: readonly T[]) => fc.constantFrom(...values);
const stepArb: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant("grant" as const),
      keyId: pick(keyIds),
      node: pick(nodes),
      requested: fc.integer({ min: 1, max: 40 }),
    }),
  },
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant("spend" as const),
      keyId: pick(keyIds),
      node: pick(nodes),
      cost: fc.integer({ min: 1, max: 5 }),
    }),
  },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("settle" as const), keyId: pick(keyIds), node: pick(nodes) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("expire" as const), keyId: pick(keyIds), node: pick(nodes) }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant("direct" as const),
      keyId: pick(keyIds),
      cost: fc.integer({ min: 0, max: 5 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("set" as const),
      keyId: pick(keyIds),
      value: fc.integer({ min: 0, max: 60 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("adjust" as const),
      keyId: pick(keyIds),
      delta: fc.integer({ min: -20, max: 20 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("refill" as const), keyId: pick(keyIds) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("unlimited" as const), keyId: pick(keyIds) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("delete" as const), keyId: pick(keyIds) }) },
  { weight: 1, arbitrary: fc.constant({ kind: "duplicate" as const }) },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant("advance" as const), ms: fc.integer({ min: 0, max: dayMs }) }),
  },
);

interface HeldLease {
  keyId: string;
  node: string;
  seq: number;
  granted: number;
  spent: number;
  epoch: number;
}

/**
 * Runs steps as a cluster would: holders spend only within their grants and report what they
 * spent. Returns the commands applied (for replay) and the credit accounting per key.
 */
function simulate(steps: readonly Step[], check: (state: KeyState) => void) {
  const state = createKeyState();
  const commands: KeyCommand[] = [];
  let nowMs = startMs;
  const apply = (command: KeyCommand) => {
    commands.push(command);
    const outcome = applyCommand(state, command);
    check(state);
    return outcome;
  };
  // supplied: credits put in (creation, sets, increments, refill resets); admitted: spent by holders or directly.
  const supplied = new Map<string, number>();
  const admitted = new Map<string, number>();
  const add = (map: Map<string, number>, keyId: string, n: number) => map.set(keyId, (map.get(keyId) ?? 0) + n);
  // Per key and epoch: credits admitted against that epoch (a lease's spends count in its epoch).
  const byEpoch = new Map<string, Map<number, number>>();
  const addEpoch = (keyId: string, epoch: number, n: number) => {
    const epochs = byEpoch.get(keyId) ?? new Map<number, number>();
    epochs.set(epoch, (epochs.get(epoch) ?? 0) + n);
    byEpoch.set(keyId, epochs);
  };
  const held: HeldLease[] = [];
  const nextSeq = new Map<string, number>();
  let lastCommand: KeyCommand | null = null;
  apply({ type: "createApi", apiId: "api_a", name: "a", nowMs });
  for (const keyId of keyIds) {
    apply(createKey(keyId, 200, 30, nowMs));
    add(supplied, keyId, 200);
  }
  const epochOf = (keyId: string) => state.creditLedgers.get(keyId)?.epoch ?? -1;
  const trackReset = (keyId: string, epochBefore: number) => {
    const ledger = state.creditLedgers.get(keyId);
    if (ledger !== undefined && ledger.epoch !== epochBefore) add(supplied, keyId, ledger.epochBalance);
  };
  for (const step of steps) {
    let command: KeyCommand | null = null;
    switch (step.kind) {
      case "advance":
        nowMs += step.ms;
        break;
      case "grant": {
        const seq = (nextSeq.get(step.node) ?? 0) + 1;
        nextSeq.set(step.node, seq);
        command = {
          type: "grantCreditLease",
          keyId: step.keyId,
          nodeId: step.node,
          seq,
          requested: step.requested,
          voters: nodes,
        };
        const outcome = apply(command);
        if (outcome.ok && outcome.lease?.type === "granted") {
          held.push({
            keyId: step.keyId,
            node: step.node,
            seq,
            granted: outcome.lease.granted,
            spent: 0,
            epoch: outcome.lease.epoch,
          });
        }
        break;
      }
      case "spend": {
        const lease = held.find(
          (l) => l.keyId === step.keyId && l.node === step.node && l.granted - l.spent >= step.cost,
        );
        if (lease !== undefined) {
          lease.spent += step.cost;
          add(admitted, step.keyId, step.cost);
          addEpoch(step.keyId, lease.epoch, step.cost);
        }
        break;
      }
      case "settle":
      case "expire": {
        const index = held.findIndex((l) => l.keyId === step.keyId && l.node === step.node);
        const lease = held[index];
        if (lease === undefined) break;
        if (step.kind === "settle") {
          held.splice(index, 1);
          command = {
            type: "creditBatch",
            commands: [
              { type: "settleCreditLease", keyId: lease.keyId, nodeId: lease.node, seq: lease.seq, spent: lease.spent },
            ],
          };
        } else {
          command = { type: "expireCreditLease", keyId: lease.keyId, nodeId: lease.node, seq: lease.seq };
        }
        apply(command);
        break;
      }
      case "direct": {
        const before = epochOf(step.keyId);
        command = { type: "spendCredits", keyId: step.keyId, cost: step.cost, nowMs };
        const outcome = apply(command);
        trackReset(step.keyId, before);
        if (outcome.ok && outcome.remaining !== null) {
          add(admitted, step.keyId, step.cost);
          addEpoch(step.keyId, epochOf(step.keyId), step.cost);
        }
        break;
      }
      case "set": {
        const before = epochOf(step.keyId);
        command = { type: "updateRemaining", keyId: step.keyId, op: "set", value: step.value, nowMs };
        apply(command);
        trackReset(step.keyId, before);
        break;
      }
      case "adjust": {
        const before = epochOf(step.keyId);
        const balanceBefore = state.creditLedgers.get(step.keyId)?.epochBalance ?? 0;
        command = {
          type: "updateRemaining",
          keyId: step.keyId,
          op: step.delta >= 0 ? "increment" : "decrement",
          value: Math.abs(step.delta),
          nowMs,
        };
        const outcome = apply(command);
        trackReset(step.keyId, before);
        const ledger = state.creditLedgers.get(step.keyId);
        if (outcome.ok && ledger !== undefined && ledger.epoch === before && ledger.epochBalance > balanceBefore)
          add(supplied, step.keyId, ledger.epochBalance - balanceBefore);
        break;
      }
      case "refill": {
        const before = epochOf(step.keyId);
        command = { type: "refillCredits", keyIds: [step.keyId], nowMs };
        apply(command);
        trackReset(step.keyId, before);
        break;
      }
      case "unlimited":
        command = { type: "updateKey", keyId: step.keyId, nowMs, refill: null, remaining: null };
        apply(command);
        break;
      case "delete":
        command = { type: "deleteKey", keyId: step.keyId };
        if (apply(command).ok) {
          // Holders of a deleted key's leases stop using them; new keys reuse nothing.
          for (let i = held.length - 1; i >= 0; i--) if (held[i]?.keyId === step.keyId) held.splice(i, 1);
          byEpoch.delete(step.keyId);
          apply(createKey(step.keyId, 20, null, nowMs));
          add(supplied, step.keyId, 20);
        }
        break;
      case "duplicate":
        // A late duplicate of the last command (a retried proposal): must change nothing unsafe.
        if (lastCommand !== null && lastCommand.type !== "createKey") apply(structuredClone(lastCommand));
        break;
      default: {
        const never: never = step;
        throw new Error(String(never));
      }
    }
    if (command !== null) lastCommand = command;
    for (const keyId of keyIds) {
      expect(admitted.get(keyId) ?? 0).toBeLessThanOrEqual(supplied.get(keyId) ?? 0);
      // Theorem 1 per epoch: the current epoch's admitted credits are within what left its unleased pool.
      const ledger = state.creditLedgers.get(keyId);
      if (ledger !== undefined) {
        const admittedNow = byEpoch.get(keyId)?.get(ledger.epoch) ?? 0;
        expect(admittedNow).toBeLessThanOrEqual(ledger.epochBalance - ledger.unleased);
        // The proof's accounting: every admitted credit is known spent or inside an unsettled lease's spends.
        const unsettledSpent = held
          .filter((l) => l.keyId === keyId && l.epoch === ledger.epoch)
          .reduce((sum, l) => sum + l.spent, 0);
        expect(admittedNow).toBeLessThanOrEqual(ledger.epochSpent + unsettledSpent);
      }
    }
  }
  return { state, commands, held };
}

describe("key state: credit leases", () => {
  it("keeps its invariants and never lets holders and direct spends together overspend", () => {
    fc.assert(
      fc.property(fc.array(stepArb, { minLength: 20, maxLength: 200, size: "max" }), (steps) => {
        simulate(steps, (state) => expect(keyStateViolation(state)).toBeNull());
      }),
      { numRuns: 300 },
    );
  });

  it("replays to the same state and outcomes, and snapshots restore to a state that evolves identically", () => {
    fc.assert(
      fc.property(
        fc.array(stepArb, { minLength: 10, maxLength: 120, size: "max" }),
        fc.integer({ min: 0, max: 120 }),
        (steps, cut) => {
          const { state, commands } = simulate(steps, () => undefined);
          const replay = createKeyState();
          const outcomes = commands.map((command) => applyCommand(replay, structuredClone(command)));
          expect(snapshotKeyState(replay)).toEqual(snapshotKeyState(state));
          const again = createKeyState();
          expect(commands.map((command) => applyCommand(again, structuredClone(command)))).toEqual(outcomes);
          const at = Math.min(cut, commands.length);
          const prefix = createKeyState();
          for (const command of commands.slice(0, at)) applyCommand(prefix, structuredClone(command));
          const restored = restoreKeyState(structuredClone(snapshotKeyState(prefix)));
          for (const command of commands.slice(at)) {
            expect(applyCommand(restored, structuredClone(command))).toEqual(
              applyCommand(prefix, structuredClone(command)),
            );
          }
          expect(snapshotKeyState(restored)).toEqual(snapshotKeyState(state));
          // A capture at the cut is not changed by the lease commands after it (ledgers are replaced, not edited).
          const captured = createKeyState();
          for (const command of commands.slice(0, at)) applyCommand(captured, structuredClone(command));
          const capture = captureKeyState(captured);
          const copyThen = structuredClone(readCapture(capture));
          for (const command of commands.slice(at)) applyCommand(captured, structuredClone(command));
          expect(readCapture(capture)).toEqual(copyThen);
        },
      ),
      { numRuns: 150 },
    );
  });

  it("once every lease is settled, remaining is exactly what was supplied in the epoch minus what was spent", () => {
    const state = createKeyState();
    applyCommand(state, { type: "createApi", apiId: "api_a", name: "a", nowMs: startMs });
    applyCommand(state, createKey("key_1", 100, null, startMs));
    const grant = (node: string, seq: number) =>
      applyCommand(state, {
        type: "grantCreditLease",
        keyId: "key_1",
        nodeId: node,
        seq,
        requested: 40,
        voters: nodes,
      });
    const a = grant("n1", 1);
    const b = grant("n2", 1);
    expect(a.ok && a.lease?.type).toBe("granted");
    expect(b.ok && b.lease?.type).toBe("granted");
    // Leased credits still count in remaining (the replicated view) until settled.
    expect(state.keys.get("key_1")?.remaining).toBe(100);
    expect(applyCommand(state, { type: "spendCredits", keyId: "key_1", cost: 3, nowMs: startMs })).toEqual({
      ok: true,
      remaining: 97,
    });
    const settled = applyCommand(state, {
      type: "creditBatch",
      commands: [
        { type: "settleCreditLease", keyId: "key_1", nodeId: "n1", seq: 1, spent: 5 },
        { type: "settleCreditLease", keyId: "key_1", nodeId: "n2", seq: 1, spent: 0 },
        { type: "settleCreditLease", keyId: "key_1", nodeId: "n2", seq: 1, spent: 0 },
      ],
    });
    expect(settled.ok && settled.leases?.map((l) => l.type)).toEqual(["settled", "settled", "ignored"]);
    expect(state.keys.get("key_1")?.remaining).toBe(92);
    expect(ledgerRemaining(state.creditLedgers.get("key_1")!)).toBe(92);
    // A late duplicate of an abandoned grant is refused (its seq is below the floor).
    const late = grant("n2", 1);
    expect(late.ok && late.lease).toMatchObject({ type: "refused", reason: "stale-seq" });
  });

  it("a refill at 00:00 UTC resets the ledger on the first command after the instant, the same way on every replica", () => {
    const run = () => {
      const state = createKeyState();
      applyCommand(state, { type: "createApi", apiId: "api_a", name: "a", nowMs: startMs });
      applyCommand(state, createKey("key_1", 10, 25, startMs));
      applyCommand(state, { type: "spendCredits", keyId: "key_1", cost: 8, nowMs: startMs });
      const before = applyCommand(state, { type: "refillCredits", keyIds: ["key_1"], nowMs: startMs + 1000 });
      const after = applyCommand(state, {
        type: "refillCredits",
        keyIds: ["key_1", "key_missing"],
        nowMs: startMs + dayMs,
      });
      return { state, before, after };
    };
    const one = run();
    const two = run();
    expect(one.before).toEqual({ ok: true, count: 0 });
    expect(one.after).toEqual({ ok: true, count: 1 });
    expect(one.state.keys.get("key_1")?.remaining).toBe(25);
    expect(one.state.creditLedgers.get("key_1")?.epoch).toBe(1);
    expect(snapshotKeyState(two.state)).toEqual(snapshotKeyState(one.state));
  });

  it("refuses malformed lease commands without changing anything", () => {
    const state = createKeyState();
    applyCommand(state, { type: "createApi", apiId: "api_a", name: "a", nowMs: startMs });
    applyCommand(state, createKey("key_1", 10, null, startMs));
    const before = snapshotKeyState(state);
    expect(
      applyCommand(state, {
        type: "grantCreditLease",
        keyId: "key_1",
        nodeId: "n1",
        seq: 0,
        requested: 5,
        voters: nodes,
      }).ok,
    ).toBe(false);
    expect(
      applyCommand(state, {
        type: "creditBatch",
        commands: [{ type: "settleCreditLease", keyId: "key_1", nodeId: "n1", seq: 1, spent: -1 }],
      }).ok,
    ).toBe(false);
    expect(snapshotKeyState(state)).toEqual(before);
    // Unknown or unlimited keys: a refusal or "ignored", so a holder always hears back.
    const unknown = applyCommand(state, {
      type: "grantCreditLease",
      keyId: "nope",
      nodeId: "n1",
      seq: 1,
      requested: 5,
      voters: nodes,
    });
    expect(unknown.ok && unknown.lease).toMatchObject({ type: "refused", reason: "empty" });
  });
});
