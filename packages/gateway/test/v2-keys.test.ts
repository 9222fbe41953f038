import { afterEach, describe, expect, it } from "vitest";
import { harness, type Harness } from "./app-harness.js";
import { dataOf, problemOf, v2 } from "./v2-harness.js";

let h: Harness;
afterEach(async () => {
  await h?.app.close();
});

async function createV2Key(body: Record<string, unknown>, apiId?: string) {
  const api = apiId ?? (await h.createApi());
  const created = dataOf<{ keyId: string; key: string }>(await v2(h, "keys.createKey", { apiId: api, ...body }));
  return { apiId: api, ...created };
}

async function createRole(name: string, permissions: string[] = []) {
  for (const slug of permissions) await h.post("/v1/permissions.createPermission", { name: slug });
  const response = await h.post("/v1/permissions.createRole", { name, permissions });
  expect(response.statusCode, response.body).toBe(200);
  return (response.json() as { roleId: string }).roleId;
}

describe("keys.createKey", () => {
  it("creates a key with every field and getKey shows it in v2's shape", async () => {
    h = await harness();
    await createRole("admin");
    const { keyId, key } = await createV2Key({
      prefix: "sk",
      name: "k",
      byteLength: 20,
      externalId: "user_1",
      meta: { plan: "pro" },
      roles: ["admin"],
      permissions: ["documents.read", "documents.*", "2fa.read", "api:read"],
      expires: h.clock.nowMs + 86_400_000,
      credits: { remaining: 10, refill: { interval: "monthly", amount: 10, refillDay: 5 } },
      ratelimits: [{ name: "requests", limit: 10, duration: 60_000, autoApply: true }],
      enabled: true,
    });
    expect(keyId).toMatch(/^key_/);
    expect(key.startsWith("sk_")).toBe(true);
    const got = dataOf<Record<string, unknown>>(await v2(h, "keys.getKey", { keyId }));
    expect(got).toMatchObject({
      keyId,
      start: key.slice(0, 7),
      enabled: true,
      name: "k",
      meta: { plan: "pro" },
      expires: h.clock.nowMs + 86_400_000,
      roles: ["admin"],
      credits: { remaining: 10, refill: { interval: "monthly", amount: 10, refillDay: 5 } },
      identity: { externalId: "user_1" },
      ratelimits: [{ name: "requests", limit: 10, duration: 60_000, autoApply: true }],
    });
    expect(got["permissions"]).toEqual(["2fa.read", "api:read", "documents.*", "documents.read"]);
    expect((got["ratelimits"] as { id: string }[])[0]?.id).toMatch(/^rl_/);
    expect(got).not.toHaveProperty("updatedAt");
  });

  it("a minimal key omits every optional field; credits.remaining null is unlimited; 0 is allowed", async () => {
    h = await harness();
    const { keyId } = await createV2Key({});
    const got = dataOf<Record<string, unknown>>(await v2(h, "keys.getKey", { keyId }));
    expect(Object.keys(got).sort()).toEqual(["createdAt", "enabled", "keyId", "start"]);
    const unlimited = await createV2Key({ credits: { remaining: null } });
    expect(dataOf(await v2(h, "keys.getKey", { keyId: unlimited.keyId }))).not.toHaveProperty("credits");
    const empty = await createV2Key({ credits: { remaining: 0 } });
    expect(dataOf(await v2(h, "keys.getKey", { keyId: empty.keyId }))).toMatchObject({ credits: { remaining: 0 } });
  });

  it("400s: refill without remaining, monthly without day, bounds, unknown fields, duplicate limit names", async () => {
    h = await harness();
    const apiId = await h.createApi();
    const bad = async (body: Record<string, unknown>) =>
      problemOf(await v2(h, "keys.createKey", { apiId, ...body }), 400, "unkey/application/invalid_input");
    expect((await bad({ credits: { remaining: null, refill: { interval: "daily", amount: 5 } } })).detail).toContain(
      "credits.remaining",
    );
    expect((await bad({ credits: { refill: { interval: "daily", amount: 5 } } })).detail).toContain(
      "credits.remaining",
    );
    expect((await bad({ credits: { remaining: 5, refill: { interval: "monthly", amount: 5 } } })).detail).toBe(
      "`refillDay` must be provided when the refill interval is `monthly`.",
    );
    const huge = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`f${i}`, "x".repeat(700)]));
    expect((await bad({ meta: huge })).detail).toMatch(/metadata is too large/);
    await bad({ meta: Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`f${i}`, i])) });
    await bad({ byteLength: 15 });
    await bad({ byteLength: 256 });
    await bad({ prefix: "a".repeat(17) });
    await bad({ expires: -1 });
    await bad({ permissions: [""] });
    await bad({ permissions: ["a".repeat(129)] });
    await bad({ roles: ["a".repeat(129)] });
    await bad({ ownerId: "user_1" });
    await bad({
      ratelimits: [
        { name: "abc", limit: 1, duration: 1000, autoApply: false },
        { name: "abc", limit: 2, duration: 1000, autoApply: false },
      ],
    });
    await bad({ ratelimits: [{ name: "abc", limit: 0, duration: 1000, autoApply: false }] });
    await bad({ ratelimits: [{ name: "abc", limit: 1, duration: 999, autoApply: false }] });
    problemOf(await v2(h, "keys.createKey", { apiId: "ap" }), 400, "unkey/application/invalid_input");
    // daily with a refillDay is accepted and the day ignored.
    const daily = await createV2Key(
      { credits: { remaining: 5, refill: { interval: "daily", amount: 5, refillDay: 3 } } },
      apiId,
    );
    expect(dataOf(await v2(h, "keys.getKey", { keyId: daily.keyId }))).toMatchObject({
      credits: { remaining: 5, refill: { interval: "daily", amount: 5 } },
    });
  });

  it("a missing api and a missing permission answer the same 404; unknown roles are 404; recoverable is 412", async () => {
    h = await harness();
    const apiId = await h.createApi();
    const missing = problemOf(await v2(h, "keys.createKey", { apiId: "api_nope" }), 404, "unkey/data/api_not_found");
    expect(missing.detail).toBe("The specified API was not found.");
    const other = await h.rootKeyWith(["api.api_other.create_key"]);
    const masked = problemOf(await v2(h, "keys.createKey", { apiId }, other), 404, "unkey/data/api_not_found");
    expect(masked.detail).toBe(missing.detail);
    const none = await h.rootKeyWith([]);
    problemOf(await v2(h, "keys.createKey", { apiId }, none), 404, "unkey/data/api_not_found");
    const scoped = await h.rootKeyWith([`api.${apiId}.create_key`]);
    dataOf(await v2(h, "keys.createKey", { apiId }, scoped));
    const role = problemOf(await v2(h, "keys.createKey", { apiId, roles: ["nope"] }), 404, "unkey/data/role_not_found");
    expect(role.detail).toBe("Role 'nope' was not found.");
    problemOf(
      await v2(h, "keys.createKey", { apiId, recoverable: true }),
      412,
      "unkey/application/precondition_failed",
    );
    // Keys of api_root (root keys) need `*`.
    const creator = await h.rootKeyWith(["api.*.create_key"]);
    problemOf(
      await v2(h, "keys.createKey", { apiId: "api_root" }, creator),
      403,
      "unkey/authorization/insufficient_permissions",
    );
  });
});

