// Tenants and root keys (the probes, scaled down, through inject): identities, the root
// keys' permissions and roles, authentication before work, bearer tokens of ordinary keys, and
// KEYRAFT_ROOT_KEY after a revocation.
import { randomBytes } from "node:crypto";
import {
  keyStateMachine,
  permissionIdOfSlug,
  restoreKeyState,
  ROOT_API_ID,
  snapshotKeyState,
  type CommandOutcome,
  type KeyCommand,
} from "@keyraft/core";
import { bootstrapRootKey, MemoryCommandLog } from "@keyraft/gateway";
import { afterEach, describe, expect, it } from "vitest";
import { errorOf, harness, type Harness } from "./app-harness.js";

let h: Harness;
afterEach(async () => {
  await h?.app.close();
});

describe("identities across tenants", () => {
  it("linking a key to an existing externalId needs identity.*.update_identity; meta and counters stay with their tenant", async () => {
    h = await harness();
    const apiA = await h.createApi("api-a");
    const apiB = await h.createApi("api-b");
    // Tenant A's identity: secret meta and a shared limit of 5 per minute.
    await h.post("/v1/identities.createIdentity", {
      externalId: "customer_a",
      meta: { secret: "tenant A only" },
      ratelimits: [{ name: "shared", limit: 5, duration: 60_000 }],
    });
    const victim = await h.createKey({ externalId: "customer_a", ratelimits: undefined }, apiA);
    const tenantB = await h.rootKeyWith([`api.${apiB}.create_key`, `api.${apiB}.update_key`]);
    const create = await h.post("/v1/keys.createKey", { apiId: apiB, externalId: "customer_a" }, tenantB);
    expect(create.statusCode).toBe(403);
    expect(errorOf(create).code).toBe("INSUFFICIENT_PERMISSIONS");
    const own = await h.post("/v1/keys.createKey", { apiId: apiB }, tenantB);
    const ownKey = own.json() as { keyId: string; key: string };
    const update = await h.post("/v1/keys.updateKey", { keyId: ownKey.keyId, externalId: "customer_a" }, tenantB);
    expect(errorOf(update).code).toBe("INSUFFICIENT_PERMISSIONS");
    // The key never got the identity: its verification shows none, and the victim's limit is untouched.
    const verified = await h.post(
      "/v1/keys.verifyKey",
      { key: ownKey.key, ratelimits: [{ name: "shared", cost: 5 }] },
      null,
    );
    expect(verified.statusCode).toBe(400);
    const plain = (await h.post("/v1/keys.verifyKey", { key: ownKey.key }, null)).json() as Record<string, unknown>;
    expect(plain["identity"]).toBeUndefined();
    expect(JSON.stringify(plain)).not.toContain("tenant A only");
    const victimVerified = await h.post(
      "/v1/keys.verifyKey",
      { key: victim.key, ratelimits: [{ name: "shared" }] },
      null,
    );
    expect(victimVerified.json()).toMatchObject({ valid: true, ratelimit: { remaining: 4 } });
    // A new externalId is still created freely, and a holder of the identity permission may link.
    expect((await h.post("/v1/keys.createKey", { apiId: apiB, externalId: "customer_b" }, tenantB)).statusCode).toBe(
      200,
    );
    const linker = await h.rootKeyWith([`api.${apiB}.create_key`, "identity.*.update_identity"]);
    expect((await h.post("/v1/keys.createKey", { apiId: apiB, externalId: "customer_a" }, linker)).statusCode).toBe(
      200,
    );
  });
});

describe("root keys' permissions and roles are apart from tenants'", () => {
  it("a tenant RBAC route cannot delete a permission or role that root keys use, nor see them", async () => {
    h = await harness();
    const admin = await h.rootKeyWith(["api.*.create_api"]);
    const adminPermissionId = permissionIdOfSlug(h.machine.state, "api.*.create_api")!;
    expect((await h.post("/v1/apis.createApi", { name: "api-x" }, admin)).statusCode).toBe(200);
    const rbac = await h.rootKeyWith(["rbac.*.delete_permission", "rbac.*.read_permission", "rbac.*.delete_role"]);
    const deleted = await h.post("/v1/permissions.deletePermission", { permissionId: adminPermissionId }, rbac);
    expect(deleted.statusCode).toBe(403);
    expect(errorOf(deleted).code).toBe("INSUFFICIENT_PERMISSIONS");
    expect((await h.post("/v1/apis.createApi", { name: "api-y" }, admin)).statusCode).toBe(200);
    const listed = (await h.get("/v1/permissions.listPermissions", rbac)).json() as { slug: string }[];
    expect(listed.map((p) => p.slug)).not.toContain("api.*.create_api");
    expect(listed.map((p) => p.slug)).not.toContain("*");
    expect((await h.get(`/v1/permissions.getPermission?permissionId=${adminPermissionId}`, rbac)).statusCode).toBe(404);
    // A tenant's own permission is theirs to delete; `*` may delete anything.
    const { keyId } = await h.createKey({ permissions: ["tenant.read"] });
    const tenantPermissionId = permissionIdOfSlug(h.machine.state, "tenant.read")!;
    expect(
      (await h.post("/v1/permissions.deletePermission", { permissionId: tenantPermissionId }, rbac)).statusCode,
    ).toBe(200);
    expect(h.machine.state.keys.get(keyId)!.permissionIds).toEqual([]);
    expect((await h.post("/v1/permissions.deletePermission", { permissionId: adminPermissionId })).statusCode).toBe(
      200,
    );
  });

  it("roles of root keys are fenced the same way", async () => {
    h = await harness();
    const role = await h.post("/v1/permissions.createRole", { name: "admins", permissions: [] });
    const roleId = (role.json() as { roleId: string }).roleId;
    await h.createKey({ roles: ["admins"] }, ROOT_API_ID);
    const rbac = await h.rootKeyWith(["rbac.*.delete_role", "rbac.*.read_role"]);
    expect(errorOf(await h.post("/v1/permissions.deleteRole", { roleId }, rbac)).code).toBe("INSUFFICIENT_PERMISSIONS");
    expect((await h.get(`/v1/permissions.getRole?roleId=${roleId}`, rbac)).statusCode).toBe(404);
    expect(((await h.get("/v1/permissions.listRoles", rbac)).json() as unknown[]).length).toBe(0);
  });

  it("only `*` holders list, read or delete keys of api_root", async () => {
    h = await harness();
    const reader = await h.rootKeyWith(["api.*.read_key", "api.*.delete_key"]);
    const listed = await h.get(`/v1/apis.listKeys?apiId=${ROOT_API_ID}`, reader);
    expect(listed.statusCode).toBe(403);
    expect(listed.body).not.toContain('"start"');
    expect((await h.get(`/v1/apis/${ROOT_API_ID}/keys`, reader)).statusCode).toBe(403);
    const rootKeyId = h.machine.state.keys.idsOfApi(ROOT_API_ID)[0]!;
    expect((await h.get(`/v1/keys.getKey?keyId=${rootKeyId}`, reader)).statusCode).toBe(403);
    expect((await h.get(`/v1/keys.getVerifications?keyId=${rootKeyId}`, reader)).statusCode).toBe(403);
    expect((await h.post("/v1/apis.deleteKeys", { apiId: ROOT_API_ID }, reader)).statusCode).toBe(403);
    expect(h.machine.state.keys.has(rootKeyId)).toBe(true);
    expect((await h.get(`/v1/apis.listKeys?apiId=${ROOT_API_ID}`)).statusCode).toBe(200);
  });
});

