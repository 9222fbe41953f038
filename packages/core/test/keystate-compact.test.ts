import { describe, expect, it } from "vitest";
import type { ImportedKey } from "../src/keystate/commands.js";
import { creditLedgerOf } from "../src/keystate/credit-ledgers.js";
import { keyDerived } from "../src/keystate/derived.js";
import { keyStateViolation } from "../src/keystate/invariants.js";
import { createCreditLedger } from "../src/leases/ledger.js";
import { derivedCacheMax } from "../src/keystate/limits.js";
import { applyCommand } from "../src/keystate/machine.js";
import { restoreKeyState, restoreKeyStateSteps, snapshotKeyState } from "../src/keystate/snapshot.js";
import { createKeyState } from "../src/keystate/state.js";
import type { KeyState } from "../src/keystate/types.js";

// The key table (key-table.ts) shares what records hold alike, and a shared value cannot be changed in place.
const nowMs = Date.UTC(2026, 0, 10);
const imported = (i: number, overrides: Partial<ImportedKey> = {}): ImportedKey => ({
  keyId: `key_${i}`,
  // A fresh string per key, as a decoded command carries it.
  apiId: ["api", "1"].join("_"),
  hash: `hash_${i}`,
  start: "abc",
  name: null,
  ownerId: null,
  identity: null,
  meta: { n: i },
  expiresAtMs: null,
  remaining: 100,
  refill: null,
  ratelimit: { limit: 10, durationMs: 60_000 },
  enabled: true,
  environment: null,
  permissions: [],
  roles: [],
  ...overrides,
});

function importKeys(state: KeyState, from: number, to: number, overrides: Partial<ImportedKey> = {}): void {
  for (let start = from; start < to; start += 1000) {
    const keys: ImportedKey[] = [];
    for (let i = start; i < Math.min(to, start + 1000); i++) keys.push(imported(i, overrides));
    const outcome = applyCommand(state, {
      type: "importKeys",
      keys,
      allowCreatePermissions: false,
      allowCreateRoles: false,
      nowMs,
    });
    expect(outcome.ok).toBe(true);
  }
}

function withApi(): KeyState {
  const state = createKeyState();
  expect(applyCommand(state, { type: "createApi", apiId: "api_1", name: "a", nowMs }).ok).toBe(true);
  return state;
}

