// GET /v1/audit.listLogs: an entry for every admin route, with the root key's id (never the key),
// the request id and the changed fields; filters, pagination, retention and its permission; and
// its v2 form, POST /v2/audit.listLogs.
import { beforeAll, afterAll, describe, expect, it } from "vitest";
import { errorOf, harness, rootKey, type Harness } from "./app-harness.js";
import { dataOf, problemOf, v2 } from "./v2-harness.js";

interface Log {
  id: string;
  time: number;
  actor: { type: string; id: string | null };
  action: string;
  targetIds: string[];
  requestId: string;
  changes: Record<string, unknown>;
}

/** POST routes that write nothing an audit log is about (verifications, reads, analytics). */
const notAdminWrites = new Set([
  "/v1/keys.verifyKey",
  "/v1/keys/verify",
  "/v1/keys.whoami",
  "/v2/apis.getApi",
  "/v2/apis.listKeys",
  "/v2/keys.getKey",
  "/v2/keys.whoami",
  "/v2/keys.verifyKey",
  "/v2/identities.getIdentity",
  "/v2/identities.listIdentities",
  "/v2/permissions.getPermission",
  "/v2/permissions.listPermissions",
  "/v2/permissions.getRole",
  "/v2/permissions.listRoles",
  "/v2/ratelimit.getOverride",
  "/v2/ratelimit.listOverrides",
  "/v2/audit.listLogs",
]);

let h: Harness;
beforeAll(async () => {
  h = await harness({ deps: { auditRetentionDays: 30, keyMigrations: new Map([["mig_legacy", "sha256"]]) } });
});
afterAll(async () => {
  await h.app.close();
});

async function logs(query = "", token?: string | null): Promise<{ logs: Log[]; cursor?: string }> {
  const response = await h.get(`/v1/audit.listLogs${query}`, token);
  if (response.statusCode !== 200) throw new Error(response.body);
  return response.json();
}

async function newest(): Promise<Log> {
  return (await logs("?limit=1")).logs[0]!;
}

