// Drives every method of the official client @unkey/api@0.38.0 against a running keyraft node,
// in realistic flows, asserting the results.

import { createHash } from "node:crypto";
import { Unkey } from "@unkey/api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServer, type ClientServer } from "./server.js";

let server: ClientServer;
let unkey: Unkey;

beforeAll(async () => {
  server = await startServer();
  unkey = new Unkey({
    rootKey: server.rootKey,
    baseUrl: server.baseUrl,
    disableTelemetry: true,
    retry: { attempts: 0 },
  });
});
afterAll(async () => {
  await server.close();
});

/** The result of a client call, failing the test with the error when there is one. */
function ok<T>(response: { result?: T; error?: { code: string; message: string } }): T {
  if (response.error !== undefined) throw new Error(`${response.error.code}: ${response.error.message}`);
  return response.result as T;
}

function sha256Base64(secret: string): string {
  return createHash("sha256").update(secret).digest("base64");
}

describe("@unkey/api 0.38.0 against keyraft", () => {
  it("apis, permissions, roles, identities, keys, verification, analytics, migrations, deletion", async () => {
    // --- apis.create / apis.get
    const { apiId } = ok(await unkey.apis.create({ name: "billing-api" }));
    expect(apiId).toMatch(/^api_/);
    expect(ok(await unkey.apis.get({ apiId }))).toEqual({
      id: apiId,
      workspaceId: expect.any(String),
      name: "billing-api",
    });

    // --- permissions.* (create, get, list) and roles
    const { permissionId: readId } = ok(
      await unkey.permissions.createPermission({ name: "documents.read", description: "read documents" }),
    );
    ok(await unkey.permissions.createPermission({ name: "documents.write" }));
    expect(ok(await unkey.permissions.getPermission({ permissionId: readId }))).toMatchObject({
      id: readId,
      name: "documents.read",
      slug: "documents.read",
      description: "read documents",
    });
    expect(ok(await unkey.permissions.listPermissions()).map((p) => p.name)).toEqual(
      expect.arrayContaining(["documents.read", "documents.write"]),
    );
    const duplicate = await unkey.permissions.createPermission({ name: "documents.read" });
    expect(duplicate.error?.code).toBe("CONFLICT");
    const { roleId: editorId } = ok(await unkey.permissions.createRole({ name: "editor", description: "edits" }));
    expect(ok(await unkey.permissions.getRole({ roleId: editorId }))).toMatchObject({ id: editorId, name: "editor" });
    expect(ok(await unkey.permissions.listRoles()).map((r) => r.name)).toContain("editor");

    // --- identities.create / get / list / update: the identity's limit is shared by its keys
    const { identityId } = ok(
      await unkey.identities.create({
        externalId: "user_123",
        meta: { plan: "pro" },
        ratelimits: [{ name: "shared", limit: 2, duration: 60_000 }],
      }),
    );
    expect(ok(await unkey.identities.get({ externalId: "user_123" }))).toEqual({
      id: identityId,
      externalId: "user_123",
      meta: { plan: "pro" },
      ratelimits: [{ name: "shared", limit: 2, duration: 60_000 }],
    });
    const listed = ok(await unkey.identities.list({ limit: 10 }));
    expect(listed.identities.map((i) => i.externalId)).toContain("user_123");
    expect(listed.total).toBeGreaterThanOrEqual(1);
    const updated = ok(
      await unkey.identities.update({
        identityId,
        meta: { plan: "team" },
        ratelimits: [{ name: "shared", limit: 3, duration: 60_000 }],
      }),
    );
    expect(updated).toEqual({
      id: identityId,
      externalId: "user_123",
      meta: { plan: "team" },
      ratelimits: [{ name: "shared", limit: 3, duration: 60_000 }],
    });

    // --- keys.create with identity, roles, permissions, limits and credits
    const first = ok(
      await unkey.keys.create({
        apiId,
        prefix: "sk",
        name: "first",
        externalId: "user_123",
        meta: { tier: 1 },
        remaining: 100,
        refill: { interval: "daily", amount: 100 },
        ratelimit: { limit: 10, duration: 60_000 },
        roles: ["editor"],
        permissions: ["documents.read"],
      }),
    );
    expect(first.key.startsWith("sk_")).toBe(true);
    const second = ok(await unkey.keys.create({ apiId, externalId: "user_123" }));

    // --- keys.verify (tags recorded for analytics)
    const verified = ok(await unkey.keys.verify({ key: first.key, apiId, tags: ["path=/docs"] }));
    expect(verified).toMatchObject({
      valid: true,
      code: "VALID",
      keyId: first.keyId,
      name: "first",
      ownerId: "user_123",
      meta: { tier: 1 },
      remaining: 99,
      ratelimit: { limit: 10, remaining: 9 },
      permissions: ["documents.read"],
      roles: ["editor"],
      identity: { id: identityId, externalId: "user_123", meta: { plan: "team" } },
    });
    const codes: string[] = ["VALID"];
    // The identity's "shared" limit (3 per minute) counts across both keys.
    const shared = async (key: string) => ok(await unkey.keys.verify({ key, ratelimits: [{ name: "shared" }] })).code;
    expect([
      await shared(first.key),
      await shared(first.key),
      await shared(second.key),
      await shared(second.key),
      await shared(first.key),
    ]).toEqual(["VALID", "VALID", "VALID", "RATE_LIMITED", "RATE_LIMITED"]);
    codes.push("VALID", "VALID", "RATE_LIMITED");

    // --- keys.addPermissions / setPermissions / removePermissions (every entry honoured)
    const added = ok(
      await unkey.keys.addPermissions({
        keyId: first.keyId,
        permissions: [{ name: "documents.write" }, { name: "documents.delete", create: true }],
      }),
    );
    expect(added.map((p) => p.name).sort()).toEqual(["documents.delete", "documents.write"]);
    const authorized = ok(
      await unkey.keys.verify({
        key: first.key,
        authorization: { permissions: { and: ["documents.read", "documents.write"] } },
      }),
    );
    expect(authorized.code).toBe("VALID");
    codes.push("VALID");
    ok(
      await unkey.keys.removePermissions({
        keyId: first.keyId,
        permissions: [{ slug: "documents.write" }, { slug: "documents.delete" }],
      }),
    );
    expect(ok(await unkey.keys.get({ keyId: first.keyId })).permissions).toEqual(["documents.read"]);
    const denied = ok(await unkey.keys.verify({ key: first.key, authorization: { permissions: "documents.write" } }));
    expect(denied.code).toBe("INSUFFICIENT_PERMISSIONS");
    codes.push("INSUFFICIENT_PERMISSIONS");
    const set = ok(await unkey.keys.setPermissions({ keyId: first.keyId, permissions: [{ slug: "documents.write" }] }));
    expect(set.map((p) => p.name)).toEqual(["documents.write"]);

    // --- keys.addRoles / removeRoles / setRoles
    const roles = ok(await unkey.keys.addRoles({ keyId: first.keyId, roles: [{ name: "admin", create: true }] }));
    expect(roles.map((r) => r.name)).toEqual(["admin"]);
    expect(ok(await unkey.keys.get({ keyId: first.keyId })).roles).toEqual(["admin", "editor"]);
    ok(await unkey.keys.removeRoles({ keyId: first.keyId, roles: [{ name: "admin" }, { id: editorId }] }));
    expect(ok(await unkey.keys.get({ keyId: first.keyId })).roles).toEqual([]);
    expect(ok(await unkey.keys.setRoles({ keyId: first.keyId, roles: [{ id: editorId }] }))).toEqual([
      { id: editorId, name: "editor" },
    ]);

    // --- keys.update: disable, rename
    ok(await unkey.keys.update({ keyId: first.keyId, name: "renamed", enabled: false }));
    expect(ok(await unkey.keys.verify({ key: first.key })).code).toBe("DISABLED");
    codes.push("DISABLED");
    ok(await unkey.keys.update({ keyId: first.keyId, enabled: true }));

    // --- keys.updateRemaining: credits run out
    expect(ok(await unkey.keys.updateRemaining({ keyId: first.keyId, op: "set", value: 1 }))).toEqual({ remaining: 1 });
    expect(ok(await unkey.keys.verify({ key: first.key }))).toMatchObject({ code: "VALID", remaining: 0 });
    codes.push("VALID");
    expect(ok(await unkey.keys.verify({ key: first.key }))).toMatchObject({ code: "USAGE_EXCEEDED", valid: false });
    codes.push("USAGE_EXCEEDED");
    expect(ok(await unkey.keys.updateRemaining({ keyId: first.keyId, op: "increment", value: 5 }))).toEqual({
      remaining: 5,
    });

    // --- keys.get
    expect(ok(await unkey.keys.get({ keyId: first.keyId }))).toMatchObject({
      id: first.keyId,
      apiId,
      name: "renamed",
      remaining: 5,
      refill: { interval: "daily", amount: 100 },
      ratelimit: { limit: 10, duration: 60_000 },
      roles: ["editor"],
      permissions: ["documents.write"],
      enabled: true,
      identity: { id: identityId, externalId: "user_123" },
    });

    // --- keys.getVerifications: real daily counts
    const daily = ok(await unkey.keys.getVerifications({ keyId: first.keyId }));
    const count = (code: string) => codes.filter((c) => c === code).length;
    expect(daily.verifications).toHaveLength(1);
    expect(daily.verifications[0]).toMatchObject({
      success: count("VALID"),
      rateLimited: 1,
      usageExceeded: count("USAGE_EXCEEDED"),
    });
    const byOwner = ok(await unkey.keys.getVerifications({ ownerId: "user_123" }));
    expect(byOwner.verifications[0]).toMatchObject({ success: count("VALID") + 1, rateLimited: 2 });

    // --- analytics.getVerifications: grouped by key, by tag, by identity
    const byKey = ok(
      await unkey.analytics.getVerifications({ apiId, groupBy: ["key"], orderBy: "total", order: "desc" }),
    );
    expect(byKey.map((row) => [row.keyId, row.total])).toEqual([
      [first.keyId, codes.length],
      [second.keyId, 2],
    ]);
    expect(byKey[0]).toMatchObject({
      valid: count("VALID"),
      rateLimited: 1,
      disabled: 1,
      insufficientPermissions: 1,
      usageExceeded: 1,
    });
    const byTag = ok(await unkey.analytics.getVerifications({ apiId, groupBy: "tag" }));
    expect(byTag).toEqual([expect.objectContaining({ tag: "path=/docs", total: 1, valid: 1 })]);
    const byIdentity = ok(
      await unkey.analytics.getVerifications({ apiId, externalId: "user_123", groupBy: ["identity", "day"] }),
    );
    expect(byIdentity).toEqual([
      expect.objectContaining({
        identity: { id: identityId, externalId: "user_123" },
        total: codes.length + 2,
        time: expect.any(Number),
      }),
    ]);
    const onlySecond = ok(await unkey.analytics.getVerifications({ apiId, keyId: [second.keyId] }));
    expect(onlySecond).toEqual([expect.objectContaining({ total: 2, valid: 1, rateLimited: 1 })]);

    // --- apis.listKeys: pagination and the identity filter
    const page1 = ok(await unkey.apis.listKeys({ apiId, limit: 1 }));
    expect(page1.keys).toHaveLength(1);
    expect(page1.total).toBe(2);
    const page2 = ok(await unkey.apis.listKeys({ apiId, limit: 1, cursor: page1.cursor! }));
    expect(page2.keys).toHaveLength(1);
    expect([page1.keys[0]!.id, page2.keys[0]!.id].sort()).toEqual([first.keyId, second.keyId].sort());
    const page3 = ok(await unkey.apis.listKeys({ apiId, limit: 1, cursor: page2.cursor! }));
    expect(page3.keys).toEqual([]);
    expect(ok(await unkey.apis.listKeys({ apiId, externalId: "nobody" }))).toEqual({ keys: [], total: 0 });

    // --- migrations.createKeys (plaintext and sha256_base64 hash) and enqueueKeys
    const migrated = ok(
      await unkey.migrations.createKeys([
        { apiId, plaintext: "legacy_secret_1", remaining: 3, permissions: ["documents.read"] },
        {
          apiId,
          hash: { value: sha256Base64("legacy_secret_2"), variant: "sha256_base64" },
          start: "legacy",
          externalId: "user_123",
        },
      ]),
    );
    expect(migrated.keyIds).toHaveLength(2);
    expect(ok(await unkey.keys.verify({ key: "legacy_secret_1" }))).toMatchObject({
      valid: true,
      remaining: 2,
      keyId: migrated.keyIds[0],
      permissions: ["documents.read"],
    });
    expect(ok(await unkey.keys.verify({ key: "legacy_secret_2" }))).toMatchObject({
      valid: true,
      keyId: migrated.keyIds[1],
      identity: { externalId: "user_123" },
    });
    const conflict = await unkey.migrations.createKeys([{ apiId, plaintext: "legacy_secret_1" }]);
    expect(conflict.error?.code).toBe("CONFLICT");
    expect(
      ok(await unkey.migrations.enqueueKeys({ migrationId: "m_1", apiId, keys: [{ plaintext: "queued_secret" }] })),
    ).toEqual({});
    expect(ok(await unkey.keys.verify({ key: "queued_secret", apiId })).valid).toBe(true);

    // --- recoverable keys: a clear 412
    expect((await unkey.keys.create({ apiId, recoverable: true })).error).toMatchObject({
      code: "PRECONDITION_FAILED",
      message: "recoverable keys are not supported by keyraft yet",
    });
    expect((await unkey.keys.get({ keyId: first.keyId, decrypt: true })).error?.code).toBe("PRECONDITION_FAILED");

    // --- deletion: key, identity, role, permission, api
    ok(await unkey.keys.delete({ keyId: second.keyId }));
    expect(ok(await unkey.keys.verify({ key: second.key })).code).toBe("NOT_FOUND");
    ok(await unkey.identities.delete({ identityId }));
    expect((await unkey.identities.get({ identityId })).error?.code).toBe("NOT_FOUND");
    ok(await unkey.permissions.deleteRole({ roleId: editorId }));
    expect((await unkey.permissions.getRole({ roleId: editorId })).error?.code).toBe("NOT_FOUND");
    ok(await unkey.permissions.deletePermission({ permissionId: readId }));
    expect((await unkey.permissions.getPermission({ permissionId: readId })).error?.code).toBe("NOT_FOUND");
    ok(await unkey.apis.delete({ apiId }));
    expect((await unkey.apis.get({ apiId })).error?.code).toBe("NOT_FOUND");
    expect(ok(await unkey.keys.verify({ key: first.key })).code).toBe("NOT_FOUND");
  });

  it("ratelimits.limit, setOverride, getOverride, listOverrides, deleteOverride", async () => {
    const limit = () =>
      unkey.ratelimits.limit({ namespace: "client.api", identifier: "user_1", limit: 2, duration: 60_000 });
    expect(ok(await limit())).toMatchObject({ success: true, limit: 2, remaining: 1 });
    expect(ok(await limit())).toMatchObject({ success: true, remaining: 0 });
    const rejected = ok(await limit());
    expect(rejected.success).toBe(false);
    expect(rejected.reset).toBeGreaterThan(server.h.clock.nowMs);

    const { overrideId } = ok(
      await unkey.ratelimits.setOverride({
        namespaceName: "client.api",
        identifier: "vip_*",
        limit: 5,
        duration: 60_000,
      }),
    );
    expect(ok(await unkey.ratelimits.getOverride({ namespaceName: "client.api", identifier: "vip_*" }))).toMatchObject({
      id: overrideId,
      limit: 5,
      duration: 60_000,
    });
    expect(
      ok(await unkey.ratelimits.limit({ namespace: "client.api", identifier: "vip_42", limit: 1, duration: 60_000 })),
    ).toMatchObject({ success: true, limit: 5, remaining: 4 });
    const overrides = ok(await unkey.ratelimits.listOverrides({ namespaceName: "client.api" }));
    expect(overrides).toMatchObject({
      total: 1,
      overrides: [{ id: overrideId, identifier: "vip_*" }],
      cursor: overrideId,
    });
    ok(await unkey.ratelimits.deleteOverride({ namespaceName: "client.api", identifier: "vip_*" }));
    expect((await unkey.ratelimits.getOverride({ namespaceName: "client.api", identifier: "vip_*" })).error?.code).toBe(
      "NOT_FOUND",
    );
    expect(
      ok(await unkey.ratelimits.limit({ namespace: "client.api", identifier: "vip_43", limit: 1, duration: 60_000 })),
    ).toMatchObject({ limit: 1, remaining: 0 });
  });

  it("errors keep the v1 shape through the client (validation, auth)", async () => {
    const bad = await unkey.apis.create({ name: "x" });
    expect(bad.error).toMatchObject({
      code: "BAD_REQUEST",
      message: "name: String must contain at least 3 character(s)",
    });
    const anonymous = new Unkey({
      rootKey: "not-a-key",
      baseUrl: server.baseUrl,
      disableTelemetry: true,
      retry: { attempts: 0 },
    });
    expect((await anonymous.apis.create({ name: "abc" })).error?.code).toBe("UNAUTHORIZED");
  });
});
