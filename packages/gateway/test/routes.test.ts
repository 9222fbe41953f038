import { afterEach, describe, expect, it } from "vitest";
import { errorOf, harness, rootKey, type Harness } from "./app-harness.js";

let h: Harness;
afterEach(async () => {
  await h?.app.close();
});

describe("apis", () => {
  it("createApi and getApi", async () => {
    h = await harness();
    const created = await h.post("/v1/apis.createApi", { name: "payments" });
    expect(created.statusCode).toBe(200);
    const { apiId } = created.json() as { apiId: string };
    expect(apiId).toMatch(/^api_/);
    const got = await h.get(`/v1/apis.getApi?apiId=${apiId}`);
    expect(got.json()).toEqual({ id: apiId, workspaceId: "ws_keyraft", name: "payments" });
    const missing = await h.get("/v1/apis.getApi?apiId=api_nope");
    expect(missing.statusCode).toBe(404);
    expect(errorOf(missing)).toMatchObject({ code: "NOT_FOUND", message: "api api_nope not found" });
    expect(errorOf(await h.post("/v1/apis.createApi", { name: "ab" })).message).toBe(
      "name: String must contain at least 3 character(s)",
    );
  });

  it("getApi authenticates before the lookup", async () => {
    h = await harness();
    const response = await h.get("/v1/apis.getApi?apiId=api_nope", null);
    expect(response.statusCode).toBe(403);
    expect(errorOf(response)).toMatchObject({ code: "UNAUTHORIZED", message: "key required" });
  });
});