describe("audit entries for every admin route", () => {
  it("records each write with its actor, action, targets, request id and fields", async () => {
    const rootKeyId = (await h.post("/v1/keys.whoami", { key: rootKey })).json().id as string;
    const seen = new Set<string>();
    const expectEntry = async (
      path: string,
      body: Record<string, unknown> | unknown[],
      action: string,
      targets: (answer: any) => string[],
      changes: Record<string, unknown> = {},
    ): Promise<any> => {
      const response = await h.post(path, body);
      expect(response.statusCode, `${path}: ${response.body}`).toBeLessThan(300);
      const answer = response.json();
      const entry = await newest();
      expect(entry.action, path).toBe(action);
      expect(entry.actor).toEqual({ type: "key", id: rootKeyId });
      expect(entry.requestId).toBe(response.headers["unkey-request-id"]);
      expect(entry.time).toBe(h.clock.nowMs);
      expect(entry.targetIds.slice(0, targets(answer).length)).toEqual(targets(answer));
      expect(entry.changes).toMatchObject(changes);
      expect(JSON.stringify(entry)).not.toContain(rootKey);
      seen.add(path);
      return answer;
    };

    const api = await expectEntry("/v1/apis.createApi", { name: "audited" }, "api.create", (a) => [a.apiId], {
      name: "audited",
    });
    const apiId = api.apiId as string;
    const key = await expectEntry(
      "/v1/keys.createKey",
      { apiId, name: "k1", meta: { plan: "pro" }, remaining: 5 },
      "key.create",
      (a) => [a.keyId, apiId],
      { name: "k1", meta: "set", remaining: 5 },
    );
    const keyId = key.keyId as string;
    expect(JSON.stringify(await newest())).not.toContain(key.key);
    const legacy = await expectEntry("/v1/keys", { apiId }, "key.create", (a) => [a.keyId, apiId]);
    await expectEntry("/v1/keys.updateKey", { keyId, enabled: false }, "key.update", () => [keyId], {
      enabled: false,
    });
    await expectEntry(
      "/v1/keys.updateRemaining",
      { keyId, op: "set", value: 9 },
      "key.updateRemaining",
      () => [keyId],
      {
        op: "set",
        value: 9,
      },
    );
    const permission = await expectEntry(
      "/v1/permissions.createPermission",
      { name: "billing.read" },
      "permission.create",
      (a) => [a.permissionId],
      { name: "billing.read", slug: "billing.read" },
    );
    const role = await expectEntry("/v1/permissions.createRole", { name: "admin" }, "role.create", (a) => [a.roleId], {
      name: "admin",
    });
    await expectEntry(
      "/v1/keys.addPermissions",
      { keyId, permissions: [{ id: permission.permissionId }] },
      "key.addPermissions",
      () => [keyId],
    );
    await expectEntry(
      "/v1/keys.setPermissions",
      { keyId, permissions: [{ id: permission.permissionId }] },
      "key.setPermissions",
      () => [keyId],
    );
    await expectEntry(
      "/v1/keys.removePermissions",
      { keyId, permissions: [{ id: permission.permissionId }] },
      "key.removePermissions",
      () => [keyId],
    );
    await expectEntry("/v1/keys.addRoles", { keyId, roles: [{ id: role.roleId }] }, "key.addRoles", () => [keyId]);
    await expectEntry("/v1/keys.setRoles", { keyId, roles: [{ id: role.roleId }] }, "key.setRoles", () => [keyId]);
    await expectEntry("/v1/keys.removeRoles", { keyId, roles: [{ id: role.roleId }] }, "key.removeRoles", () => [
      keyId,
    ]);
    await expectEntry("/v1/permissions.deleteRole", { roleId: role.roleId }, "role.delete", () => [role.roleId]);
    await expectEntry(
      "/v1/permissions.deletePermission",
      { permissionId: permission.permissionId },
      "permission.delete",
      () => [permission.permissionId],
    );
    const identity = await expectEntry(
      "/v1/identities.createIdentity",
      { externalId: "user_1" },
      "identity.create",
      (a) => [a.identityId],
      { externalId: "user_1" },
    );
    await expectEntry(
      "/v1/identities.updateIdentity",
      { identityId: identity.identityId, meta: { a: 1 } },
      "identity.update",
      () => [identity.identityId],
      { meta: "set" },
    );
    await expectEntry("/v1/identities.deleteIdentity", { identityId: identity.identityId }, "identity.delete", () => [
      identity.identityId,
    ]);
    await expectEntry(
      "/v1/ratelimits.limit",
      { namespace: "audited-ns", identifier: "u", limit: 5, duration: 1000 },
      "ratelimitNamespace.create",
      () => [],
      { name: "audited-ns" },
    );
    const override = await expectEntry(
      "/v1/ratelimits.setOverride",
      { namespaceName: "audited-ns", identifier: "user*", limit: 9, duration: 1000 },
      "ratelimitOverride.set",
      (a) => [a.overrideId],
      { identifier: "user*", limit: 9 },
    );
    expect(override.overrideId).toMatch(/./);
    await expectEntry(
      "/v1/ratelimits.deleteOverride",
      { namespaceName: "audited-ns", identifier: "user*" },
      "ratelimitOverride.delete",
      () => [],
      { identifier: "user*" },
    );
    await expectEntry(
      "/v1/migrations.createKeys",
      [{ apiId, hash: { value: "a".repeat(43) + "=", variant: "sha256_base64" } }],
      "key.import",
      (a) => [a.keyIds[0]],
      { importedKeys: 1 },
    );
    await expectEntry(
      "/v1/migrations.enqueueKeys",
      { migrationId: "m1", apiId, keys: [{ hash: { value: "b".repeat(43) + "=", variant: "sha256_base64" } }] },
      "key.import",
      () => [],
      { importedKeys: 1 },
    );
    await expectEntry("/v1/keys.deleteKey", { keyId: legacy.keyId }, "key.delete", () => [legacy.keyId]);
    await expectEntry("/v1/apis.deleteKeys", { apiId }, "api.deleteKeys", () => [apiId]);
    await expectEntry("/v1/apis.deleteApi", { apiId }, "api.delete", () => [apiId]);

    // The v2 writes are audited alike (the answers are envelopes: `data` holds the ids).
    const v2Api = await expectEntry("/v2/apis.createApi", { name: "audited-v2" }, "api.create", (a) => [a.data.apiId]);
    const v2ApiId = v2Api.data.apiId as string;
    const v2Key = await expectEntry(
      "/v2/keys.createKey",
      { apiId: v2ApiId, name: "v2", credits: { remaining: 5 } },
      "key.create",
      (a) => [a.data.keyId, v2ApiId],
      { name: "v2", remaining: 5 },
    );
    const v2KeyId = v2Key.data.keyId as string;
    await expectEntry("/v2/keys.updateKey", { keyId: v2KeyId, enabled: false }, "key.update", () => [v2KeyId], {
      enabled: false,
    });
    await expectEntry(
      "/v2/keys.updateCredits",
      { keyId: v2KeyId, operation: "increment", value: 2 },
      "key.updateRemaining",
      () => [v2KeyId],
      { op: "increment", value: 2 },
    );
    for (const [route, action] of [
      ["addPermissions", "key.addPermissions"],
      ["removePermissions", "key.removePermissions"],
      ["setPermissions", "key.setPermissions"],
    ] as const) {
      await expectEntry(`/v2/keys.${route}`, { keyId: v2KeyId, permissions: ["p1"] }, action, () => [v2KeyId]);
    }
    expect((await h.post("/v1/permissions.createRole", { name: "v2-admin" })).statusCode).toBe(200);
    for (const [route, action] of [
      ["addRoles", "key.addRoles"],
      ["removeRoles", "key.removeRoles"],
      ["setRoles", "key.setRoles"],
    ] as const) {
      await expectEntry(`/v2/keys.${route}`, { keyId: v2KeyId, roles: ["v2-admin"] }, action, () => [v2KeyId]);
    }
    const rerolled = await expectEntry("/v2/keys.rerollKey", { keyId: v2KeyId, expiration: 0 }, "key.reroll", (a) => [
      a.data.keyId,
      v2KeyId,
    ]);
    await expectEntry(
      "/v2/keys.migrateKeys",
      { migrationId: "mig_legacy", apiId: v2ApiId, keys: [{ hash: "c".repeat(43) + "=" }] },
      "key.import",
      (a) => [a.data.migrated[0].keyId],
      { importedKeys: 1 },
    );
    await expectEntry("/v2/keys.deleteKey", { keyId: rerolled.data.keyId }, "key.delete", (a) => [rerolled.data.keyId]);
    await expectEntry("/v2/apis.deleteApi", { apiId: v2ApiId }, "api.delete", () => [v2ApiId]);

    const v2Identity = await expectEntry(
      "/v2/identities.createIdentity",
      { externalId: "audited-v2-user" },
      "identity.create",
      (a) => [a.data.identityId],
      { externalId: "audited-v2-user" },
    );
    const v2IdentityId = v2Identity.data.identityId as string;
    await expectEntry(
      "/v2/identities.updateIdentity",
      { identity: v2IdentityId, meta: { tier: "gold" } },
      "identity.update",
      () => [v2IdentityId],
    );
    await expectEntry("/v2/identities.deleteIdentity", { identity: v2IdentityId }, "identity.delete", () => [
      v2IdentityId,
    ]);
    const v2Permission = await expectEntry(
      "/v2/permissions.createPermission",
      { name: "audited v2", slug: "audited.v2" },
      "permission.create",
      (a) => [a.data.permissionId],
      { slug: "audited.v2" },
    );
    const v2Role = await expectEntry(
      "/v2/permissions.createRole",
      { name: "audited-v2-role" },
      "role.create",
      (a) => [a.data.roleId],
      { name: "audited-v2-role" },
    );
    const v2RoleId = v2Role.data.roleId as string;
    await expectEntry(
      "/v2/permissions.setRolePermissions",
      { roleId: v2RoleId, permissions: ["audited.v2"] },
      "role.setPermissions",
      () => [v2RoleId],
      { permissions: ["audited.v2"] },
    );
    await expectEntry("/v2/permissions.deleteRole", { role: v2RoleId }, "role.delete", () => [v2RoleId]);
    await expectEntry(
      "/v2/permissions.deletePermission",
      { permission: v2Permission.data.permissionId },
      "permission.delete",
      () => [v2Permission.data.permissionId],
    );
    // ratelimit.limit and multiLimit write only when they create the namespace they name.
    await expectEntry(
      "/v2/ratelimit.limit",
      { namespace: "audited-v2-ns", identifier: "u", limit: 5, duration: 1000 },
      "ratelimitNamespace.create",
      () => [],
      { name: "audited-v2-ns" },
    );
    await expectEntry(
      "/v2/ratelimit.multiLimit",
      [{ namespace: "audited-v2-ns2", identifier: "u", limit: 5, duration: 1000 }],
      "ratelimitNamespace.create",
      () => [],
      { name: "audited-v2-ns2" },
    );
    const v2Override = await expectEntry(
      "/v2/ratelimit.setOverride",
      { namespace: "audited-v2-ns", identifier: "vip*", limit: 50, duration: 1000 },
      "ratelimitOverride.set",
      (a) => [a.data.overrideId],
      { identifier: "vip*", limit: 50 },
    );
    expect(v2Override.data.overrideId).toMatch(/./);
    await expectEntry(
      "/v2/ratelimit.deleteOverride",
      { namespace: "audited-v2-ns", identifier: "vip*" },
      "ratelimitOverride.delete",
      () => [],
      { identifier: "vip*" },
    );

    // Every POST route of the app is either covered above or writes nothing.
    const document = (await h.get("/openapi.json")).json() as { paths: Record<string, Record<string, unknown>> };
    const posts = Object.entries(document.paths)
      .filter(([, methods]) => "post" in methods)
      .map(([path]) => path)
      .filter((path) => !notAdminWrites.has(path) && !path.includes("analytics"));
    expect(posts.filter((path) => !seen.has(path))).toEqual([]);
  });

  it("records the root key the node created at start as a system entry", async () => {
    const first = (await logs("?action=rootKey.create")).logs;
    expect(first).toHaveLength(1);
    expect(first[0]?.actor).toEqual({ type: "system", id: null });
  });

  it("leaves no entry for a refused write", async () => {
    const before = await newest();
    expect((await h.post("/v1/apis.deleteApi", { apiId: "api_missing" })).statusCode).toBe(404);
    expect(await newest()).toEqual(before);
  });
});