describe("compact key records", () => {
  it("keys with equal limits, no roles and untouched ledgers share those values, frozen", () => {
    const state = withApi();
    importKeys(state, 0, 3);
    importKeys(state, 3, 4, { ratelimit: { limit: 11, durationMs: 60_000 } });
    const [a, b, c, d] = [0, 1, 2, 3].map((i) => state.keys.get(`key_${i}`)!);
    expect(a!.ratelimits).toEqual([{ name: "default", limit: 10, durationMs: 60_000, autoApply: true }]);
    expect(b!.ratelimits).toBe(a!.ratelimits);
    expect(c!.roleIds).toBe(a!.permissionIds);
    expect(d!.ratelimits).not.toBe(a!.ratelimits);
    expect(d!.ratelimits[0]?.limit).toBe(11);
    expect(a!.apiId).toBe(state.apis.get("api_1")!.id);
    expect(Object.isFrozen(a!.ratelimits) && Object.isFrozen(a!.ratelimits[0]) && Object.isFrozen(a!.roleIds)).toBe(
      true,
    );
    expect(() => (a!.roleIds as string[]).push("role_x")).toThrow(TypeError);
    // Untouched ledgers are not stored: read, each is a new ledger of the key's balance, whose
    // empty lists are the shared frozen ones.
    expect(state.creditLedgers.size).toBe(0);
    const ledgers = [0, 1].map((i) => creditLedgerOf(state, `key_${i}`)!);
    expect(ledgers[0]).toEqual(createCreditLedger("key_0", 100));
    expect(ledgers[0]!.leases).toBe(ledgers[1]!.leases);
    expect(() => ledgers[0]!.leases.push({ nodeId: "n1", seq: 1, granted: 1, epoch: 0, state: "open" })).toThrow(
      TypeError,
    );
  });

  it("a ledger is stored once touched, and only that one", () => {
    const state = withApi();
    importKeys(state, 0, 3);
    expect(applyCommand(state, { type: "spendCredits", keyId: "key_1", cost: 2, nowMs }).ok).toBe(true);
    expect([...state.creditLedgers.keys()]).toEqual(["key_1"]);
    expect(state.creditLedgers.get("key_1")).toMatchObject({ epoch: 0, epochSpent: 2, unleased: 98 });
    expect(keyStateViolation(state)).toBeNull();
  });

  it("a key's later changes leave the others' shared values as they were", () => {
    const state = withApi();
    importKeys(state, 0, 2);
    const outcome = applyCommand(state, {
      type: "setPermissions",
      keyId: "key_0",
      refs: [{ name: "p", newId: "perm_1", create: true }],
      allowCreate: true,
      nowMs,
    });
    expect(outcome.ok).toBe(true);
    expect(state.keys.get("key_0")!.permissionIds).toEqual(["perm_1"]);
    expect(state.keys.get("key_1")!.permissionIds).toEqual([]);
  });

  it("a restored state holds records equal to the snapshot's, compacted the same way", () => {
    const state = withApi();
    importKeys(state, 0, 50);
    const snapshot = snapshotKeyState(state);
    const restored = restoreKeyState(snapshot);
    expect(snapshotKeyState(restored)).toEqual(snapshot);
    expect(restored.keys.get("key_1")!.ratelimits).toBe(restored.keys.get("key_2")!.ratelimits);
    expect(restored.keys.get("key_1")!.apiId).toBe(restored.apis.get("api_1")!.id);
    expect(restored.creditLedgers.size).toBe(0);
  });

  it("a snapshot that lists every ledger (older versions) restores to the same state, untouched ones left out", () => {
    const state = withApi();
    importKeys(state, 0, 20);
    expect(applyCommand(state, { type: "spendCredits", keyId: "key_7", cost: 1, nowMs }).ok).toBe(true);
    const snapshot = snapshotKeyState(state);
    expect(snapshot.credits!.map((ledger) => ledger.keyId)).toEqual(["key_7"]);
    const listed = snapshot.keys
      .map((key) => snapshot.credits!.find((ledger) => ledger.keyId === key.id) ?? createCreditLedger(key.id, 100))
      .sort((a, b) => (a.keyId < b.keyId ? -1 : 1));
    const restored = restoreKeyState({ ...snapshot, credits: listed });
    expect([...restored.creditLedgers.keys()]).toEqual(["key_7"]);
    expect(snapshotKeyState(restored)).toEqual(snapshot);
    expect(keyStateViolation(restored)).toBeNull();
  });
});

describe("restore that adopts the snapshot's records", () => {
  it("gives the state a copying restore gives", () => {
    const state = withApi();
    importKeys(state, 0, 30);
    const copied = createKeyState();
    const copySteps = restoreKeyStateSteps(copied, snapshotKeyState(state), 7);
    while (copySteps.next().done !== true);
    const decoded = snapshotKeyState(state); // stands for a snapshot just decoded from bytes
    const adopted = createKeyState();
    const steps = restoreKeyStateSteps(adopted, decoded, 7, "adopt");
    while (steps.next().done !== true);
    expect(snapshotKeyState(adopted)).toEqual(snapshotKeyState(copied));
    expect(snapshotKeyState(adopted)).toEqual(snapshotKeyState(state));
    // Keys are held as bytes: a restored key equals the snapshot's, and keys share their limits.
    const key = decoded.keys.find((record) => record.id === "key_3")!;
    expect(adopted.keys.get("key_3")).toEqual(key);
    expect(adopted.keys.get("key_3")!.ratelimits).toBe(adopted.keys.get("key_4")!.ratelimits);
    expect(adopted.creditLedgers.size).toBe(0);
  });
});

describe("the derived cache", () => {
  it("holds at most derivedCacheMax keys, dropping the oldest, and a dropped key derives the same view again", () => {
    const state = withApi();
    const keyCount = derivedCacheMax + 10;
    importKeys(state, 0, keyCount);
    const first = keyDerived(state, state.keys.get("key_0")!);
    for (let i = 1; i < keyCount; i++) keyDerived(state, state.keys.get(`key_${i}`)!);
    expect(state.derived.size).toBe(derivedCacheMax);
    expect(state.derived.has("key_0")).toBe(false);
    expect(state.derived.has(`key_${keyCount - 1}`)).toBe(true);
    const again = keyDerived(state, state.keys.get("key_0")!);
    expect(again).not.toBe(first);
    expect(again).toEqual(first);
    expect(state.derived.size).toBe(derivedCacheMax);
  });
});