describe("keys.getKey and keys.whoami", () => {
  it("404 for missing or deleted keys; 403 for a missing read permission (getKey), masked 404 (whoami)", async () => {
    h = await harness();
    const { keyId, key, apiId } = await createV2Key({ name: "k" });
    problemOf(await v2(h, "keys.getKey", { keyId: "key_nope" }), 404, "unkey/data/key_not_found");
    const other = await h.rootKeyWith(["api.api_other.read_key"]);
    problemOf(await v2(h, "keys.getKey", { keyId }, other), 403, "unkey/authorization/insufficient_permissions");
    problemOf(await v2(h, "keys.getKey", { keyId, decrypt: true }), 412, "unkey/application/precondition_failed");
    const reader = await h.rootKeyWith([`api.${apiId}.read_key`]);
    expect(dataOf(await v2(h, "keys.getKey", { keyId }, reader))).toMatchObject({ keyId, name: "k" });
    expect(dataOf(await v2(h, "keys.whoami", { key }, reader))).toMatchObject({ keyId, name: "k" });
    const whoMissing = problemOf(await v2(h, "keys.whoami", { key: "nope" }), 404, "unkey/data/key_not_found");
    const whoMasked = problemOf(await v2(h, "keys.whoami", { key }, other), 404, "unkey/data/key_not_found");
    expect(whoMasked.detail).toBe(whoMissing.detail);
    dataOf(await v2(h, "keys.deleteKey", { keyId }));
    problemOf(await v2(h, "keys.getKey", { keyId }), 404, "unkey/data/key_not_found");
    problemOf(await v2(h, "keys.deleteKey", { keyId }), 404, "unkey/data/key_not_found");
  });

  it("whoami does not count as a verification", async () => {
    h = await harness();
    const { key, keyId } = await createV2Key({ credits: { remaining: 1 } });
    for (let i = 0; i < 3; i++) dataOf(await v2(h, "keys.whoami", { key }));
    expect(h.machine.state.keys.get(keyId)?.remaining).toBe(1);
  });
});

