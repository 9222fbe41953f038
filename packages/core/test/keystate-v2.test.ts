import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { rerollGraceEndMs } from "../src/keystate/apply-reroll.js";
import { creditLedgerOf } from "../src/keystate/credit-ledgers.js";
import type { KeyCommand } from "../src/keystate/commands.js";
import { keyStateViolation } from "../src/keystate/invariants.js";
import { applyCommand } from "../src/keystate/machine.js";
import { ratelimitId } from "../src/keystate/ratelimit-id.js";
import { restoreKeyState, snapshotKeyState } from "../src/keystate/snapshot.js";
import { createKeyState } from "../src/keystate/state.js";
import type { KeyState } from "../src/keystate/types.js";
import { SlidingWindowLimiter } from "../src/ratelimit/sliding-window.js";
import { decideVerification } from "../src/verify/decide.js";
import type { VerifyDecision, VerifyRequest } from "../src/verify/types.js";

const t0 = Date.UTC(2026, 0, 10, 12);
const minuteMs = 60_000;

type CreateKey = Extract<KeyCommand, { type: "createKey" }>;

function setup(): KeyState {
  const state = createKeyState();
  expect(applyCommand(state, { type: "createApi", apiId: "api_a", name: "a", nowMs: t0 }).ok).toBe(true);
  return state;
}

function createKey(state: KeyState, overrides: Partial<CreateKey> & { keyId: string }) {
  const command: CreateKey = {
    type: "createKey",
    apiId: "api_a",
    hash: `hash_${overrides.keyId}`,
    start: "sk_",
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
    allowCreatePermissions: true,
    allowCreateRoles: true,
    nowMs: t0,
    ...overrides,
  };
  return applyCommand(state, command);
}

function verify(
  state: KeyState,
  limiter: SlidingWindowLimiter,
  hash: string,
  extra: Partial<VerifyRequest> = {},
  nowMs = t0,
): VerifyDecision {
  const decision = decideVerification(state, limiter, { requestId: "req_1", hash, creditCost: 1, ...extra }, nowMs);
  if (decision.kind !== "result") throw new Error(decision.message);
  return decision;
}

