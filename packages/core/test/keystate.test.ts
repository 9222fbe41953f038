import { describe, expect, it } from "vitest";
import { creditLedgerOf } from "../src/keystate/credit-ledgers.js";
import { applyCommand } from "../src/keystate/machine.js";
import { connectionsPerRecordMax, ratelimitsPerRecordMax } from "../src/keystate/limits.js";
import { createKeyState } from "../src/keystate/state.js";
import { ROOT_API_ID, type KeyState } from "../src/keystate/types.js";
import { snapshotKeyState } from "../src/keystate/snapshot.js";
import type { KeyCommand } from "../src/keystate/commands.js";

const nowMs = Date.UTC(2026, 0, 10);

function state(): KeyState {
  const s = createKeyState();
  const commands: KeyCommand[] = [
    { type: "createApi", apiId: "api_a", name: "a", nowMs },
    { type: "createPermission", permissionId: "perm_1", name: "p1", slug: "p1", description: null, nowMs },
    {
      type: "createKey",
      keyId: "key_1",
      apiId: "api_a",
      hash: "h1",
      start: "s",
      name: "n",
      ownerId: null,
      identity: { externalId: "user_1", newIdentityId: "id_1" },
      meta: { a: 1 },
      expiresAtMs: null,
      remaining: 5,
      refill: null,
      ratelimit: null,
      enabled: true,
      environment: "test",
      permissions: [{ name: "p1", newId: "x", create: true }],
      roles: [],
      allowCreatePermissions: false,
      allowCreateRoles: false,
      nowMs,
    },
  ];
  for (const command of commands) expect(applyCommand(s, command).ok).toBe(true);
  return s;
}