describe("keys.updateKey", () => {
  it("three-state fields: absent keeps, null clears, a value sets", async () => {
    h = await harness();
    const { keyId } = await createV2Key({
      name: "before",
      meta: { a: 1 },
      expires: h.clock.nowMs + 60_000,
      externalId: "user_1",
      credits: { remaining: 5, refill: { interval: "daily", amount: 5 } },
    });
    const get = async () => dataOf<Record<string, unknown>>(await v2(h, "keys.getKey", { keyId }));
    dataOf(await v2(h, "keys.updateKey", { keyId, enabled: false }));
    expect(await get()).toMatchObject({
      name: "before",
      meta: { a: 1 },
      enabled: false,
      identity: { externalId: "user_1" },
    });
    expect(await get()).toHaveProperty("updatedAt");
    dataOf(await v2(h, "keys.updateKey", { keyId, name: null, meta: null, expires: null, externalId: null }));
    const cleared = await get();
    for (const field of ["name", "meta", "expires", "identity"]) expect(cleared).not.toHaveProperty(field);
    dataOf(await v2(h, "keys.updateKey", { keyId, credits: { refill: null } }));
    expect(await get()).toMatchObject({ credits: { remaining: 5 } });
    expect((await get())["credits"]).not.toHaveProperty("refill");
    dataOf(await v2(h, "keys.updateKey", { keyId, credits: { refill: { interval: "daily", amount: 9 } } }));
    expect(await get()).toMatchObject({ credits: { remaining: 5, refill: { interval: "daily", amount: 9 } } });
    dataOf(await v2(h, "keys.updateKey", { keyId, credits: { remaining: null } }));
    expect(await get()).not.toHaveProperty("credits");
    dataOf(await v2(h, "keys.updateKey", { keyId, credits: { remaining: 3 } }));
    dataOf(await v2(h, "keys.updateKey", { keyId, credits: null }));
    expect(await get()).not.toHaveProperty("credits");
    const daily = problemOf(
      await v2(h, "keys.updateKey", {
        keyId,
        credits: { remaining: 1, refill: { interval: "daily", amount: 1, refillDay: 4 } },
      }),
      400,
      "unkey/application/invalid_input",
    );
    expect(daily.detail).toBe("`refillDay` must not be provided when the refill interval is `daily`.");
  });

  it("ratelimits: set semantics by name, ids kept for updated names; roles and permissions replace", async () => {
    h = await harness();
    await createRole("admin");
    const { keyId } = await createV2Key({
      ratelimits: [
        { name: "keep", limit: 1, duration: 1000, autoApply: false },
        { name: "drop", limit: 1, duration: 1000, autoApply: false },
      ],
      permissions: ["a"],
    });
    const before = dataOf<{ ratelimits: { id: string; name: string }[] }>(await v2(h, "keys.getKey", { keyId }));
    const keepId = before.ratelimits.find((limit) => limit.name === "keep")?.id;
    dataOf(
      await v2(h, "keys.updateKey", {
        keyId,
        ratelimits: [
          { name: "keep", limit: 5, duration: 2000, autoApply: true },
          { name: "new", limit: 1, duration: 1000, autoApply: false },
        ],
        roles: ["admin"],
        permissions: ["b"],
      }),
    );
    const after = dataOf<{ ratelimits: { id: string; name: string }[]; roles: string[]; permissions: string[] }>(
      await v2(h, "keys.getKey", { keyId }),
    );
    expect(after.ratelimits.map((limit) => limit.name)).toEqual(["keep", "new"]);
    expect(after.ratelimits[0]).toEqual({ id: keepId, name: "keep", limit: 5, duration: 2000, autoApply: true });
    expect(after.roles).toEqual(["admin"]);
    expect(after.permissions).toEqual(["b"]);
    problemOf(await v2(h, "keys.updateKey", { keyId, roles: ["nope"] }), 404, "unkey/data/role_not_found");
    dataOf(await v2(h, "keys.updateKey", { keyId, ratelimits: [] }));
    expect(dataOf(await v2(h, "keys.getKey", { keyId }))).not.toHaveProperty("ratelimits");
  });

  it("404 for a deleted key, 403 without update_key", async () => {
    h = await harness();
    const { keyId } = await createV2Key({});
    const reader = await h.rootKeyWith(["api.*.read_key"]);
    problemOf(
      await v2(h, "keys.updateKey", { keyId, name: "x" }, reader),
      403,
      "unkey/authorization/insufficient_permissions",
    );
    dataOf(await v2(h, "keys.deleteKey", { keyId, permanent: false }));
    problemOf(await v2(h, "keys.updateKey", { keyId, name: "x" }), 404, "unkey/data/key_not_found");
  });
});

