import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { applyCommand } from "../src/keystate/machine.js";
import { createKeyState } from "../src/keystate/state.js";
import { decideVerification } from "../src/verify/decide.js";
import { SlidingWindowLimiter } from "../src/ratelimit/sliding-window.js";
import { snapshotKeyState } from "../src/keystate/snapshot.js";
import type { KeyCommand } from "../src/keystate/commands.js";
import type { KeyState } from "../src/keystate/types.js";
import type { VerifyDecision, VerifyRequest } from "../src/verify/types.js";

const t0 = Date.UTC(2026, 0, 10, 12);

type CreateKey = Extract<KeyCommand, { type: "createKey" }>;

function setup(): KeyState {
  const state = createKeyState();
  for (const command of [
    { type: "createApi", apiId: "api_a", name: "a", nowMs: t0 },
    { type: "createApi", apiId: "api_b", name: "b", nowMs: t0 },
    { type: "createPermission", permissionId: "perm_read", name: "read", slug: "read", description: null, nowMs: t0 },
    {
      type: "createRole",
      roleId: "role_admin",
      name: "admin",
      description: null,
      permissionIds: ["perm_read"],
      nowMs: t0,
    },
  ] satisfies KeyCommand[]) {
    expect(applyCommand(state, command).ok).toBe(true);
  }
  return state;
}

function addKey(state: KeyState, overrides: Partial<CreateKey> & { keyId: string }): void {
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
  expect(applyCommand(state, command)).toMatchObject({ ok: true });
}

function verify(
  state: KeyState,
  limiter: SlidingWindowLimiter,
  keyId: string,
  extra: Partial<VerifyRequest> = {},
  nowMs = t0,
) {
  const decision = decideVerification(
    state,
    limiter,
    { requestId: "req_1", hash: `hash_${keyId}`, creditCost: 1, ...extra },
    nowMs,
  );
  return decision;
}

function result(decision: ReturnType<typeof verify>): VerifyDecision {
  if (decision.kind !== "result") throw new Error(`expected a result, got 400 ${decision.message}`);
  return decision;
}

/** The result as the client sees it after JSON serialization (undefined fields dropped). */
function body(decision: ReturnType<typeof verify>): { code: string } & Record<string, unknown> {
  return JSON.parse(JSON.stringify(result(decision).result)) as { code: string } & Record<string, unknown>;
}

