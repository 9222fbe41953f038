import { describe, expect, it } from "vitest";
import { applyCommand } from "../src/keystate/machine.js";
import { createKeyState } from "../src/keystate/state.js";
import { snapshotKeyState } from "../src/keystate/snapshot.js";
import type { ImportedKey } from "../src/keystate/commands.js";

const nowMs = Date.UTC(2026, 0, 10);
const imported = (i: number, overrides: Partial<ImportedKey> = {}): ImportedKey => ({
  keyId: `key_${i}`,
  apiId: "api_1",
  hash: `hash_${i}`,
  start: "abc",
  name: null,
  ownerId: null,
  identity: null,
  meta: null,
  expiresAtMs: null,
  remaining: null,
  refill: null,
  ratelimit: null,
  enabled: true,
  environment: null,
  permissions: [],
  roles: [],
  ...overrides,
});

function withApi() {
  const state = createKeyState();
  expect(applyCommand(state, { type: "createApi", apiId: "api_1", name: "a", nowMs }).ok).toBe(true);
  return state;
}

describe("importKeys", () => {
  it("imports keys with shared permissions, roles and identities in one command", () => {
    const state = withApi();
    const outcome = applyCommand(state, {
      type: "importKeys",
      keys: [
        imported(1, {
          permissions: [{ name: "p", newId: "perm_1", create: true }],
          identity: { externalId: "user", newIdentityId: "id_1" },
        }),
        imported(2, {
          permissions: [{ name: "p", newId: "perm_2", create: true }],
          roles: [{ name: "r", newId: "role_1", create: true }],
          identity: { externalId: "user", newIdentityId: "id_2" },
        }),
      ],
      allowCreatePermissions: true,
      allowCreateRoles: true,
      nowMs,
    });
    expect(outcome).toEqual({ ok: true, ids: ["key_1", "key_2"] });
    expect(state.keys.get("key_1")?.permissionIds).toEqual(["perm_1"]);
    expect(state.keys.get("key_2")?.permissionIds).toEqual(["perm_1"]);
    expect(state.keys.get("key_2")?.roleIds).toEqual(["role_1"]);
    expect(state.keys.get("key_1")?.identityId).toBe("id_1");
    expect(state.keys.get("key_2")?.identityId).toBe("id_1");
    expect(state.identities.size).toBe(1);
    expect(state.keys.idOfHash("hash_2")).toBe("key_2");
  });

  it("changes nothing when any entry fails (duplicate hash, not allowed to create, bad refill)", () => {
    const state = withApi();
    applyCommand(state, {
      type: "importKeys",
      keys: [imported(9)],
      allowCreatePermissions: false,
      allowCreateRoles: false,
      nowMs,
    });
    const before = JSON.stringify(snapshotKeyState(state));
    const failures = [
      [imported(1), imported(2, { hash: "hash_9" })],
      [imported(1), imported(2, { hash: "hash_1" })],
      [imported(1, { permissions: [{ name: "p", newId: "perm_1", create: true }] })],
      [
        imported(1, { identity: { externalId: "u", newIdentityId: "id_1" } }),
        imported(2, { refill: { interval: "daily", amount: 5, refillDay: null } }),
      ],
    ];
    for (const keys of failures) {
      const outcome = applyCommand(state, {
        type: "importKeys",
        keys,
        allowCreatePermissions: false,
        allowCreateRoles: false,
        nowMs,
      });
      expect(outcome.ok).toBe(false);
      expect(JSON.stringify(snapshotKeyState(state))).toBe(before);
    }
    expect(
      applyCommand(state, {
        type: "importKeys",
        keys: [imported(1, { apiId: "api_nope" })],
        allowCreatePermissions: false,
        allowCreateRoles: false,
        nowMs,
      }),
    ).toMatchObject({ ok: false, code: "NOT_FOUND" });
  });
});

describe("deleteKeys", () => {
  it("deletes every key of the api and reports the count; the root api is protected", () => {
    const state = withApi();
    applyCommand(state, {
      type: "importKeys",
      keys: [imported(1), imported(2)],
      allowCreatePermissions: false,
      allowCreateRoles: false,
      nowMs,
    });
    expect(applyCommand(state, { type: "deleteKeys", apiId: "api_1" })).toEqual({ ok: true, count: 2 });
    expect(state.keys.size).toBe(0);
    expect(state.keys.hasHash("hash_1") || state.keys.hasHash("hash_2")).toBe(false);
    expect(state.keys.countOfApi("api_1")).toBe(0);
    expect(state.apis.has("api_1")).toBe(true);
    expect(applyCommand(state, { type: "deleteKeys", apiId: "api_root" })).toMatchObject({
      ok: false,
      code: "DELETE_PROTECTED",
    });
  });
});