describe("keys.updateCredits", () => {
  it("set, increment, decrement (floored at 0) and unlimited", async () => {
    h = await harness();
    const { keyId } = await createV2Key({ credits: { remaining: 10, refill: { interval: "daily", amount: 10 } } });
    const update = async (body: Record<string, unknown>) =>
      dataOf(await v2(h, "keys.updateCredits", { keyId, ...body }));
    expect(await update({ operation: "increment", value: 5 })).toEqual({
      remaining: 15,
      refill: { interval: "daily", amount: 10 },
    });
    expect(await update({ operation: "decrement", value: 100 })).toMatchObject({ remaining: 0 });
    expect(await update({ operation: "set", value: 7 })).toMatchObject({ remaining: 7 });
    // Unlimited; the refill stays and fills the balance again at its next instant.
    expect(await update({ operation: "set", value: null })).toEqual({
      remaining: null,
      refill: { interval: "daily", amount: 10 },
    });
    const increment = problemOf(
      await v2(h, "keys.updateCredits", { keyId, operation: "increment", value: 1 }),
      400,
      "unkey/application/invalid_input",
    );
    expect(increment.detail).toBe("You cannot increment or decrement a key with unlimited credits.");
    const missing = problemOf(
      await v2(h, "keys.updateCredits", { keyId, operation: "decrement", value: null }),
      400,
      "unkey/application/invalid_input",
    );
    expect(missing.detail).toBe("When specifying an increment or decrement operation, a value must be provided.");
    expect(await update({ operation: "set" })).toEqual({ remaining: null, refill: { interval: "daily", amount: 10 } });
    problemOf(
      await v2(h, "keys.updateCredits", { keyId: "key_nope", operation: "set", value: 1 }),
      404,
      "unkey/data/key_not_found",
    );
  });
});

