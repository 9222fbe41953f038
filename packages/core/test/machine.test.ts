import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { applyCommand, keyStateMachine } from "../src/keystate/machine.js";
import { createKeyState } from "../src/keystate/state.js";
import { keyCreditsAt } from "../src/keystate/apply-keys.js";
import { resolveOverride } from "../src/keystate/overrides-index.js";
import { ROOT_API_ID, type KeyState } from "../src/keystate/types.js";
import { snapshotKeyState } from "../src/keystate/snapshot.js";
import type { KeyCommand, Ref } from "../src/keystate/commands.js";
import { captureKeyState, readCapture, restoreKeyState, restoreKeyStateSteps } from "../src/keystate/snapshot.js";
import { keyStateViolation } from "../src/keystate/invariants.js";
import { matchOverride } from "../src/overrides/match.js";

// Small pools so random commands hit existing records (and collide) often.
const apiIds = ["api_a", "api_b", ROOT_API_ID];
const keyIds = ["key_1", "key_2", "key_3", "key_4"];
const hashes = ["h1", "h2", "h3", "h4", "h5"];
// "P1" differs from "p1" only in case: slugs and role names match ignoring case.
const slugs = ["p1", "p2", "p3", "*", "P1"];
const roleNames = ["r1", "r2"];
const permissionIds = ["perm_p1", "perm_p2", "perm_x"];
const roleIds = ["role_r1", "role_r2", "role_x"];
const externalIds = ["ext_1", "ext_2"];
const identityIds = ["id_1", "id_2", "id_3"];
const namespaceIds = ["ns_1", "ns_2"];
const dayMs = 86_400_000;

const pick = <T>(values: readonly T[]) => fc.constantFrom(...values);
const nullable = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: null });
const refArb: fc.Arbitrary<Ref> = fc.oneof(
  pick([...permissionIds, ...roleIds]).map((id) => ({ id })),
  fc
    .record({ name: pick([...slugs, ...roleNames]), create: fc.boolean() })
    .map((r) => ({ ...r, newId: `${r.name.startsWith("r") ? "role" : "perm"}_${r.name}` })),
);
const refillArb = fc.oneof(
  fc.record({
    interval: fc.constant<"daily">("daily"),
    amount: fc.integer({ min: 1, max: 20 }),
    refillDay: fc.constant(null),
  }),
  fc.record({
    interval: fc.constant<"monthly">("monthly"),
    amount: fc.integer({ min: 1, max: 20 }),
    refillDay: fc.integer({ min: 1, max: 31 }),
  }),
);
const limitArb = fc.record({
  limit: fc.integer({ min: 1, max: 10 }),
  durationMs: fc.integer({ min: 1000, max: 60_000 }),
});
const identityLink = fc.record({ externalId: pick(externalIds), newIdentityId: pick(identityIds) });