describe("verification order of checks (docs/api.md, keys.verifyKey)", () => {
  it("unknown key: NOT_FOUND with the minimal body, even with an invalid query", () => {
    const state = setup();
    const decision = verify(state, new SlidingWindowLimiter(), "missing", { permissions: { and: [] } });
    expect(body(decision)).toEqual({ valid: false, code: "NOT_FOUND", requestId: "req_1" });
  });

  it("DISABLED beats the api mismatch; the mismatch alone is FORBIDDEN", () => {
    const state = setup();
    addKey(state, { keyId: "k1", enabled: false });
    addKey(state, { keyId: "k2" });
    const limiter = new SlidingWindowLimiter();
    expect(body(verify(state, limiter, "k1", { apiId: "api_b" }))).toMatchObject({
      valid: false,
      code: "DISABLED",
      keyId: "k1",
    });
    expect(body(verify(state, limiter, "k2", { apiId: "api_b" }))).toMatchObject({ valid: false, code: "FORBIDDEN" });
    expect(body(verify(state, limiter, "k2", { apiId: "api_a" }))).toMatchObject({ valid: true, code: "VALID" });
  });

  it("EXPIRED only when expires < now (strict)", () => {
    const state = setup();
    addKey(state, { keyId: "k1", expiresAtMs: t0 + 10 });
    const limiter = new SlidingWindowLimiter();
    expect(body(verify(state, limiter, "k1", {}, t0 + 10)).code).toBe("VALID");
    expect(body(verify(state, limiter, "k1", {}, t0 + 11))).toMatchObject({ code: "EXPIRED", expires: t0 + 10 });
  });

  it("permission queries: invalid is a 400, missing is INSUFFICIENT_PERMISSIONS, roles count", () => {
    const state = setup();
    addKey(state, {
      keyId: "k1",
      roles: [{ name: "admin", newId: "x", create: true }],
      permissions: [{ name: "write", newId: "perm_write", create: true }],
    });
    const limiter = new SlidingWindowLimiter();
    expect(verify(state, limiter, "k1", { permissions: { and: [] } })).toEqual({
      kind: "badRequest",
      message: "permission query is invalid",
    });
    expect(body(verify(state, limiter, "k1", { permissions: { and: ["read", "write"] } })).code).toBe("VALID");
    const denied = result(verify(state, limiter, "k1", { permissions: { or: ["delete", "drop"] } }));
    expect(denied.result.code).toBe("INSUFFICIENT_PERMISSIONS");
    expect(denied.permissionMessage).toBe(
      `Missing one of these permissions: ['"delete"', '"drop"'], have: ['read', 'write']`,
    );
    expect(body(verify(state, limiter, "k1", { permissions: "" })).code).toBe("VALID");
    expect(body(verify(state, limiter, "k1"))).toMatchObject({ permissions: ["read", "write"], roles: ["admin"] });
  });

  it("rate limited keys keep their credits; the default limit is reported", () => {
    const state = setup();
    addKey(state, { keyId: "k1", ratelimit: { limit: 2, durationMs: 1000 }, remaining: 10 });
    const limiter = new SlidingWindowLimiter();
    const first = result(verify(state, limiter, "k1"));
    expect(first.result).toMatchObject({ code: "VALID", remaining: 9, ratelimit: { limit: 2, remaining: 1 } });
    expect(first.creditSpend).toEqual({ type: "spendCredits", keyId: "k1", cost: 1, nowMs: t0 });
    expect(first.touched.length).toBe(1);
    expect(result(verify(state, limiter, "k1")).result).toMatchObject({ code: "VALID", ratelimit: { remaining: 0 } });
    const limited = result(verify(state, limiter, "k1"));
    expect(limited.result).toMatchObject({ valid: false, code: "RATE_LIMITED", ratelimit: { limit: 2, remaining: 0 } });
    expect(limited.result.remaining).toBeUndefined();
    expect(limited.creditSpend).toBeUndefined();
    expect(limited.triggeredRatelimit).toBe("default");
    expect(limited.result.ratelimit!.reset).toBeGreaterThan(t0);
  });

  it("a cost for the default limit of a key without limits judges nothing (no ratelimit field), and credits are spent as usual", () => {
    const state = setup();
    addKey(state, { keyId: "k1", remaining: 10 });
    addKey(state, { keyId: "k2" });
    const limiter = new SlidingWindowLimiter();
    for (const defaultLimitCost of [0, 2]) {
      const credited = result(verify(state, limiter, "k1", { defaultLimitCost }));
      expect(credited.result).toMatchObject({ valid: true, code: "VALID", remaining: 9 });
      expect(credited.result.ratelimit).toBeUndefined();
      expect(credited.creditSpend).toEqual({ type: "spendCredits", keyId: "k1", cost: 1, nowMs: t0 });
      expect(credited.touched).toEqual([]);
      const read = result(verify(state, limiter, "k1", { defaultLimitCost, creditCost: 0 }));
      expect(read.result).toMatchObject({ code: "VALID", remaining: 10 });
      const plain = result(verify(state, limiter, "k2", { defaultLimitCost }));
      expect(plain.result).toMatchObject({ valid: true, code: "VALID" });
      expect(plain.result.ratelimit).toBeUndefined();
    }
  });

  it("several limits are judged together: one rejecting consumes nothing", () => {
    const state = setup();
    addKey(state, { keyId: "k1" });
    const limiter = new SlidingWindowLimiter();
    const both = {
      ratelimits: [
        { name: "wide", limit: 5, duration: 10_000 },
        { name: "narrow", limit: 1, duration: 10_000 },
      ],
    };
    expect(result(verify(state, limiter, "k1", both)).result.code).toBe("VALID");
    const limited = result(verify(state, limiter, "k1", both));
    expect(limited.result.code).toBe("RATE_LIMITED");
    expect(limited.triggeredRatelimit).toBe("narrow");
    // "wide" was not consumed by the rejected call: 4 left of 5.
    const wide = result(
      verify(state, limiter, "k1", { ratelimits: [{ name: "wide", limit: 5, duration: 10_000, cost: 0 }] }),
    );
    expect(wide.result.ratelimit).toMatchObject({ limit: 5, remaining: 4 });
  });

  it("unknown named limits are a 400 with upstream's message", () => {
    const state = setup();
    addKey(state, { keyId: "k1" });
    addKey(state, { keyId: "k2", identity: { externalId: "user_1", newIdentityId: "id_1" } });
    const limiter = new SlidingWindowLimiter();
    expect(verify(state, limiter, "k1", { ratelimits: [{ name: "nope" }] })).toEqual({
      kind: "badRequest",
      message: `ratelimit "nope" was requested but does not exist for key "k1" and there is no identity connected`,
      unknownRatelimit: { name: "nope", keyId: "k1", identityId: null, externalId: null },
    });
    expect(verify(state, limiter, "k2", { ratelimits: [{ name: "nope" }] })).toEqual({
      kind: "badRequest",
      message: `ratelimit "nope" was requested but does not exist for key "k2" nor identity { id: id_1, externalId: user_1}`,
      unknownRatelimit: { name: "nope", keyId: "k2", identityId: "id_1", externalId: "user_1" },
    });
  });

  it("keys of one identity share limit counters; identity limits can be named", () => {
    const state = setup();
    applyCommand(state, {
      type: "createIdentity",
      identityId: "id_1",
      externalId: "user_1",
      environment: "default",
      meta: null,
      ratelimits: [{ name: "tokens", limit: 2, durationMs: 60_000 }],
      nowMs: t0,
    });
    addKey(state, { keyId: "k1", identity: { externalId: "user_1", newIdentityId: "unused" } });
    addKey(state, { keyId: "k2", identity: { externalId: "user_1", newIdentityId: "unused" } });
    const limiter = new SlidingWindowLimiter();
    const named = { ratelimits: [{ name: "tokens" }] };
    expect(body(verify(state, limiter, "k1", named))).toMatchObject({
      code: "VALID",
      ownerId: "user_1",
      identity: { id: "id_1", externalId: "user_1", meta: {} },
    });
    expect(body(verify(state, limiter, "k2", named)).code).toBe("VALID");
    expect(body(verify(state, limiter, "k1", named)).code).toBe("RATE_LIMITED");
    // Without naming it, the identity limit (autoApply false) does not apply.
    expect(body(verify(state, limiter, "k2")).code).toBe("VALID");
  });
});