describe("a refill on unlimited credits", () => {
  it("is stored by updateKey and fills the balance at its next instant, through v2 and v1", async () => {
    h = await harness();
    const { keyId, key } = await createV2Key({});
    const refill = { interval: "daily", amount: 25 };
    dataOf(await v2(h, "keys.updateKey", { keyId, credits: { remaining: null, refill } }));
    expect(dataOf<{ credits?: unknown }>(await v2(h, "keys.getKey", { keyId })).credits).toEqual({
      remaining: null,
      refill,
    });
    const v1Read = (await h.get(`/v1/keys.getKey?keyId=${keyId}`)).json();
    expect(v1Read.remaining).toBeUndefined();
    expect(v1Read.refill).toMatchObject({ interval: "daily", amount: 25 });
    expect(dataOf(await v2(h, "keys.verifyKey", { key }))).not.toHaveProperty("credits");
    // Past the next 00:00 UTC the refill applies with the next command on the key (the leader's
    // daily refill, or any write: the same index on every replica).
    const dayMs = 86_400_000;
    h.clock.nowMs = (Math.floor(h.clock.nowMs / dayMs) + 1) * dayMs + 1000;
    dataOf(await v2(h, "keys.updateKey", { keyId, name: "refilled" }));
    expect(dataOf<{ credits?: unknown }>(await v2(h, "keys.getKey", { keyId })).credits).toEqual({
      remaining: 25,
      refill,
    });
    expect(dataOf(await v2(h, "keys.verifyKey", { key }))).toMatchObject({ code: "VALID", credits: 24 });
    expect((await h.get(`/v1/keys.getKey?keyId=${keyId}`)).json().remaining).toBe(24);
  });
});

describe("keys.rerollKey", () => {
  it("the new key inherits the configuration; the old one verifies until its grace period ends", async () => {
    h = await harness();
    await createRole("admin");
    const old = await createV2Key({
      prefix: "sk",
      name: "k",
      externalId: "user_1",
      meta: { a: 1 },
      roles: ["admin"],
      permissions: ["p1"],
      credits: { remaining: 10, refill: { interval: "monthly", amount: 10, refillDay: 1 } },
      ratelimits: [{ name: "req", limit: 5, duration: 60_000, autoApply: false }],
    });
    const rerolled = dataOf<{ keyId: string; key: string }>(
      await v2(h, "keys.rerollKey", { keyId: old.keyId, expiration: 90_000 }),
    );
    expect(rerolled.keyId).not.toBe(old.keyId);
    expect(rerolled.key.startsWith("sk_")).toBe(true);
    const oldView = dataOf<Record<string, unknown>>(await v2(h, "keys.getKey", { keyId: old.keyId }));
    const newView = dataOf<Record<string, unknown>>(await v2(h, "keys.getKey", { keyId: rerolled.keyId }));
    for (const field of ["name", "meta", "roles", "permissions", "credits", "identity"]) {
      expect(newView[field]).toEqual(oldView[field]);
    }
    expect((newView["ratelimits"] as object[])[0]).toMatchObject({ name: "req", limit: 5, duration: 60_000 });
    expect(newView).not.toHaveProperty("expires");
    const expires = oldView["expires"] as number;
    expect(expires).toBeGreaterThanOrEqual(h.clock.nowMs + 90_000);
    expect(expires).toBeLessThanOrEqual(h.clock.nowMs + 90_000 + 60_000);
    expect(expires % 60_000).toBe(0);
    // Through v1 verification too: valid until the end, EXPIRED after.
    const verify = async (key: string) =>
      (await h.post("/v1/keys.verifyKey", { key }, null)).json() as { code: string };
    expect((await verify(old.key)).code).toBe("VALID");
    h.clock.nowMs = expires;
    expect((await verify(old.key)).code).toBe("VALID");
    h.clock.nowMs = expires + 1;
    expect((await verify(old.key)).code).toBe("EXPIRED");
    expect((await verify(rerolled.key)).code).toBe("VALID");
  });

  it("expiration 0 expires the old key now; 403 without create_key; 404 for a missing key", async () => {
    h = await harness();
    const old = await createV2Key({});
    const reader = await h.rootKeyWith(["api.*.read_key"]);
    problemOf(
      await v2(h, "keys.rerollKey", { keyId: old.keyId, expiration: 0 }, reader),
      403,
      "unkey/authorization/insufficient_permissions",
    );
    problemOf(await v2(h, "keys.rerollKey", { keyId: "key_nope", expiration: 0 }), 404, "unkey/data/key_not_found");
    dataOf(await v2(h, "keys.rerollKey", { keyId: old.keyId, expiration: 0 }));
    expect(dataOf(await v2(h, "keys.getKey", { keyId: old.keyId }))).toMatchObject({ expires: h.clock.nowMs });
    h.clock.nowMs += 1;
    expect(((await h.post("/v1/keys.verifyKey", { key: old.key }, null)).json() as { code: string }).code).toBe(
      "EXPIRED",
    );
  });
});