/** Commands over the pools; nowMs is filled in by the sequence (non-decreasing time). */
// The generators build object literals whose `type` TypeScript widens to string; the cast below
// restores the union (the machine's runtime checks are what the properties exercise).
const commandArb = fc.oneof(
  fc
    .record({ apiId: pick(apiIds), name: fc.string() })
    .map((c) => (nowMs: number) => ({ type: "createApi", ...c, nowMs })),
  pick(apiIds).map((apiId) => () => ({ type: "deleteApi", apiId })),
  fc
    .record({
      keyId: pick(keyIds),
      apiId: pick(apiIds),
      hash: pick(hashes),
      name: nullable(fc.string()),
      identity: nullable(identityLink),
      remaining: fc.oneof(fc.constant(null), fc.integer({ min: -1, max: 20 }), fc.integer({ min: 1, max: 20 })),
      refill: fc.option(refillArb, { nil: null, freq: 2 }),
      ratelimit: nullable(limitArb),
      enabled: fc.boolean(),
      permissions: fc.array(
        pick(slugs).map((name) => ({ name, newId: `perm_${name}`, create: true })),
        { maxLength: 3 },
      ),
      roles: fc.array(
        pick(roleNames).map((name) => ({ name, newId: `role_${name}`, create: true })),
        { maxLength: 2 },
      ),
      allowCreate: fc.oneof(fc.constant(true), fc.boolean()),
    })
    .map((c) => (nowMs: number) => ({
      type: "createKey",
      keyId: c.keyId,
      apiId: c.apiId,
      hash: c.hash,
      start: c.hash,
      name: c.name,
      ownerId: null,
      identity: c.identity,
      meta: c.name === null ? null : { note: c.name },
      expiresAtMs: null,
      remaining: c.remaining,
      refill: c.refill,
      ratelimit: c.ratelimit,
      enabled: c.enabled,
      environment: null,
      permissions: c.permissions,
      roles: c.roles,
      allowCreatePermissions: c.allowCreate,
      allowCreateRoles: c.allowCreate,
      nowMs,
    })),
  fc
    .record({
      keyId: pick(keyIds),
      name: fc.option(nullable(fc.string()), { nil: undefined }),
      identity: fc.option(nullable(identityLink), { nil: undefined }),
      remaining: fc.option(nullable(fc.integer({ min: 0, max: 20 })), { nil: undefined }),
      refill: fc.option(nullable(refillArb), { nil: undefined }),
      ratelimit: fc.option(nullable(limitArb), { nil: undefined }),
      enabled: fc.option(fc.boolean(), { nil: undefined }),
      roles: fc.option(fc.record({ refs: fc.array(refArb, { maxLength: 3 }), allowCreate: fc.boolean() }), {
        nil: undefined,
      }),
    })
    .map((c) => (nowMs: number) => {
      const command: KeyCommand = { type: "updateKey", keyId: c.keyId, nowMs };
      if (c.name !== undefined) command.name = c.name;
      if (c.identity !== undefined) command.identity = c.identity;
      if (c.remaining !== undefined) command.remaining = c.remaining;
      if (c.refill !== undefined) command.refill = c.refill;
      if (c.ratelimit !== undefined) command.ratelimit = c.ratelimit;
      if (c.enabled !== undefined) command.enabled = c.enabled;
      if (c.roles !== undefined) command.roles = c.roles;
      return command;
    }),
  pick(keyIds).map((keyId) => () => ({ type: "deleteKey", keyId })),
  pick(apiIds).map((apiId) => () => ({ type: "deleteKeys", apiId })),
  fc
    .record({
      keys: fc.array(
        fc.record({
          keyId: pick(keyIds),
          apiId: pick(apiIds),
          hash: pick(hashes),
          identity: nullable(identityLink),
          remaining: fc.oneof(fc.constant(null), fc.integer({ min: 0, max: 20 })),
          permissions: fc.array(
            pick(slugs).map((name) => ({ name, newId: `perm_${name}`, create: true })),
            { maxLength: 2 },
          ),
          roles: fc.array(
            pick(roleNames).map((name) => ({ name, newId: `role_${name}`, create: true })),
            { maxLength: 2 },
          ),
        }),
        { maxLength: 3 },
      ),
      allowCreate: fc.boolean(),
    })
    .map((c) => (nowMs: number) => ({
      type: "importKeys",
      keys: c.keys.map((key) => ({
        ...key,
        start: key.hash,
        name: null,
        ownerId: null,
        meta: null,
        expiresAtMs: null,
        refill: null,
        ratelimit: null,
        enabled: true,
        environment: null,
      })),
      allowCreatePermissions: c.allowCreate,
      allowCreateRoles: c.allowCreate,
      nowMs,
    })),
  fc
    .record({
      type: pick(["setPermissions", "setRoles", "addPermissions", "addRoles"] as const),
      keyId: pick(keyIds),
      refs: fc.array(refArb, { maxLength: 4 }),
      allowCreate: fc.boolean(),
    })
    .map((c) => (nowMs: number) => ({ ...c, nowMs })),
  fc
    .record({
      type: pick(["removePermissions", "removeRoles"] as const),
      keyId: pick(keyIds),
      refs: fc.array(
        fc.oneof(
          pick(permissionIds).map((id) => ({ id })),
          pick(slugs).map((name) => ({ name })),
        ),
        { maxLength: 3 },
      ),
    })
    .map((c) => () => c),
  fc
    .record({
      keyId: pick(keyIds),
      op: pick(["increment", "decrement", "set"] as const),
      value: nullable(fc.integer({ min: 0, max: 10 })),
    })
    .map((c) => (nowMs: number) => ({ type: "updateRemaining", ...c, nowMs })),
  fc.record({ permissionId: pick(permissionIds), slug: pick(slugs) }).map((c) => (nowMs: number) => ({
    type: "createPermission",
    permissionId: c.permissionId,
    name: c.slug,
    slug: c.slug,
    description: null,
    nowMs,
  })),
  pick(permissionIds).map((permissionId) => () => ({ type: "deletePermission", permissionId })),
  fc
    .record({ roleId: pick(roleIds), name: pick(roleNames), permissionIds: fc.subarray(permissionIds) })
    .map((c) => (nowMs: number) => ({ type: "createRole", ...c, description: null, nowMs })),
  fc
    .record({
      roleId: pick(roleIds),
      name: pick([...roleNames, "R1"]),
      slugs: fc.array(pick(slugs), { maxLength: 3 }),
      allowCreate: fc.boolean(),
    })
    .map((c) => (nowMs: number) => ({
      type: "createRole",
      roleId: c.roleId,
      name: c.name,
      description: null,
      permissionIds: [],
      permissions: {
        refs: c.slugs.map((name) => ({ name, newId: `perm_${name}`, create: true })),
        allowCreate: c.allowCreate,
      },
      nowMs,
    })),
  fc
    .record({ roleId: pick(roleIds), slugs: fc.array(pick(slugs), { maxLength: 4 }), allowCreate: fc.boolean() })
    .map((c) => (nowMs: number) => ({
      type: "setRolePermissions",
      roleId: c.roleId,
      refs: c.slugs.map((name) => ({ name, newId: `perm_${name}`, create: true })),
      allowCreate: c.allowCreate,
      nowMs,
    })),
  pick(roleIds).map((roleId) => () => ({ type: "deleteRole", roleId })),
  fc
    .record({
      identityId: pick(identityIds),
      externalId: pick(externalIds),
      ratelimits: fc.array(
        fc.record({
          name: pick(["default", "x"]),
          limit: fc.integer({ min: 1, max: 5 }),
          durationMs: fc.constant(1000),
        }),
        { maxLength: 2 },
      ),
    })
    .map((c) => (nowMs: number) => ({ type: "createIdentity", ...c, environment: "default", meta: null, nowMs })),
  pick(identityIds).map((identityId) => () => ({ type: "updateIdentity", identityId, meta: { updated: true } })),
  pick(identityIds).map((identityId) => () => ({ type: "deleteIdentity", identityId })),
  fc
    .record({ namespaceId: pick(namespaceIds), name: pick(["n1", "n2", "n3"]) })
    .map((c) => (nowMs: number) => ({ type: "createNamespace", ...c, nowMs })),
  fc
    .record({
      overrideId: pick(["rlor_1", "rlor_2", "rlor_3"]),
      namespaceId: pick(namespaceIds),
      identifier: pick(["abc", "ab*", "*", "a*c", "*c"]),
      limit: fc.integer({ min: 0, max: 9 }),
    })
    .map((c) => (nowMs: number) => ({ type: "setOverride", ...c, durationMs: 1000, async: null, nowMs })),
  fc
    .record({ namespaceId: pick(namespaceIds), identifier: pick(["abc", "ab*", "a*c", "*"]) })
    .map((c) => () => ({ type: "deleteOverride", ...c })),
  fc
    .record({ keyId: pick(keyIds), cost: fc.integer({ min: 0, max: 6 }) })
    .map((c) => (nowMs: number) => ({ type: "spendCredits", ...c, nowMs })),
  fc
    .record({ keyId: pick(keyIds), hash: pick(hashes), permissionId: pick(permissionIds) })
    .map((c) => (nowMs: number) => ({ type: "ensureRootKey", ...c, start: c.hash, nowMs })),
) as unknown as fc.Arbitrary<(nowMs: number) => KeyCommand>;