describe("named key limits and autoApply (one model for v1 and v2)", () => {
  it("createKey stores named limits sorted, v1's default auto-applied beside them; duplicates are refused", () => {
    const state = setup();
    expect(
      createKey(state, {
        keyId: "k1",
        ratelimit: { limit: 5, durationMs: minuteMs },
        ratelimits: [
          { name: "tokens", limit: 100, durationMs: 3_600_000, autoApply: false },
          { name: "burst", limit: 2, durationMs: 1000, autoApply: true },
        ],
      }),
    ).toMatchObject({ ok: true });
    expect(state.keys.get("k1")?.ratelimits).toEqual([
      { name: "burst", limit: 2, durationMs: 1000, autoApply: true },
      { name: "default", limit: 5, durationMs: minuteMs, autoApply: true },
      { name: "tokens", limit: 100, durationMs: 3_600_000, autoApply: false },
    ]);
    expect(
      createKey(state, {
        keyId: "k2",
        ratelimits: [
          { name: "x", limit: 1, durationMs: 1000 },
          { name: "x", limit: 2, durationMs: 1000 },
        ],
      }),
    ).toMatchObject({
      ok: false,
      code: "BAD_REQUEST",
      message: "Ratelimit with name 'x' is already defined in the request",
    });
    expect(state.keys.has("k2")).toBe(false);
  });

  it("updateKey ratelimits replace the whole set by name; v1's ratelimit touches only default", () => {
    const state = setup();
    createKey(state, {
      keyId: "k1",
      ratelimits: [
        { name: "a", limit: 1, durationMs: 1000, autoApply: true },
        { name: "b", limit: 2, durationMs: 1000 },
      ],
    });
    const update = (fields: Partial<Extract<KeyCommand, { type: "updateKey" }>>) =>
      applyCommand(state, { type: "updateKey", keyId: "k1", nowMs: t0, ...fields });
    expect(update({ ratelimits: [{ name: "b", limit: 9, durationMs: 2000, autoApply: true }] }).ok).toBe(true);
    expect(state.keys.get("k1")?.ratelimits).toEqual([{ name: "b", limit: 9, durationMs: 2000, autoApply: true }]);
    expect(update({ ratelimit: { limit: 3, durationMs: 1000 } }).ok).toBe(true);
    expect(state.keys.get("k1")?.ratelimits.map((limit) => limit.name)).toEqual(["b", "default"]);
    expect(update({ ratelimits: [] }).ok).toBe(true);
    expect(state.keys.get("k1")?.ratelimits).toEqual([]);
    expect(update({ ratelimits: [], ratelimit: null })).toMatchObject({ ok: false, code: "BAD_REQUEST" });
  });

  it("identity limits may be auto-applied; verification honours them without naming them", () => {
    const state = setup();
    applyCommand(state, {
      type: "createIdentity",
      identityId: "id_1",
      externalId: "user_1",
      environment: "default",
      meta: null,
      ratelimits: [{ name: "shared", limit: 1, durationMs: minuteMs, autoApply: true }],
      nowMs: t0,
    });
    createKey(state, { keyId: "k1", identity: { externalId: "user_1", newIdentityId: "unused" } });
    const limiter = new SlidingWindowLimiter();
    expect(verify(state, limiter, "hash_k1").result.code).toBe("VALID");
    expect(verify(state, limiter, "hash_k1").result.code).toBe("RATE_LIMITED");
  });

  it("key-level limits count per key, identity-level limits per identity (also for keys sharing an identity)", () => {
    const state = setup();
    applyCommand(state, {
      type: "createIdentity",
      identityId: "id_1",
      externalId: "user_1",
      environment: "default",
      meta: null,
      ratelimits: [{ name: "shared", limit: 3, durationMs: 10 * minuteMs, autoApply: false }],
      nowMs: t0,
    });
    for (const keyId of ["k1", "k2"]) {
      createKey(state, {
        keyId,
        identity: { externalId: "user_1", newIdentityId: "unused" },
        ratelimit: { limit: 1, durationMs: 1000 },
      });
    }
    const limiter = new SlidingWindowLimiter();
    // `default` (key-level, 1/s) admits one call per key, not one per identity.
    expect(verify(state, limiter, "hash_k1").result.code).toBe("VALID");
    expect(verify(state, limiter, "hash_k2").result.code).toBe("VALID");
    expect(verify(state, limiter, "hash_k1", {}, t0 + 1).result.code).toBe("RATE_LIMITED");
    // `shared` (identity-level, 3 per 10 min) is one counter for both keys.
    const named = { ratelimits: [{ name: "shared" }] };
    expect(verify(state, limiter, "hash_k1", named, t0 + 5_000).result.code).toBe("VALID");
    expect(verify(state, limiter, "hash_k2", named, t0 + 7_000).result.code).toBe("VALID");
    expect(verify(state, limiter, "hash_k2", named, t0 + 9_000).result.code).toBe("VALID");
    const fourth = verify(state, limiter, "hash_k1", named, t0 + 11_000);
    expect(fourth.result.code).toBe("RATE_LIMITED");
    expect(fourth.limits.find((limit) => limit.name === "shared")?.outcome.success).toBe(false);
    expect(fourth.limits.find((limit) => limit.name === "default")?.outcome.success).toBe(true);
  });

  it("the key's definition wins a name clash and then counts per key; ids are stable per owner and name", () => {
    const state = setup();
    applyCommand(state, {
      type: "createIdentity",
      identityId: "id_1",
      externalId: "user_1",
      environment: "default",
      meta: null,
      ratelimits: [{ name: "limit1", limit: 10, durationMs: 600_000, autoApply: true }],
      nowMs: t0,
    });
    createKey(state, {
      keyId: "k1",
      identity: { externalId: "user_1", newIdentityId: "unused" },
      ratelimits: [{ name: "limit1", limit: 1, durationMs: 10_000, autoApply: true }],
    });
    const limiter = new SlidingWindowLimiter();
    const first = verify(state, limiter, "hash_k1");
    expect(first.result.code).toBe("VALID");
    expect(first.limits).toEqual([
      {
        name: "limit1",
        id: ratelimitId("k1", "limit1"),
        limit: 1,
        durationMs: 10_000,
        autoApply: true,
        outcome: expect.objectContaining({ success: true, remaining: 0 }),
      },
    ]);
    expect(verify(state, limiter, "hash_k1").result.code).toBe("RATE_LIMITED");
    expect(ratelimitId("k1", "limit1")).toMatch(/^rl_[a-zA-Z0-9]{20}$/);
    expect(ratelimitId("k1", "limit1")).not.toBe(ratelimitId("k2", "limit1"));
  });

  it("several limits are judged together: a rejection consumes nothing and passing ones report what they would have had", () => {
    const state = setup();
    createKey(state, {
      keyId: "k1",
      ratelimits: [
        { name: "minute", limit: 12, durationMs: minuteMs, autoApply: true },
        { name: "month", limit: 200, durationMs: 30 * 86_400_000, autoApply: true },
      ],
    });
    const limiter = new SlidingWindowLimiter();
    const start = Date.UTC(2026, 0, 10, 12, 0, 0);
    for (let i = 0; i < 12; i++) expect(verify(state, limiter, "hash_k1", {}, start + i).result.code).toBe("VALID");
    const thirteenth = verify(state, limiter, "hash_k1", {}, start + 12);
    expect(thirteenth.result.code).toBe("RATE_LIMITED");
    const month = thirteenth.limits.find((limit) => limit.name === "month");
    expect(month?.outcome).toMatchObject({ success: true, remaining: 188 });
    expect(thirteenth.limits.find((limit) => limit.name === "minute")?.outcome.success).toBe(false);
  });

  it("an inline limit counts per key and reports id '' and autoApply false", () => {
    const state = setup();
    createKey(state, { keyId: "k1" });
    const limiter = new SlidingWindowLimiter();
    const inline = { ratelimits: [{ name: "requests", cost: 15, limit: 20, duration: minuteMs }] };
    const first = verify(state, limiter, "hash_k1", inline);
    expect(first.result.code).toBe("VALID");
    expect(first.limits[0]).toMatchObject({ name: "requests", id: "", autoApply: false, limit: 20 });
    expect(verify(state, limiter, "hash_k1", inline).result.code).toBe("RATE_LIMITED");
  });
});

