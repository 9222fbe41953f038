// The tenant guards of test/security-tenants.test.ts on the v2 routes: linking a key to an
// existing identity needs an identity permission, and only `*` holders see or change what is
// attached to api_root and the permissions and roles root keys use.
import { createHash } from "node:crypto";
import { permissionIdOfSlug, ROOT_API_ID } from "@keyraft/core";
import { afterEach, describe, expect, it } from "vitest";
import { harness, rootKey, type Harness } from "./app-harness.js";
import { dataOf, problemOf, v2 } from "./v2-harness.js";

let h: Harness;
afterEach(async () => {
  await h?.app.close();
});

const b64 = (text: string) => createHash("sha256").update(text).digest("base64");

describe("identities across tenants (v2)", () => {
  it("linking a key to an existing externalId needs identity.*.update_identity; meta and counters stay with their tenant", async () => {
    h = await harness({ deps: { keyMigrations: new Map([["mig_legacy", "sha256"]]) } });
    const apiA = await h.createApi("api-a");
    const apiB = await h.createApi("api-b");
    dataOf(
      await v2(h, "identities.createIdentity", {
        externalId: "customer_a",
        meta: { secret: "tenant A only" },
        ratelimits: [{ name: "shared", limit: 5, duration: 60_000 }],
      }),
    );
    const identityId = h.machine.state.identityIdByExternalId.get("customer_a")!;
    const victim = await h.createKey({ externalId: "customer_a" }, apiA);
    const tenantB = await h.rootKeyWith([`api.${apiB}.create_key`, `api.${apiB}.update_key`]);

    const create = await v2(h, "keys.createKey", { apiId: apiB, externalId: "customer_a" }, tenantB);
    expect(problemOf(create, 403, "unkey/authorization/insufficient_permissions").detail).toContain(identityId);
    const own = dataOf<{ keyId: string; key: string }>(await v2(h, "keys.createKey", { apiId: apiB }, tenantB));
    const update = await v2(h, "keys.updateKey", { keyId: own.keyId, externalId: "customer_a" }, tenantB);
    problemOf(update, 403, "unkey/authorization/insufficient_permissions");
    const migrate = await v2(
      h,
      "keys.migrateKeys",
      { migrationId: "mig_legacy", apiId: apiB, keys: [{ hash: b64("legacy_1"), externalId: "customer_a" }] },
      tenantB,
    );
    problemOf(migrate, 403, "unkey/authorization/insufficient_permissions");
    expect(h.machine.state.keys.hasHash(b64("legacy_1"))).toBe(false);

    // The key never got the identity: no meta through verifyKey, and the victim's limit is untouched.
    const plain = dataOf(await v2(h, "keys.verifyKey", { key: own.key }));
    expect(plain["identity"]).toBeUndefined();
    expect(JSON.stringify(plain)).not.toContain("tenant A only");
    expect(h.machine.state.keys.get(own.keyId)!.identityId).toBeNull();
    const victimVerified = dataOf(await v2(h, "keys.verifyKey", { key: victim.key, ratelimits: [{ name: "shared" }] }));
    expect(victimVerified).toMatchObject({ valid: true });
    expect(victimVerified["ratelimits"]).toEqual([expect.objectContaining({ name: "shared", remaining: 4 })]);

    // A new externalId is still created freely, and a holder of an identity permission may link.
    dataOf(await v2(h, "keys.createKey", { apiId: apiB, externalId: "customer_b" }, tenantB));
    const linker = await h.rootKeyWith([
      `api.${apiB}.create_key`,
      `api.${apiB}.update_key`,
      `identity.${identityId}.update_identity`,
    ]);
    dataOf(await v2(h, "keys.createKey", { apiId: apiB, externalId: "customer_a" }, linker));
    dataOf(await v2(h, "keys.updateKey", { keyId: own.keyId, externalId: "customer_a" }, linker));
    expect(h.machine.state.keys.get(own.keyId)!.identityId).toBe(identityId);
    const migrator = await h.rootKeyWith([`api.${apiB}.create_key`, "identity.*.update_identity"]);
    dataOf(
      await v2(
        h,
        "keys.migrateKeys",
        { migrationId: "mig_legacy", apiId: apiB, keys: [{ hash: b64("legacy_2"), externalId: "customer_a" }] },
        migrator,
      ),
    );
  });
});