describe("key permission and role links", () => {
  it("add/remove/set permissions: direct links, creation needs create_permission, unknown removal is 404", async () => {
    h = await harness();
    const { keyId } = await createV2Key({ permissions: ["a"] });
    const added = dataOf<{ slug: string; id: string; name: string }[]>(
      await v2(h, "keys.addPermissions", { keyId, permissions: ["a", "b"] }),
    );
    expect(added.map((permission) => permission.slug)).toEqual(["a", "b"]);
    expect(added[0]).toMatchObject({ id: expect.stringMatching(/^perm_/), name: "a", slug: "a" });
    dataOf(await v2(h, "keys.addPermissions", { keyId, permissions: ["b"] }));
    problemOf(await v2(h, "keys.addPermissions", { keyId, permissions: [] }), 400, "unkey/application/invalid_input");
    const removed = dataOf<{ slug: string }[]>(await v2(h, "keys.removePermissions", { keyId, permissions: ["a"] }));
    expect(removed.map((permission) => permission.slug)).toEqual(["b"]);
    const notFound = problemOf(
      await v2(h, "keys.removePermissions", { keyId, permissions: ["perm_nope"] }),
      404,
      "unkey/data/permission_not_found",
    );
    expect(notFound.detail).toBe("Permission 'perm_nope' was not found.");
    expect(dataOf(await v2(h, "keys.setPermissions", { keyId, permissions: [] }))).toEqual([]);
    const limited = await h.rootKeyWith(["api.*.update_key", "rbac.*.add_permission_to_key"]);
    problemOf(
      await v2(h, "keys.addPermissions", { keyId, permissions: ["brand.new"] }, limited),
      403,
      "unkey/authorization/insufficient_permissions",
    );
    dataOf(await v2(h, "keys.addPermissions", { keyId, permissions: ["b"] }, limited));
    const noRbac = await h.rootKeyWith(["api.*.update_key"]);
    problemOf(
      await v2(h, "keys.addPermissions", { keyId, permissions: ["b"] }, noRbac),
      403,
      "unkey/authorization/insufficient_permissions",
    );
  });

  it("add/remove/set roles: unknown roles are 404 and change nothing", async () => {
    h = await harness();
    await createRole("admin", ["read"]);
    await createRole("viewer");
    const { keyId } = await createV2Key({});
    const added = dataOf<{ name: string; permissions?: { slug: string }[] }[]>(
      await v2(h, "keys.addRoles", { keyId, roles: ["admin"] }),
    );
    expect(added).toEqual([
      expect.objectContaining({ name: "admin", permissions: [expect.objectContaining({ slug: "read" })] }),
    ]);
    problemOf(await v2(h, "keys.addRoles", { keyId, roles: ["viewer", "nope"] }), 404, "unkey/data/role_not_found");
    expect(dataOf<{ roles: string[] }>(await v2(h, "keys.getKey", { keyId })).roles).toEqual(["admin"]);
    const set = dataOf<{ name: string }[]>(await v2(h, "keys.setRoles", { keyId, roles: ["viewer"] }));
    expect(set.map((role) => role.name)).toEqual(["viewer"]);
    expect(dataOf(await v2(h, "keys.removeRoles", { keyId, roles: ["viewer"] }))).toEqual([]);
    problemOf(await v2(h, "keys.removeRoles", { keyId, roles: ["nope"] }), 404, "unkey/data/role_not_found");
    expect(dataOf(await v2(h, "keys.setRoles", { keyId, roles: [] }))).toEqual([]);
    const creator = await h.rootKeyWith(["api.*.create_key", "api.*.read_key"]);
    problemOf(
      await v2(h, "keys.removeRoles", { keyId, roles: ["viewer"] }, creator),
      403,
      "unkey/authorization/insufficient_permissions",
    );
  });
});