describe("rerollKey", () => {
  it("property: the grace period ends at now + expiration rounded up to a whole minute (now itself for 0)", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 4_102_444_800_000 }),
        fc.integer({ min: 0, max: 400 * 86_400_000 }),
        (nowMs, expirationMs) => {
          const endMs = rerollGraceEndMs(nowMs, expirationMs);
          if (expirationMs === 0) expect(endMs).toBe(nowMs);
          else {
            expect(endMs % minuteMs).toBe(0);
            expect(endMs).toBeGreaterThanOrEqual(nowMs + expirationMs);
            expect(endMs).toBeLessThan(nowMs + expirationMs + minuteMs);
          }
        },
      ),
    );
  });

  it("the new key copies the configuration; the old one keeps its balance and gets the grace expiry", () => {
    const state = setup();
    applyCommand(state, {
      type: "createPermission",
      permissionId: "perm_1",
      name: "p",
      slug: "p",
      description: null,
      nowMs: t0,
    });
    createKey(state, {
      keyId: "k1",
      name: "name",
      meta: { plan: "pro" },
      remaining: 10,
      refill: { interval: "monthly", amount: 10, refillDay: 5 },
      identity: { externalId: "user_1", newIdentityId: "id_1" },
      ratelimits: [{ name: "a", limit: 1, durationMs: minuteMs, autoApply: true }],
      permissions: [{ name: "p", newId: "perm_x", create: true }],
      expiresAtMs: t0 + 86_400_000,
    });
    const outcome = applyCommand(state, {
      type: "rerollKey",
      keyId: "k1",
      newKeyId: "k2",
      hash: "hash_k2",
      start: "sk_abcd",
      oldExpiresAtMs: t0 + minuteMs,
      nowMs: t0,
    });
    expect(outcome).toEqual({ ok: true, id: "k2" });
    const old = state.keys.get("k1")!;
    const created = state.keys.get("k2")!;
    expect(old.expiresAtMs).toBe(t0 + minuteMs);
    expect(created).toMatchObject({
      apiId: "api_a",
      name: "name",
      meta: { plan: "pro" },
      remaining: 10,
      refill: old.refill,
      identityId: old.identityId,
      ratelimits: old.ratelimits,
      permissionIds: old.permissionIds,
      roleIds: old.roleIds,
      expiresAtMs: t0 + 86_400_000,
      createdAtMs: t0,
    });
    expect(creditLedgerOf(state, "k2")).toMatchObject({ unleased: 10, epoch: 0 });
    expect(keyStateViolation(state)).toBeNull();
    expect(
      applyCommand(state, {
        type: "rerollKey",
        keyId: "nope",
        newKeyId: "k3",
        hash: "hash_k3",
        start: "",
        oldExpiresAtMs: t0,
        nowMs: t0,
      }),
    ).toMatchObject({ ok: false, code: "NOT_FOUND" });
    expect(
      applyCommand(state, {
        type: "rerollKey",
        keyId: "k1",
        newKeyId: "k3",
        hash: "hash_k2",
        start: "",
        oldExpiresAtMs: t0,
        nowMs: t0,
      }),
    ).toMatchObject({ ok: false, code: "CONFLICT" });
  });

  it("property: the old key verifies VALID through its grace period and EXPIRED after, on any replica; the new key stays VALID", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 10 * minuteMs }),
        fc.array(fc.integer({ min: 0, max: 12 * minuteMs }), { minLength: 1, maxLength: 20 }),
        fc.boolean(),
        (graceMs, offsets, restoreReplica) => {
          const state = setup();
          createKey(state, { keyId: "k1", remaining: 1000 });
          const oldExpiresAtMs = t0 + graceMs;
          expect(
            applyCommand(state, {
              type: "rerollKey",
              keyId: "k1",
              newKeyId: "k2",
              hash: "hash_k2",
              start: "",
              oldExpiresAtMs,
              nowMs: t0,
            }).ok,
          ).toBe(true);
          // A replica restored from a snapshot answers the same.
          const replica = restoreReplica ? restoreKeyState(snapshotKeyState(state)) : state;
          const limiter = new SlidingWindowLimiter();
          for (const offset of offsets) {
            const at = t0 + offset;
            const old = verify(replica, limiter, "hash_k1", { creditCost: 0 }, at).result.code;
            expect(old).toBe(at > oldExpiresAtMs ? "EXPIRED" : "VALID");
            expect(verify(replica, limiter, "hash_k2", { creditCost: 0 }, at).result.code).toBe("VALID");
          }
        },
      ),
    );
  });
});