const forbidden = "unkey/authorization/insufficient_permissions";

describe("root keys' permissions and roles are apart from tenants' (v2)", () => {
  it("a tenant RBAC route cannot delete a permission or role that root keys use, nor see them", async () => {
    h = await harness();
    const admin = await h.rootKeyWith(["api.*.create_api"]);
    const adminPermissionId = permissionIdOfSlug(h.machine.state, "api.*.create_api")!;
    dataOf(await v2(h, "apis.createApi", { name: "api-x" }, admin));
    const rbac = await h.rootKeyWith(["rbac.*.delete_permission", "rbac.*.read_permission"]);
    for (const ref of [adminPermissionId, "api.*.create_api"]) {
      problemOf(await v2(h, "permissions.deletePermission", { permission: ref }, rbac), 403, forbidden);
      problemOf(
        await v2(h, "permissions.getPermission", { permission: ref }, rbac),
        404,
        "unkey/data/permission_not_found",
      );
    }
    dataOf(await v2(h, "apis.createApi", { name: "api-y" }, admin));
    const listed = dataOf<{ slug: string }[]>(await v2(h, "permissions.listPermissions", {}, rbac));
    expect(listed.map((p) => p.slug)).not.toContain("api.*.create_api");
    expect(listed.map((p) => p.slug)).not.toContain("*");
    // A tenant's own permission is theirs to see and delete; `*` may delete anything.
    const { keyId } = await h.createKey({ permissions: ["tenant.read"] });
    expect(dataOf<{ slug: string }[]>(await v2(h, "permissions.listPermissions", {}, rbac)).map((p) => p.slug)).toEqual(
      ["tenant.read"],
    );
    dataOf(await v2(h, "permissions.deletePermission", { permission: "tenant.read" }, rbac));
    expect(h.machine.state.keys.get(keyId)!.permissionIds).toEqual([]);
    const all = dataOf<{ slug: string }[]>(await v2(h, "permissions.listPermissions", {}));
    expect(all.map((p) => p.slug)).toContain("api.*.create_api");
    dataOf(await v2(h, "permissions.deletePermission", { permission: adminPermissionId }));
  });

  it("roles of root keys are fenced the same way", async () => {
    h = await harness();
    const { roleId } = dataOf<{ roleId: string }>(await v2(h, "permissions.createRole", { name: "admins" }));
    await h.createKey({ roles: ["admins"] }, ROOT_API_ID);
    const rbac = await h.rootKeyWith([
      "rbac.*.delete_role",
      "rbac.*.read_role",
      "rbac.*.add_permission_to_role",
      "rbac.*.remove_permission_from_role",
    ]);
    problemOf(await v2(h, "permissions.deleteRole", { role: roleId }, rbac), 403, forbidden);
    problemOf(await v2(h, "permissions.deleteRole", { role: "admins" }, rbac), 403, forbidden);
    problemOf(
      await v2(h, "permissions.setRolePermissions", { roleId, permissions: ["tenant.read"] }, rbac),
      403,
      forbidden,
    );
    problemOf(await v2(h, "permissions.getRole", { role: roleId }, rbac), 404, "unkey/data/role_not_found");
    expect(dataOf<unknown[]>(await v2(h, "permissions.listRoles", {}, rbac))).toEqual([]);
    expect(h.machine.state.roles.has(roleId)).toBe(true);
    expect(dataOf<unknown[]>(await v2(h, "permissions.listRoles", {}))).toHaveLength(1);
    dataOf(await v2(h, "permissions.deleteRole", { role: roleId }));
  });
});