const startMs = 1_750_000_000_000;
/** A few records to start from, so that most random commands address existing ones. */
const prelude: KeyCommand[] = [
  { type: "createApi", apiId: "api_a", name: "a", nowMs: startMs },
  { type: "createApi", apiId: "api_b", name: "b", nowMs: startMs },
  { type: "createPermission", permissionId: "perm_p1", name: "p1", slug: "p1", description: null, nowMs: startMs },
  { type: "createRole", roleId: "role_r1", name: "r1", description: null, permissionIds: ["perm_p1"], nowMs: startMs },
  {
    type: "createIdentity",
    identityId: "id_1",
    externalId: "ext_1",
    environment: "default",
    meta: null,
    ratelimits: [{ name: "x", limit: 3, durationMs: 1000 }],
    nowMs: startMs,
  },
  { type: "createNamespace", namespaceId: "ns_1", name: "n1", nowMs: startMs },
];

const sequenceArb = fc
  .tuple(
    fc.constantFrom(true, true, false),
    fc.array(fc.tuple(commandArb, fc.integer({ min: 0, max: 2 * dayMs })), { maxLength: 80, size: "large" }),
  )
  .map(([withPrelude, steps]) => {
    let nowMs = startMs;
    const prefix: KeyCommand[] = withPrelude ? structuredClone(prelude) : [];
    return [
      ...prefix,
      ...steps.map(([make, stepMs]) => {
        nowMs += stepMs;
        return make(nowMs);
      }),
    ];
  });