describe("key state commands", () => {
  it("the root api exists from the start and cannot be deleted", () => {
    const s = createKeyState();
    expect(s.apis.get(ROOT_API_ID)).toMatchObject({ deleteProtected: true });
    expect(applyCommand(s, { type: "deleteApi", apiId: ROOT_API_ID })).toEqual({
      ok: false,
      code: "DELETE_PROTECTED",
      message: "api api_root is protected from deletions",
    });
  });

  it("setPermissions validates everything before changing anything", () => {
    const s = state();
    const before = snapshotKeyState(s);
    const outcome = applyCommand(s, {
      type: "setPermissions",
      keyId: "key_1",
      allowCreate: true,
      nowMs,
      refs: [{ name: "new_one", newId: "perm_new", create: true }, { id: "perm_missing" }],
    });
    expect(outcome).toEqual({ ok: false, code: "NOT_FOUND", message: "permission perm_missing not found" });
    expect(snapshotKeyState(s)).toEqual(before);
    expect(
      applyCommand(s, {
        type: "setPermissions",
        keyId: "key_1",
        allowCreate: true,
        nowMs,
        refs: [{ name: "zzz", newId: "perm_z", create: false }],
      }),
    ).toEqual({ ok: false, code: "NOT_FOUND", message: "permission zzz not found and not allowed to create" });
    expect(
      applyCommand(s, {
        type: "setPermissions",
        keyId: "key_1",
        allowCreate: false,
        nowMs,
        refs: [{ name: "zzz", newId: "perm_z", create: true }],
      }),
    ).toMatchObject({ ok: false, code: "INSUFFICIENT_PERMISSIONS" });
    const replaced = applyCommand(s, {
      type: "setPermissions",
      keyId: "key_1",
      allowCreate: true,
      nowMs,
      refs: [{ name: "zzz", newId: "perm_z", create: true }, { id: "perm_1" }],
    });
    expect(replaced).toEqual({
      ok: true,
      items: [
        { id: "perm_1", name: "p1" },
        { id: "perm_z", name: "zzz" },
      ],
    });
    expect(s.keys.get("key_1")!.permissionIds).toEqual(["perm_1", "perm_z"]);
  });

  it("deleting a permission disconnects it from keys and roles", () => {
    const s = state();
    applyCommand(s, {
      type: "createRole",
      roleId: "role_1",
      name: "r",
      description: null,
      permissionIds: ["perm_1"],
      nowMs,
    });
    expect(applyCommand(s, { type: "deletePermission", permissionId: "perm_1" }).ok).toBe(true);
    expect(s.keys.get("key_1")!.permissionIds).toEqual([]);
    expect(s.roles.get("role_1")!.permissionIds).toEqual([]);
  });

  it("updateKey: identity null clears ownerId; refill checks", () => {
    const s = state();
    expect(s.keys.get("key_1")).toMatchObject({ identityId: "id_1", ownerId: "user_1" });
    expect(applyCommand(s, { type: "updateKey", keyId: "key_1", nowMs, identity: null }).ok).toBe(true);
    expect(s.keys.get("key_1")).toMatchObject({ identityId: null, ownerId: null });
    expect(
      applyCommand(s, {
        type: "updateKey",
        keyId: "key_1",
        nowMs,
        refill: { interval: "daily", amount: 3, refillDay: 2 },
      }),
    ).toEqual({ ok: false, code: "BAD_REQUEST", message: "Cannot set 'refillDay' if 'interval' is 'daily'" });
    expect(applyCommand(s, { type: "updateKey", keyId: "nope", nowMs })).toEqual({
      ok: false,
      code: "NOT_FOUND",
      message: "key nope not found",
    });
  });

  it("a refill on a key with unlimited credits is stored and fills the balance at its next instant", () => {
    const s = state();
    const refill = { interval: "daily", amount: 3, refillDay: null } as const;
    expect(applyCommand(s, { type: "updateKey", keyId: "key_1", nowMs, remaining: null, refill })).toEqual({
      ok: true,
    });
    expect(s.keys.get("key_1")).toMatchObject({ remaining: null, refill: { amount: 3, lastRefillAtMs: nowMs } });
    // Unlimited until the next 00:00 UTC: a command before it leaves the key unlimited.
    const beforeMs = nowMs + 86_400_000 - 1;
    expect(applyCommand(s, { type: "refillCredits", keyIds: ["key_1"], nowMs: beforeMs })).toEqual({
      ok: true,
      count: 0,
    });
    expect(applyCommand(s, { type: "spendCredits", keyId: "key_1", cost: 1, nowMs: beforeMs })).toEqual({
      ok: true,
      remaining: null,
    });
    const refillAtMs = nowMs + 86_400_000;
    expect(applyCommand(s, { type: "refillCredits", keyIds: ["key_1"], nowMs: refillAtMs + 5 })).toEqual({
      ok: true,
      count: 1,
    });
    expect(s.keys.get("key_1")).toMatchObject({ remaining: 3, refill: { lastRefillAtMs: refillAtMs } });
    expect(creditLedgerOf(s, "key_1")).toMatchObject({ unleased: 3, epochBalance: 3 });
    expect(applyCommand(s, { type: "spendCredits", keyId: "key_1", cost: 1, nowMs: refillAtMs + 6 })).toEqual({
      ok: true,
      remaining: 2,
    });
    // updateRemaining `set` null makes the key unlimited again and keeps its refill.
    expect(
      applyCommand(s, { type: "updateRemaining", keyId: "key_1", op: "set", value: null, nowMs: refillAtMs + 7 }),
    ).toEqual({ ok: true, remaining: null });
    expect(s.keys.get("key_1")).toMatchObject({ remaining: null, refill: { amount: 3 } });
    // A spend after the next instant materializes the refill first (any replica, the same index).
    expect(
      applyCommand(s, { type: "spendCredits", keyId: "key_1", cost: 2, nowMs: refillAtMs + 86_400_000 + 1 }),
    ).toEqual({ ok: true, remaining: 1 });
  });

  it("ensureRootKey is idempotent and refuses a secret of another api", () => {
    const s = state();
    const command: KeyCommand = {
      type: "ensureRootKey",
      keyId: "key_root",
      hash: "hr",
      start: "r",
      permissionId: "perm_star",
      nowMs,
    };
    expect(applyCommand(s, command)).toEqual({ ok: true, id: "key_root", created: true });
    expect(applyCommand(s, { ...command, keyId: "key_other" })).toEqual({ ok: true, id: "key_root", created: false });
    expect(s.keys.get("key_root")).toMatchObject({ apiId: ROOT_API_ID, permissionIds: ["perm_star"] });
    expect(applyCommand(s, { ...command, hash: "h1" })).toMatchObject({ ok: false, code: "CONFLICT" });
  });

  it("overrides: setOverride keeps the id of an existing identifier; a deleted one is created again", () => {
    const s = state();
    applyCommand(s, { type: "createNamespace", namespaceId: "ns_1", name: "email", nowMs });
    expect(applyCommand(s, { type: "createNamespace", namespaceId: "ns_2", name: "email", nowMs })).toEqual({
      ok: true,
      id: "ns_1",
    });
    const set = {
      type: "setOverride",
      namespaceId: "ns_1",
      identifier: "user_*",
      limit: 5,
      durationMs: 1000,
      async: null,
      nowMs,
    } as const;
    expect(applyCommand(s, { ...set, overrideId: "rlor_1" })).toEqual({ ok: true, id: "rlor_1" });
    expect(applyCommand(s, { ...set, overrideId: "rlor_2", limit: 7 })).toEqual({ ok: true, id: "rlor_1" });
    expect(s.overrides.get("rlor_1")!.limit).toBe(7);
    expect(applyCommand(s, { type: "deleteOverride", namespaceId: "ns_1", identifier: "user_*" }).ok).toBe(true);
    expect(applyCommand(s, { type: "deleteOverride", namespaceId: "ns_1", identifier: "user_*" })).toEqual({
      ok: false,
      code: "NOT_FOUND",
      message: "Override with user_* identifier not found",
    });
    expect(applyCommand(s, { ...set, overrideId: "rlor_3" })).toEqual({ ok: true, id: "rlor_3" });
    expect(applyCommand(s, { ...set, namespaceId: "ns_9", overrideId: "rlor_4" })).toMatchObject({
      ok: false,
      code: "NOT_FOUND",
    });
  });

  it("spendCredits re-checks the balance at apply time", () => {
    const s = state();
    expect(applyCommand(s, { type: "spendCredits", keyId: "key_1", cost: 5, nowMs })).toEqual({
      ok: true,
      remaining: 0,
    });
    expect(applyCommand(s, { type: "spendCredits", keyId: "key_1", cost: 1, nowMs })).toMatchObject({
      ok: false,
      code: "USAGE_EXCEEDED",
    });
    expect(s.keys.get("key_1")!.remaining).toBe(0);
  });

  it("bounds connections per key and limits per identity: at the limit and one past it", () => {
    const s = state();
    const refs = (n: number) =>
      Array.from({ length: n }, (_, i) => ({ name: `p_${i}`, newId: `perm_n${i}`, create: true }));
    const before = snapshotKeyState(s);
    expect(
      applyCommand(s, {
        type: "setPermissions",
        keyId: "key_1",
        allowCreate: true,
        nowMs,
        refs: refs(connectionsPerRecordMax + 1),
      }),
    ).toMatchObject({ ok: false, code: "BAD_REQUEST" });
    expect(snapshotKeyState(s)).toEqual(before);
    expect(
      applyCommand(s, {
        type: "setPermissions",
        keyId: "key_1",
        allowCreate: true,
        nowMs,
        refs: refs(connectionsPerRecordMax),
      }).ok,
    ).toBe(true);
    expect(s.keys.get("key_1")!.permissionIds).toHaveLength(connectionsPerRecordMax);
    const limits = (n: number) => Array.from({ length: n }, (_, i) => ({ name: `l_${i}`, limit: 1, durationMs: 1000 }));
    const create = { type: "createIdentity", environment: "default", meta: null, nowMs } as const;
    expect(
      applyCommand(s, {
        ...create,
        identityId: "id_a",
        externalId: "a",
        ratelimits: limits(ratelimitsPerRecordMax + 1),
      }),
    ).toMatchObject({ ok: false });
    expect(
      applyCommand(s, { ...create, identityId: "id_a", externalId: "a", ratelimits: limits(ratelimitsPerRecordMax) })
        .ok,
    ).toBe(true);
  });
});
