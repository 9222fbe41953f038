import { describe, expect, it } from "vitest";
import { applyCommand } from "../src/keystate/machine.js";
import { captureKeyState, readCapture, restoreKeyState } from "../src/keystate/snapshot.js";
import { createKeyState } from "../src/keystate/state.js";

describe("captureKeyState", () => {
  it("holds the live records in the order of the state's maps, and nothing applied after it", () => {
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
    const capture = captureKeyState(state);
    const captured = readCapture(capture);
    // The maps' order is the order of the log: the keys as imported (ids not in id order).
    expect(captured.keys.map((key) => key.id)).toEqual(keys.map((key) => key.keyId));
    expect(captured.keys.map((key) => key.id)).not.toEqual(captured.keys.map((key) => key.id).sort());
    expect(captured.apis.map((api) => api.id)).toEqual([...state.apis.keys()]);
    expect(captured.credits.map((ledger) => ledger.keyId)).toEqual([...state.creditLedgers.keys()]);
    expect(captured.keys).toEqual([...state.keys.values()]);
    const before = structuredClone(captured);
    // Changes after the capture do not reach it (records are replaced, never edited).
    expect(applyCommand(state, { type: "deleteKey", keyId: "key_5" }).ok).toBe(true);
    expect(applyCommand(state, { type: "updateKey", keyId: "key_6", name: "renamed", nowMs }).ok).toBe(true);
    expect(applyCommand(state, { type: "createApi", apiId: "api_2", name: "b", nowMs }).ok).toBe(true);
    expect(readCapture(capture)).toEqual(before);
    // A state restored from the capture holds the same order, so its next capture is equal.
    expect(readCapture(captureKeyState(restoreKeyState(structuredClone(before))))).toEqual(before);
  });
});