describe("only `*` holders see or change api_root and its keys (v2)", () => {
  it("apis.listKeys/getApi/deleteApi on api_root answer 403 without `*`", async () => {
    h = await harness();
    const reader = await h.rootKeyWith(["api.*.read_key", "api.*.read_api", "api.*.delete_api"]);
    const listed = await v2(h, "apis.listKeys", { apiId: ROOT_API_ID }, reader);
    problemOf(listed, 403, forbidden);
    expect(listed.body).not.toContain('"start"');
    problemOf(await v2(h, "apis.getApi", { apiId: ROOT_API_ID }, reader), 403, forbidden);
    problemOf(await v2(h, "apis.deleteApi", { apiId: ROOT_API_ID }, reader), 403, forbidden);
    expect(h.machine.state.apis.has(ROOT_API_ID)).toBe(true);
    // Other apis stay readable, and `*` sees api_root.
    const apiId = await h.createApi("tenant");
    dataOf(await v2(h, "apis.listKeys", { apiId }, reader));
    dataOf(await v2(h, "apis.getApi", { apiId }, reader));
    expect(dataOf<{ id: string }[]>(await v2(h, "apis.listKeys", { apiId: ROOT_API_ID })).length).toBeGreaterThan(1);
  });

  it("keys.* routes on a root key answer 403 (whoami: key_not_found) without `*`", async () => {
    h = await harness();
    const manager = await h.rootKeyWith([
      "api.*.read_key",
      "api.*.update_key",
      "api.*.delete_key",
      "api.*.create_key",
      "rbac.*.create_permission",
    ]);
    // The node's first root key, holding `*`.
    const victimKeyId = dataOf<{ keyId: string }>(await v2(h, "keys.whoami", { key: rootKey })).keyId;
    const expectForbidden = async (route: string, body: Record<string, unknown>) =>
      problemOf(await v2(h, route, body, manager), 403, forbidden);
    await expectForbidden("keys.getKey", { keyId: victimKeyId });
    await expectForbidden("keys.updateKey", { keyId: victimKeyId, enabled: false });
    await expectForbidden("keys.updateCredits", { keyId: victimKeyId, operation: "set", value: 1 });
    await expectForbidden("keys.rerollKey", { keyId: victimKeyId, expiration: 0 });
    await expectForbidden("keys.addPermissions", { keyId: victimKeyId, permissions: ["*"] });
    await expectForbidden("keys.removePermissions", { keyId: victimKeyId, permissions: ["*"] });
    await expectForbidden("keys.setPermissions", { keyId: victimKeyId, permissions: [] });
    await expectForbidden("keys.setRoles", { keyId: victimKeyId, roles: [] });
    await expectForbidden("keys.deleteKey", { keyId: victimKeyId });
    problemOf(await v2(h, "keys.whoami", { key: rootKey }, manager), 404, "unkey/data/key_not_found");
    const victim = h.machine.state.keys.get(victimKeyId)!;
    expect(victim.enabled).toBe(true);
    // `*` reads it.
    expect(dataOf<{ keyId: string }>(await v2(h, "keys.getKey", { keyId: victimKeyId })).keyId).toBe(victimKeyId);
  });

  it("analytics.getVerifications leaves out api_root's verifications without `*`", async () => {
    h = await harness();
    const tenant = await h.createKey({});
    await h.post("/v1/keys.verifyKey", { key: tenant.key });
    await h.post("/v1/keys.verifyKey", { key: rootKey });
    await h.post("/v1/keys.verifyKey", { key: rootKey });
    const sql = "SELECT key_id, COUNT(*) AS n FROM key_verifications_v1 GROUP BY key_id ORDER BY n DESC";
    const query = async (token?: string) =>
      dataOf<{ key_id: string; n: number }[]>(await v2(h, "analytics.getVerifications", { query: sql }, token));
    const rootKeyId = dataOf<{ keyId: string }>(await v2(h, "keys.whoami", { key: rootKey })).keyId;
    expect(await query()).toEqual([
      { key_id: rootKeyId, n: 2 },
      { key_id: tenant.keyId, n: 1 },
    ]);
    expect(await query(await h.rootKeyWith(["api.*.read_analytics"]))).toEqual([{ key_id: tenant.keyId, n: 1 }]);
    expect(await query(await h.rootKeyWith([`api.${ROOT_API_ID}.read_analytics`]))).toEqual([]);
  });
});