describe("keys", () => {
  it("createKey checks in upstream order", async () => {
    h = await harness();
    const apiId = await h.createApi();
    expect(errorOf(await h.post("/v1/keys.createKey", { apiId: "api_nope" }))).toMatchObject({
      code: "NOT_FOUND",
      message: "api api_nope not found",
    });
    expect(errorOf(await h.post("/v1/keys.createKey", { apiId, remaining: 0 })).message).toBe(
      "remaining must be greater than 0.",
    );
    expect(
      errorOf(await h.post("/v1/keys.createKey", { apiId, refill: { interval: "daily", amount: 5 } })).message,
    ).toBe("remaining must be set if you are using refill.");
    expect(
      errorOf(
        await h.post("/v1/keys.createKey", {
          apiId,
          remaining: 5,
          refill: { interval: "daily", amount: 5, refillDay: 3 },
        }),
      ).message,
    ).toBe("when interval is set to 'daily', 'refillDay' must be null.");
    const created = await h.post("/v1/keys.createKey", { apiId, prefix: "sk", byteLength: 20 });
    const { key } = created.json() as { key: string };
    expect(key.startsWith("sk_")).toBe(true);
  });

  it("getKey, whoami, updateKey, deleteKey", async () => {
    h = await harness();
    const { apiId, keyId, key } = await h.createKey({
      name: "first",
      remaining: 5,
      refill: { interval: "monthly", amount: 10 },
      permissions: ["read"],
      roles: ["admin"],
      ratelimit: { limit: 3, duration: 2000 },
    });
    const got = await h.get(`/v1/keys.getKey?keyId=${keyId}`);
    expect(got.json()).toMatchObject({
      id: keyId,
      apiId,
      workspaceId: "ws_keyraft",
      name: "first",
      remaining: 5,
      enabled: true,
      permissions: ["read"],
      roles: ["admin"],
      refill: { interval: "monthly", amount: 10, refillDay: 1 },
      ratelimit: { async: false, limit: 3, duration: 2000, refillRate: 3, refillInterval: 2000 },
      start: key.slice(0, 5),
      createdAt: h.clock.nowMs,
    });
    expect((await h.post("/v1/keys.whoami", { key })).json()).toEqual({
      id: keyId,
      name: "first",
      remaining: 5,
      createdAt: h.clock.nowMs,
      enabled: true,
    });
    const updated = await h.post("/v1/keys.updateKey", {
      keyId,
      name: null,
      enabled: false,
      externalId: "user_9",
      meta: { a: 1 },
    });
    expect(updated.statusCode).toBe(200);
    expect(updated.json()).toEqual({});
    expect((await h.post("/v1/keys.verifyKey", { key }, null)).json()).toMatchObject({
      code: "DISABLED",
      ownerId: "user_9",
      meta: { a: 1 },
    });
    expect((await h.get(`/v1/keys.getKey?keyId=${keyId}`)).json()).not.toHaveProperty("name");
    expect((await h.post("/v1/keys.deleteKey", { keyId })).json()).toEqual({});
    expect((await h.post("/v1/keys.verifyKey", { key }, null)).json()).toMatchObject({ code: "NOT_FOUND" });
    expect(errorOf(await h.post("/v1/keys.deleteKey", { keyId }))).toMatchObject({
      code: "NOT_FOUND",
      message: `key ${keyId} not found`,
    });
  });

  it("lookups of getKey, whoami and deleteKey come before authentication (404 beats 403)", async () => {
    h = await harness();
    expect((await h.get("/v1/keys.getKey?keyId=key_nope", null)).statusCode).toBe(404);
    expect(errorOf(await h.post("/v1/keys.whoami", { key: "nope" }, null))).toMatchObject({
      code: "NOT_FOUND",
      message: "Key not found",
    });
    expect((await h.post("/v1/keys.deleteKey", { keyId: "key_nope" }, null)).statusCode).toBe(404);
    const { keyId } = await h.createKey({});
    expect(errorOf(await h.get(`/v1/keys.getKey?keyId=${keyId}`, null))).toMatchObject({
      code: "UNAUTHORIZED",
      message: "key required",
    });
  });

  it("updateKey: authentication first, then the lookup, then the permission", async () => {
    h = await harness();
    expect(errorOf(await h.post("/v1/keys.updateKey", { keyId: "key_nope" }, null)).code).toBe("UNAUTHORIZED");
    const weak = await h.rootKeyWith(["api.*.read_key"]);
    expect(errorOf(await h.post("/v1/keys.updateKey", { keyId: "key_nope" }, weak)).code).toBe("NOT_FOUND");
    const { keyId } = await h.createKey({ remaining: 4 });
    const denied = await h.post("/v1/keys.updateKey", { keyId, enabled: false }, weak);
    expect(denied.statusCode).toBe(403);
    expect(errorOf(denied).code).toBe("INSUFFICIENT_PERMISSIONS");
    // A refill on unlimited credits is stored: it fills the balance at its next instant.
    const unlimited = await h.post("/v1/keys.updateKey", {
      keyId,
      remaining: null,
      refill: { interval: "daily", amount: 1 },
    });
    expect(unlimited.statusCode, unlimited.body).toBe(200);
    const read = (await h.get(`/v1/keys.getKey?keyId=${keyId}`)).json();
    expect(read.remaining).toBeUndefined();
    expect(read.refill).toMatchObject({ interval: "daily", amount: 1 });
  });

  it("setPermissions and setRoles replace the whole set atomically", async () => {
    h = await harness();
    const { keyId, key } = await h.createKey({ permissions: ["a", "b"] });
    const missing = await h.post("/v1/keys.setPermissions", {
      keyId,
      permissions: [{ name: "c", create: true }, { id: "perm_missing" }],
    });
    expect(errorOf(missing)).toMatchObject({ code: "NOT_FOUND", message: "permission perm_missing not found" });
    expect(h.machine.state.permissionIdBySlugFolded.has("c")).toBe(false);
    const set = await h.post("/v1/keys.setPermissions", {
      keyId,
      permissions: [{ slug: "b" }, { name: "c", create: true }],
    });
    expect(set.json()).toEqual([
      { id: expect.stringMatching(/^perm_/), name: "b" },
      { id: expect.stringMatching(/^perm_/), name: "c" },
    ]);
    expect((await h.post("/v1/keys.verifyKey", { key }, null)).json()).toMatchObject({ permissions: ["b", "c"] });
    expect(errorOf(await h.post("/v1/keys.setPermissions", { keyId, permissions: [{ name: "zz" }] })).message).toBe(
      "permission zz not found and not allowed to create",
    );
    expect(errorOf(await h.post("/v1/keys.setPermissions", { keyId, permissions: [] })).message).toBe(
      "permissions: Array must contain at least 1 element(s)",
    );
    expect(errorOf(await h.post("/v1/keys.setPermissions", { keyId: "", permissions: [{ name: "b" }] })).message).toBe(
      "keyId: String must contain at least 1 character(s)",
    );
    const roles = await h.post("/v1/keys.setRoles", { keyId, roles: [{ name: "admin", create: true }] });
    expect(roles.json()).toEqual([{ id: expect.stringMatching(/^role_/), name: "admin" }]);
    expect(errorOf(await h.post("/v1/keys.setRoles", { keyId, roles: [] })).message).toBe(
      "roles: Array must contain at least 1 element(s)",
    );
    expect(errorOf(await h.post("/v1/keys.setRoles", { keyId: "key_nope", roles: [{ name: "x" }] })).code).toBe(
      "NOT_FOUND",
    );
  });

  it("setPermissions needs the remove right to disconnect (UNAUTHORIZED) and the add right to connect", async () => {
    h = await harness();
    const { keyId } = await h.createKey({ permissions: ["a"] });
    const adder = await h.rootKeyWith(["rbac.*.add_permission_to_key"]);
    expect(
      errorOf(await h.post("/v1/keys.setPermissions", { keyId, permissions: [{ name: "b", create: true }] }, adder))
        .code,
    ).toBe("UNAUTHORIZED");
    expect(
      errorOf(
        await h.post(
          "/v1/keys.setPermissions",
          { keyId, permissions: [{ name: "a" }, { name: "b", create: true }] },
          adder,
        ),
      ).code,
    ).toBe("INSUFFICIENT_PERMISSIONS");
    const remover = await h.rootKeyWith(["rbac.*.remove_permission_from_key"]);
    // A no-op needs no right at all; a pure removal needs only the remove right.
    expect((await h.post("/v1/keys.setPermissions", { keyId, permissions: [{ name: "a" }] }, remover)).statusCode).toBe(
      200,
    );
  });
});