describe("GET /v1/audit.listLogs", () => {
  it("filters by actor, target, action and time, newest first, with cursor pages", async () => {
    const limited = await h.rootKeyWith(["api.*.create_api"]);
    const limitedId = (await h.post("/v1/keys.whoami", { key: limited })).json().id as string;
    const startMs = h.clock.nowMs + 1000;
    const apiIds: string[] = [];
    for (let i = 0; i < 5; i++) {
      h.clock.nowMs += 1000;
      apiIds.push((await h.post("/v1/apis.createApi", { name: `page-${i}` }, limited)).json().apiId);
    }
    const byActor = await logs(`?actorId=${limitedId}`);
    expect(byActor.logs.map((log) => log.targetIds[0])).toEqual([...apiIds].reverse());
    expect(byActor.cursor).toBeUndefined();
    const page1 = await logs(`?actorId=${limitedId}&limit=2`);
    const page2 = await logs(`?actorId=${limitedId}&limit=2&cursor=${page1.cursor}`);
    const page3 = await logs(`?actorId=${limitedId}&limit=2&cursor=${page2.cursor}`);
    expect([...page1.logs, ...page2.logs, ...page3.logs].map((log) => log.id)).toEqual(
      byActor.logs.map((log) => log.id),
    );
    expect(page3.cursor).toBeUndefined();
    expect((await logs(`?targetId=${apiIds[2]}`)).logs.map((log) => log.action)).toEqual(["api.create"]);
    const window = await logs(`?actorId=${limitedId}&start=${startMs + 1000}&end=${startMs + 2000}`);
    expect(window.logs.map((log) => log.targetIds[0])).toEqual([apiIds[2], apiIds[1]]);
    expect((await logs("?action=api.delete")).logs.every((log) => log.action === "api.delete")).toBe(true);
  });

  it("hides entries older than KEYRAFT_AUDIT_RETENTION_DAYS", async () => {
    const all = (await logs("?limit=100")).logs;
    expect(all.length).toBeGreaterThan(0);
    const savedMs = h.clock.nowMs;
    h.clock.nowMs = all[0]!.time + 30 * 86_400_000 + 1;
    try {
      expect((await logs()).logs).toEqual([]);
    } finally {
      h.clock.nowMs = savedMs;
    }
  });

  it("requires a root key holding * or audit.*.read, and checks its query", async () => {
    expect(errorOf(await h.get("/v1/audit.listLogs", null)).code).toBe("UNAUTHORIZED");
    const other = await h.rootKeyWith(["api.*.read_api"]);
    const refused = await h.get("/v1/audit.listLogs", other);
    expect(refused.statusCode).toBe(403);
    expect(errorOf(refused).code).toBe("INSUFFICIENT_PERMISSIONS");
    const reader = await h.rootKeyWith(["audit.*.read"]);
    expect((await h.get("/v1/audit.listLogs?limit=1", reader)).statusCode).toBe(200);
    for (const bad of ["?limit=0", "?limit=101", "?cursor=abc", "?start=-1", "?end=x"]) {
      const response = await h.get(`/v1/audit.listLogs${bad}`);
      expect(response.statusCode, bad).toBe(400);
      expect(errorOf(response).code).toBe("BAD_REQUEST");
    }
  });
});