describe("authentication before any work", () => {
  it("keys.getVerifications?ownerId= authenticates first and answers alike for owners elsewhere and nowhere", async () => {
    h = await harness();
    const apiA = await h.createApi("api-a");
    const apiB = await h.createApi("api-b");
    await h.createKey({ ownerId: "owner_in_a" }, apiA);
    expect((await h.get("/v1/keys.getVerifications?ownerId=owner_in_a", null)).statusCode).toBe(403);
    const readerB = await h.rootKeyWith([`api.${apiB}.read_key`]);
    const elsewhere = await h.get("/v1/keys.getVerifications?ownerId=owner_in_a", readerB);
    const nowhere = await h.get("/v1/keys.getVerifications?ownerId=owner_nowhere", readerB);
    expect([elsewhere.statusCode, errorOf(elsewhere).message]).toEqual([nowhere.statusCode, errorOf(nowhere).message]);
    expect((await h.get("/v1/keys.getVerifications?ownerId=owner_in_a")).statusCode).toBe(200);
  });

  it("an ordinary key used as a bearer token spends nothing before 'root key required'", async () => {
    h = await harness();
    const { key, keyId } = await h.createKey({
      permissions: ["*"],
      remaining: 3,
      ratelimit: { limit: 2, duration: 60_000 },
    });
    for (let i = 0; i < 5; i++) {
      const response = await h.post("/v1/apis.createApi", { name: "api-x" }, key);
      expect(errorOf(response)).toMatchObject({ code: "UNAUTHORIZED", message: "root key required" });
    }
    expect(h.machine.state.keys.get(keyId)!.remaining).toBe(3);
    const verified = await h.post("/v1/keys.verifyKey", { key }, null);
    expect(verified.json()).toMatchObject({ valid: true, remaining: 2, ratelimit: { remaining: 1 } });
  });
});

describe("KEYRAFT_ROOT_KEY bootstraps once", () => {
  it("a revoked or deleted one stays so at the next start", async () => {
    const machine = keyStateMachine();
    const log = new MemoryCommandLog<KeyCommand, CommandOutcome>(machine);
    const nowMs = () => 1_770_000_000_000;
    const options = { state: machine.state, commandLog: log, nowMs, randomBytes, rootKey: "configured_root_key_1" };
    const first = await bootstrapRootKey(options);
    expect(first.changed).toBe(true);
    await log.append({ type: "updateKey", keyId: first.keyId, enabled: false, nowMs: nowMs() } as KeyCommand);
    expect(machine.state.keys.get(first.keyId)!.enabled).toBe(false);
    const restarted = await bootstrapRootKey(options);
    expect(restarted).toMatchObject({ changed: false, ignored: "revoked" });
    expect(machine.state.keys.get(first.keyId)!.enabled).toBe(false);
    // Another root key exists and this one is deleted: not created again.
    // Another root key exists (a new KEYRAFT_ROOT_KEY is still added: the way back in); this one is deleted.
    expect(await bootstrapRootKey({ ...options, rootKey: "second_root_key_22" })).toMatchObject({ changed: true });
    await log.append({ type: "deleteKey", keyId: first.keyId, nowMs: nowMs() } as KeyCommand);
    expect(await bootstrapRootKey(options)).toMatchObject({ changed: false, ignored: "deleted" });
    expect(machine.state.keys.has(first.keyId)).toBe(false);
    // The deletion is part of the replicated state: it survives a snapshot and its restore.
    const restored = restoreKeyState(snapshotKeyState(machine.state));
    expect(restored.retiredRootKeyHashes).toEqual(machine.state.retiredRootKeyHashes);
    expect(restored.retiredRootKeyHashes.size).toBe(1);
  });
});