describe("updateRemaining and deleteApi", () => {
  it("updateRemaining sets, increments and floors decrements at 0", async () => {
    h = await harness();
    const { keyId, key } = await h.createKey({ remaining: 2 });
    expect((await h.post("/v1/keys.updateRemaining", { keyId, op: "increment", value: 3 })).json()).toEqual({
      remaining: 5,
    });
    expect((await h.post("/v1/keys.updateRemaining", { keyId, op: "decrement", value: 9 })).json()).toEqual({
      remaining: 0,
    });
    expect((await h.post("/v1/keys.verifyKey", { key }, null)).json()).toMatchObject({ code: "USAGE_EXCEEDED" });
    expect((await h.post("/v1/keys.updateRemaining", { keyId, op: "set", value: null })).json()).toEqual({
      remaining: null,
    });
    expect(errorOf(await h.post("/v1/keys.updateRemaining", { keyId, op: "increment", value: 1 })).message).toBe(
      "cannot increment a key with unlimited remaining requests, please 'set' a value instead.",
    );
    expect(errorOf(await h.post("/v1/keys.updateRemaining", { keyId, op: "add", value: 1 })).message).toBe(
      "op: Invalid enum value. Expected 'increment' | 'decrement' | 'set', received 'add'",
    );
    expect(
      (await h.post("/v1/keys.updateRemaining", { keyId: "key_nope", op: "set", value: 1 }, null)).statusCode,
    ).toBe(404);
  });

  it("deleteApi removes the api and its keys; api_root is delete protected", async () => {
    h = await harness();
    const { apiId, key } = await h.createKey({});
    expect((await h.post("/v1/apis.deleteApi", { apiId })).json()).toEqual({});
    expect((await h.post("/v1/keys.verifyKey", { key }, null)).json()).toMatchObject({ code: "NOT_FOUND" });
    const protectedApi = await h.post("/v1/apis.deleteApi", { apiId: "api_root" });
    expect(protectedApi.statusCode).toBe(412);
    expect(errorOf(protectedApi)).toMatchObject({
      code: "DELETE_PROTECTED",
      message: "api api_root is protected from deletions",
    });
    expect(errorOf(await h.post("/v1/apis.deleteApi", { apiId })).code).toBe("NOT_FOUND");
  });
});