describe("credits (keyraft decision 2)", () => {
  it("a cost above the balance is USAGE_EXCEEDED and deducts nothing; cost 0 is a pure read", () => {
    const state = setup();
    addKey(state, { keyId: "k1", remaining: 3 });
    const limiter = new SlidingWindowLimiter();
    const exceeded = result(verify(state, limiter, "k1", { creditCost: 5 }));
    expect(exceeded.result).toMatchObject({ valid: false, code: "USAGE_EXCEEDED", remaining: 3 });
    expect(exceeded.creditSpend).toBeUndefined();
    const read = result(verify(state, limiter, "k1", { creditCost: 0 }));
    expect(read.result).toMatchObject({ code: "VALID", remaining: 3 });
    expect(read.creditSpend).toBeUndefined();
    const spend = result(verify(state, limiter, "k1", { creditCost: 3 }));
    expect(spend.result).toMatchObject({ code: "VALID", remaining: 0 });
    expect(applyCommand(state, spend.creditSpend!)).toEqual({ ok: true, remaining: 0 });
    expect(result(verify(state, limiter, "k1")).result).toMatchObject({ code: "USAGE_EXCEEDED", remaining: 0 });
    expect(result(verify(state, limiter, "k1", { creditCost: 0 })).result).toMatchObject({
      code: "VALID",
      remaining: 0,
    });
  });

  it("refills lazily at 00:00 UTC", () => {
    const state = setup();
    addKey(state, { keyId: "k1", remaining: 1, refill: { interval: "daily", amount: 5, refillDay: null } });
    const limiter = new SlidingWindowLimiter();
    const spend = result(verify(state, limiter, "k1"));
    applyCommand(state, spend.creditSpend!);
    expect(result(verify(state, limiter, "k1")).result.code).toBe("USAGE_EXCEEDED");
    const nextDay = Date.UTC(2026, 0, 11, 0, 0, 0, 1);
    expect(result(verify(state, limiter, "k1", {}, nextDay)).result).toMatchObject({ code: "VALID", remaining: 4 });
  });
});

describe("verification is a decision", () => {
  it("never changes the key state, and valid is true exactly for VALID", () => {
    const requestArb = fc.record({
      keyId: fc.constantFrom("k1", "k2", "k3", "missing"),
      apiId: fc.option(fc.constantFrom("api_a", "api_b"), { nil: undefined }),
      creditCost: fc.integer({ min: 0, max: 4 }),
      permissions: fc.option(fc.oneof(fc.constantFrom("read", "write"), fc.jsonValue()), { nil: undefined }),
      ratelimits: fc.option(
        fc.array(
          fc.record({
            name: fc.constantFrom("default", "x"),
            limit: fc.option(fc.integer({ min: 0, max: 3 }), { nil: undefined }),
            duration: fc.option(fc.integer({ min: 1, max: 5000 }), { nil: undefined }),
          }),
          { maxLength: 3 },
        ),
        { nil: undefined },
      ),
      advanceMs: fc.integer({ min: 0, max: 3000 }),
    });
    fc.assert(
      fc.property(fc.array(requestArb, { maxLength: 30 }), (requests) => {
        const state = setup();
        addKey(state, { keyId: "k1", remaining: 4, ratelimit: { limit: 2, durationMs: 1000 } });
        addKey(state, { keyId: "k2", enabled: false });
        addKey(state, {
          keyId: "k3",
          permissions: [{ name: "read", newId: "p", create: true }],
          expiresAtMs: t0 + 20_000,
        });
        const limiter = new SlidingWindowLimiter();
        let nowMs = t0;
        for (const request of requests) {
          nowMs += request.advanceMs;
          const before = snapshotKeyState(state);
          const decision = verify(state, limiter, request.keyId, request, nowMs);
          expect(snapshotKeyState(state)).toEqual(before);
          if (decision.kind === "badRequest") continue;
          expect(decision.result.valid).toBe(decision.result.code === "VALID");
          if (decision.creditSpend) expect(applyCommand(state, decision.creditSpend).ok).toBe(true);
          const remaining = state.keys.get("k1")!.remaining!;
          expect(remaining).toBeGreaterThanOrEqual(0);
        }
      }),
      { numRuns: 200 },
    );
  });
});