function run(commands: readonly KeyCommand[], state: KeyState = createKeyState()) {
  const outcomes = commands.map((command) => applyCommand(state, command));
  return { state, outcomes };
}

describe("key state machine", () => {
  it("replaying a command log gives the same state and outcomes", () => {
    fc.assert(
      fc.property(sequenceArb, (commands) => {
        const first = run(commands);
        const second = run(structuredClone(commands));
        expect(second.outcomes).toEqual(first.outcomes);
        expect(snapshotKeyState(second.state)).toEqual(snapshotKeyState(first.state));
      }),
      { numRuns: 200 },
    );
  });

  it("snapshot then restore gives an equal state that evolves identically", () => {
    fc.assert(
      fc.property(sequenceArb, sequenceArb, (before, after) => {
        const original = run(before).state;
        const restored = restoreKeyState(structuredClone(snapshotKeyState(original)));
        expect(snapshotKeyState(restored)).toEqual(snapshotKeyState(original));
        const a = run(after, original);
        const b = run(structuredClone(after), restored);
        expect(b.outcomes).toEqual(a.outcomes);
        expect(snapshotKeyState(b.state)).toEqual(snapshotKeyState(a.state));
      }),
      { numRuns: 150 },
    );
  });

  it("a restore in steps gives the state of a whole restore, evolves identically, and shows nothing before its last step", () => {
    fc.assert(
      fc.property(
        sequenceArb,
        sequenceArb,
        sequenceArb,
        fc.integer({ min: 1, max: 8 }),
        (old, before, after, perStep) => {
          const source = run(before).state;
          const whole = restoreKeyState(structuredClone(snapshotKeyState(source)));
          const target = run(old).state;
          const oldSnapshot = snapshotKeyState(target);
          const steps = restoreKeyStateSteps(target, structuredClone(snapshotKeyState(source)), perStep);
          for (let step = steps.next(); step.done !== true; step = steps.next())
            expect(snapshotKeyState(target)).toEqual(oldSnapshot); // readers between steps see the old state
          expect(snapshotKeyState(target)).toEqual(snapshotKeyState(whole));
          expect(keyStateViolation(target)).toBeNull();
          const a = run(after, whole);
          const b = run(structuredClone(after), target);
          expect(b.outcomes).toEqual(a.outcomes);
          expect(snapshotKeyState(b.state)).toEqual(snapshotKeyState(a.state));
        },
      ),
      { numRuns: 100 },
    );
  });

  it("a capture is not changed by later commands (they replace records, never edit one in place)", () => {
    fc.assert(
      fc.property(sequenceArb, sequenceArb, (before, after) => {
        const state = run(before).state;
        const capture = captureKeyState(state);
        const copyThen = structuredClone(readCapture(capture));
        expect(readCapture(capture)).toEqual(snapshotKeyState(state));
        run(after, state);
        expect(readCapture(capture)).toEqual(copyThen);
      }),
      { numRuns: 150 },
    );
  });

  it("keeps its invariants, and a refused command changes nothing", () => {
    fc.assert(
      fc.property(sequenceArb, (commands) => {
        const state = createKeyState();
        for (const command of commands) {
          const before = snapshotKeyState(state);
          const outcome = applyCommand(state, command);
          expect(keyStateViolation(state)).toBeNull();
          if (!outcome.ok) expect(snapshotKeyState(state)).toEqual(before);
        }
        expect(state.apis.get(ROOT_API_ID)).toBeDefined();
      }),
      { numRuns: 300 },
    );
  });

  it("resolveOverride (exact map + wildcard index) agrees with matchOverride over the live overrides, also after restore", () => {
    fc.assert(
      fc.property(sequenceArb, (commands) => {
        const { state } = run(commands);
        const restored = restoreKeyState(structuredClone(snapshotKeyState(state)));
        for (const namespaceId of namespaceIds) {
          const live = [...state.overrides.values()].filter((override) => override.namespaceId === namespaceId);
          for (const identifier of ["abc", "abd", "xbc", "c", "ab"]) {
            const expected = matchOverride(live, identifier);
            expect(resolveOverride(state, namespaceId, identifier)).toEqual(expected);
            expect(resolveOverride(restored, namespaceId, identifier)).toEqual(expected);
          }
        }
      }),
      { numRuns: 200 },
    );
  });

  it("the ReplicatedStateMachine adapter restores in place", () => {
    const machine = keyStateMachine();
    const held = machine.state;
    machine.apply({ type: "createApi", apiId: "api_x", name: "x", nowMs: 1 });
    const snapshot = machine.snapshot();
    const other = keyStateMachine();
    other.restore(snapshot);
    expect(other.snapshot()).toEqual(snapshot);
    machine.restore(keyStateMachine().snapshot());
    expect(machine.state).toBe(held);
    expect(held.apis.has("api_x")).toBe(false);
    expect(() => machine.restore({ version: 99 })).toThrow();
  });
});