describe("POST /v2/audit.listLogs", () => {
  interface V2Page {
    meta: { requestId: string };
    data: Log[];
    pagination: { hasMore: boolean; cursor?: string };
  }
  const page = async (body: Record<string, unknown>, token?: string): Promise<V2Page> => {
    const response = await v2(h, "audit.listLogs", body, token);
    dataOf(response);
    return response.json() as V2Page;
  };

  it("answers v1's entries with the same filters, newest first, in v2 cursor pages", async () => {
    const limited = await h.rootKeyWith(["api.*.create_api"]);
    const limitedId = (await h.post("/v1/keys.whoami", { key: limited })).json().id as string;
    const startMs = h.clock.nowMs + 1000;
    const apiIds: string[] = [];
    for (let i = 0; i < 5; i++) {
      h.clock.nowMs += 1000;
      apiIds.push(dataOf<{ apiId: string }>(await v2(h, "apis.createApi", { name: `v2-page-${i}` }, limited)).apiId);
    }
    const byActor = await page({ actorId: limitedId });
    expect(byActor.data.map((log) => log.targetIds[0])).toEqual([...apiIds].reverse());
    expect(byActor.pagination).toEqual({ hasMore: false });
    // The same entries as the v1 route.
    expect(byActor.data).toEqual((await logs(`?actorId=${limitedId}`)).logs);
    expect(byActor.data[0]).toMatchObject({ actor: { type: "key", id: limitedId }, action: "api.create" });

    const page1 = await page({ actorId: limitedId, limit: 2 });
    expect(page1.pagination.hasMore).toBe(true);
    const page2 = await page({ actorId: limitedId, limit: 2, cursor: page1.pagination.cursor });
    const page3 = await page({ actorId: limitedId, limit: 2, cursor: page2.pagination.cursor });
    expect([...page1.data, ...page2.data, ...page3.data].map((log) => log.id)).toEqual(
      byActor.data.map((log) => log.id),
    );
    expect(page3.pagination).toEqual({ hasMore: false });

    expect((await page({ targetId: apiIds[2] })).data.map((log) => log.action)).toEqual(["api.create"]);
    const window = await page({ actorId: limitedId, start: startMs + 1000, end: startMs + 2000 });
    expect(window.data.map((log) => log.targetIds[0])).toEqual([apiIds[2], apiIds[1]]);
    const creates = (await page({ action: "api.create", limit: 100 })).data;
    expect(creates.length).toBeGreaterThanOrEqual(5);
    expect(creates.every((log) => log.action === "api.create")).toBe(true);
    expect((await page({ action: "no.such.action" })).data).toEqual([]);
  });

  it("requires a root key holding * or audit.*.read, and answers bad bodies with the v2 400", async () => {
    problemOf(await v2(h, "audit.listLogs", {}, null), 400, "unkey/application/invalid_input");
    const refused = problemOf(
      await v2(h, "audit.listLogs", {}, await h.rootKeyWith(["api.*.read_api"])),
      403,
      "unkey/authorization/insufficient_permissions",
    );
    expect(refused.detail).toContain("audit.*.read");
    const reader = await h.rootKeyWith(["audit.*.read"]);
    expect((await page({ limit: 1 }, reader)).data).toHaveLength(1);
    for (const bad of [{ limit: 0 }, { limit: 101 }, { cursor: "abc" }, { start: -1 }, { end: "x" }, { nope: 1 }]) {
      problemOf(await v2(h, "audit.listLogs", bad), 400, "unkey/application/invalid_input");
    }
  });
});
