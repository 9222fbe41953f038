import { describe, expect, it } from "vitest";
import { applyCommand } from "../src/keystate/machine.js";
import { captureKeyState, captureKeyStateSteps } from "../src/keystate/snapshot.js";
import { sortedSteps } from "../src/keystate/sort-steps.js";
import { createKeyState } from "../src/keystate/state.js";

function run<T>(steps: Generator<void, T>): { value: T; steps: number } {
  let count = 0;
  for (;;) {
    const step = steps.next();
    if (step.done === true) return { value: step.value, steps: count };
    count++;
  }
}

const compareStrings = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

describe("sortedSteps", () => {
  it("sorts like Array.prototype.sort for any length, in steps, leaving its input alone", () => {
    const seed = Date.now() % 1_000_000;
    console.log(`sortedSteps seed ${seed}`);
    let x = seed;
    const random = (): number => (x = (x * 1103515245 + 12345) % 2147483648) / 2147483648;
    for (const length of [0, 1, 2, 1023, 1024, 1025, 3000, 5000]) {
      const items = Array.from({ length }, (_, i) => `id_${Math.floor(random() * 1e9)}_${i}`);
      const before = items.slice();
      const sorted = run(sortedSteps(items, compareStrings, 100));
      expect(sorted.value).toEqual(before.slice().sort(compareStrings));
      expect(items).toEqual(before);
      if (length >= 3000) expect(sorted.steps).toBeGreaterThan(length / 100);
    }
  });
});

describe("captureKeyStateSteps", () => {
  it("equals captureKeyState at its first step, whatever is applied while it sorts", () => {
    const state = createKeyState();
    const nowMs = Date.UTC(2026, 0, 10);
    expect(applyCommand(state, { type: "createApi", apiId: "api_1", name: "a", nowMs }).ok).toBe(true);
    const keys = Array.from({ length: 3000 }, (_, i) => ({
      keyId: `key_${(i * 7919) % 3000}`,
      apiId: "api_1",
      hash: `hash_${i}`,
      start: "abc",
      name: null,
      ownerId: null,
      identity: null,
      meta: null,
      expiresAtMs: null,
      remaining: i % 2 === 0 ? 10 : null,
      refill: null,
      ratelimit: null,
      enabled: true,
      environment: null,
      permissions: [],
      roles: [],
    }));
    for (let start = 0; start < keys.length; start += 1000) {
      const outcome = applyCommand(state, {
        type: "importKeys",
        keys: keys.slice(start, start + 1000),
        allowCreatePermissions: false,
        allowCreateRoles: false,
        nowMs,
      });
      expect(outcome.ok).toBe(true);
    }
    const expected = captureKeyState(state);
    // Sorted independently of sort-steps.ts, by the built-in sort.
    const byId = (a: { id: string }, b: { id: string }): number => compareStrings(a.id, b.id);
    const keysSorted = [...state.keys.values()].sort(byId);
    const apisSorted = [...state.apis.values()].sort(byId);
    const creditsSorted = [...state.creditLedgers.values()].sort((a, b) => compareStrings(a.keyId, b.keyId));
    expect(expected.keys).toEqual(keysSorted);
    const steps = captureKeyStateSteps(state, 500);
    expect(steps.next().done).toBe(false);
    // Changes after the first step do not reach the capture.
    expect(applyCommand(state, { type: "deleteKey", keyId: "key_5" }).ok).toBe(true);
    expect(applyCommand(state, { type: "createApi", apiId: "api_2", name: "b", nowMs }).ok).toBe(true);
    const captured = run(steps);
    expect(captured.steps).toBeGreaterThan(3);
    expect(captured.value).toEqual(expected);
    expect(captured.value.keys).toEqual(keysSorted);
    expect(captured.value.apis).toEqual(apisSorted);
    expect(captured.value.credits).toEqual(creditsSorted);
    expect(captured.value.keys.every((key, i) => key === keysSorted[i])).toBe(true); // the live records, uncopied
  });
});