describe("credit ledger", () => {
  it("never admits more than the credits granted plus refills", () => {
    const stepArb = fc.oneof(
      fc.record({
        kind: fc.constant<"spend">("spend"),
        cost: fc.integer({ min: 0, max: 7 }),
        advanceMs: fc.integer({ min: 0, max: dayMs / 2 }),
      }),
      fc.record({ kind: fc.constant<"set">("set"), value: fc.integer({ min: 0, max: 15 }), advanceMs: fc.constant(0) }),
    );
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 30 }),
        fc.integer({ min: 1, max: 30 }),
        fc.array(stepArb, { maxLength: 80 }),
        (initial, amount, steps) => {
          const state = createKeyState();
          let nowMs = Date.UTC(2026, 0, 1, 12);
          applyCommand(state, { type: "createApi", apiId: "api_a", name: "a", nowMs });
          const created = applyCommand(state, {
            type: "createKey",
            keyId: "key_1",
            apiId: "api_a",
            hash: "h",
            start: "h",
            name: null,
            ownerId: null,
            identity: null,
            meta: null,
            expiresAtMs: null,
            remaining: initial,
            refill: { interval: "daily", amount, refillDay: null },
            ratelimit: null,
            enabled: true,
            environment: null,
            permissions: [],
            roles: [],
            allowCreatePermissions: false,
            allowCreateRoles: false,
            nowMs,
          });
          expect(created.ok).toBe(true);
          // Independent model: each UTC midnight passed grants max(0, amount - balance).
          let balance = initial;
          let granted = initial;
          let admitted = 0;
          for (const step of steps) {
            const nextMs = nowMs + step.advanceMs;
            if (Math.floor(nextMs / dayMs) > Math.floor(nowMs / dayMs) && amount > balance) {
              granted += amount - balance;
              balance = amount;
            }
            nowMs = nextMs;
            if (step.kind === "set") {
              const outcome = applyCommand(state, {
                type: "updateRemaining",
                keyId: "key_1",
                op: "set",
                value: step.value,
                nowMs,
              });
              expect(outcome.ok).toBe(true);
              granted += step.value - balance;
              balance = step.value;
              continue;
            }
            const outcome = applyCommand(state, { type: "spendCredits", keyId: "key_1", cost: step.cost, nowMs });
            if (step.cost <= balance) {
              expect(outcome).toEqual({ ok: true, remaining: balance - step.cost });
              balance -= step.cost;
              admitted += step.cost;
            } else {
              expect(outcome.ok).toBe(false);
            }
            expect(keyCreditsAt(state.keys.get("key_1")!, nowMs)).toBe(balance);
            expect(admitted).toBeLessThanOrEqual(granted);
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