describe("ratelimits", () => {
  it("limit auto-creates the namespace and applies overrides with deterministic precedence", async () => {
    h = await harness();
    const first = await h.post("/v1/ratelimits.limit", {
      namespace: "email",
      identifier: "user_1",
      limit: 2,
      duration: 60_000,
    });
    expect(first.json()).toEqual({ success: true, limit: 2, remaining: 1, reset: expect.any(Number) });
    const namespaceName = "email";
    const wide = await h.post("/v1/ratelimits.setOverride", {
      namespaceName,
      identifier: "user_*",
      limit: 5,
      duration: 60_000,
    });
    const { overrideId } = wide.json() as { overrideId: string };
    expect(overrideId).toMatch(/^rlor_/);
    await h.post("/v1/ratelimits.setOverride", { namespaceName, identifier: "user_1*", limit: 7, duration: 60_000 });
    expect(
      (
        await h.post("/v1/ratelimits.limit", { namespace: "email", identifier: "user_12", limit: 2, duration: 60_000 })
      ).json(),
    ).toMatchObject({ limit: 7 });
    expect(
      (
        await h.post("/v1/ratelimits.limit", { namespace: "email", identifier: "user_2", limit: 2, duration: 60_000 })
      ).json(),
    ).toMatchObject({ limit: 5 });
    const again = await h.post("/v1/ratelimits.setOverride", {
      namespaceName,
      identifier: "user_*",
      limit: 9,
      duration: 60_000,
    });
    expect(again.json()).toEqual({ overrideId });
    const got = await h.get(
      `/v1/ratelimits.getOverride?namespaceName=email&identifier=${encodeURIComponent("user_*")}`,
    );
    expect(got.json()).toEqual({ id: overrideId, identifier: "user_*", limit: 9, duration: 60_000, async: false });
    const list = await h.get("/v1/ratelimits.listOverrides?namespaceName=email&limit=1");
    const page = list.json() as { overrides: { id: string }[]; total: number; cursor: string };
    expect(page.total).toBe(2);
    expect(page.overrides).toHaveLength(1);
    const next = (
      await h.get(`/v1/ratelimits.listOverrides?namespaceName=email&limit=1&cursor=${page.cursor}`)
    ).json() as { overrides: { id: string }[] };
    expect(next.overrides).toHaveLength(1);
    expect(next.overrides[0]!.id > page.cursor).toBe(true);
    expect((await h.post("/v1/ratelimits.deleteOverride", { namespaceName, identifier: "user_*" })).json()).toEqual({});
    expect(
      errorOf(await h.post("/v1/ratelimits.deleteOverride", { namespaceName, identifier: "user_*" })).message,
    ).toBe("Override with user_* identifier not found");
  });

  it("cost 0 is a pure read; the limit consumes nothing when rejected", async () => {
    h = await harness();
    const body = { namespace: "n", identifier: "x", limit: 2, duration: 10_000 };
    for (let i = 0; i < 3; i++) {
      expect((await h.post("/v1/ratelimits.limit", { ...body, cost: 0 })).json()).toMatchObject({
        success: true,
        remaining: 2,
      });
    }
    await h.post("/v1/ratelimits.limit", body);
    await h.post("/v1/ratelimits.limit", body);
    expect((await h.post("/v1/ratelimits.limit", body)).json()).toMatchObject({ success: false, remaining: 0 });
  });

  it("namespace errors and their order", async () => {
    h = await harness();
    const noNamespace = await h.post(
      "/v1/ratelimits.setOverride",
      { identifier: "abc", limit: 1, duration: 1000 },
      null,
    );
    expect(errorOf(noNamespace)).toMatchObject({
      code: "BAD_REQUEST",
      message: "You must provide a namespaceId or a namespaceName",
    });
    expect(
      errorOf(
        await h.post("/v1/ratelimits.setOverride", {
          namespaceName: "nope",
          identifier: "abc",
          limit: 1,
          duration: 1000,
        }),
      ).message,
    ).toBe("Namespace nope not found");
    expect(
      errorOf(
        await h.post("/v1/ratelimits.setOverride", { namespaceName: "n", identifier: "ab", limit: 1, duration: 1000 }),
      ).message,
    ).toBe("identifier: String must contain at least 3 character(s)");
    expect(errorOf(await h.get("/v1/ratelimits.listOverrides", null)).message).toBe(
      "You must provide a namespaceId or a namespaceName",
    );
    expect(errorOf(await h.get("/v1/ratelimits.listOverrides?namespaceId=rlns_x")).message).toBe(
      "Namespace rlns_x not found",
    );
    expect(errorOf(await h.get("/v1/ratelimits.getOverride?namespaceName=x&identifier=y")).message).toBe(
      "Namespace not found",
    );
    const limiter = await h.rootKeyWith(["ratelimit.*.limit"]);
    expect(
      errorOf(
        await h.post(
          "/v1/ratelimits.limit",
          { namespace: "fresh", identifier: "x", limit: 1, duration: 1000 },
          limiter,
        ),
      ),
    ).toMatchObject({ code: "NOT_FOUND", message: "namespace fresh not found" });
  });
});

describe("liveness and unknown routes", () => {
  it("liveness needs no auth; unknown routes get a 404 v1 body", async () => {
    h = await harness();
    const live = await h.get("/v1/liveness", null);
    expect(live.statusCode).toBe(200);
    expect(live.json()).toMatchObject({ status: "we're so back" });
    const unknown = await h.get("/v1/nope");
    expect(unknown.statusCode).toBe(404);
    expect(errorOf(unknown)).toMatchObject({ code: "NOT_FOUND", requestId: unknown.headers["unkey-request-id"] });
    expect(rootKey.length).toBeGreaterThan(0);
  });
});