describe("migrations", () => {
  it("pending keys are imported with their migration's hash; completing rewrites the hash once", () => {
    const state = setup();
    const imported = applyCommand(state, {
      type: "importKeys",
      keys: [
        {
          keyId: "k1",
          apiId: "api_a",
          hash: "hexhash",
          start: "",
          name: null,
          ownerId: null,
          identity: null,
          meta: null,
          expiresAtMs: null,
          remaining: 0,
          refill: null,
          ratelimit: null,
          migrationId: "mig_seam",
          enabled: true,
          environment: null,
          permissions: [],
          roles: [],
        },
      ],
      allowCreatePermissions: true,
      allowCreateRoles: true,
      zeroRemainingAllowed: true,
      nowMs: t0,
    });
    expect(imported).toEqual({ ok: true, ids: ["k1"] });
    expect(state.keys.get("k1")).toMatchObject({ pendingMigrationId: "mig_seam", hash: "hexhash", remaining: 0 });
    const snapshot = snapshotKeyState(state);
    expect(restoreKeyState(snapshot).keys.get("k1")?.pendingMigrationId).toBe("mig_seam");
    const complete = {
      type: "completeMigration",
      keyId: "k1",
      migrationId: "mig_seam",
      hash: "b64",
      start: "sk_ab",
    } as const;
    expect(applyCommand(state, complete)).toEqual({ ok: true, id: "k1" });
    expect(state.keys.get("k1")).toMatchObject({ hash: "b64", start: "sk_ab" });
    expect(state.keys.get("k1")?.pendingMigrationId).toBeUndefined();
    expect(state.keys.idOfHash("b64")).toBe("k1");
    expect(state.keys.hasHash("hexhash")).toBe(false);
    expect(applyCommand(state, complete)).toMatchObject({ ok: false, code: "NOT_FOUND" });
  });

  it("skipExistingHashes skips stored and repeated hashes and imports the rest", () => {
    const state = setup();
    createKey(state, { keyId: "k0", hash: "h0" });
    const entry = (keyId: string, hash: string) => ({
      keyId,
      apiId: "api_a",
      hash,
      start: "",
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
    });
    const outcome = applyCommand(state, {
      type: "importKeys",
      keys: [entry("k1", "h0"), entry("k2", "h2"), entry("k3", "h2")],
      skipExistingHashes: true,
      allowCreatePermissions: true,
      allowCreateRoles: true,
      nowMs: t0,
    });
    expect(outcome).toEqual({ ok: true, ids: ["k2"], skipped: ["h0", "h2"] });
    expect(state.keys.has("k1")).toBe(false);
    expect(state.keys.get("k2")?.hash).toBe("h2");
  });
});

describe("snapshots", () => {
  it("a version 1 snapshot (before v2 state) still restores", () => {
    const state = setup();
    createKey(state, { keyId: "k1", ratelimit: { limit: 1, durationMs: 1000 } });
    const snapshot = { ...snapshotKeyState(state), version: 1 };
    expect(restoreKeyState(snapshot).keys.get("k1")?.ratelimits).toHaveLength(1);
    expect(() => restoreKeyState({ ...snapshot, version: 99 })).toThrow();
  });
});
