// v2 identities.* and permissions.* through app.inject, with scenarios of upstream's route tests
// (svc/api/routes/v2_identities_*, v2_permissions_*), and the same objects read through v1.
import { afterEach, describe, expect, it } from "vitest";
import { harness, type Harness } from "./app-harness.js";
import { dataOf, problemOf, v2 } from "./v2-harness.js";

let h: Harness;
afterEach(async () => {
  await h?.app.close();
});

type Page<T> = { data: T[]; pagination: { hasMore: boolean; cursor?: string } };
const pageOf = <T>(response: Awaited<ReturnType<typeof v2>>): Page<T> => {
  expect(response.statusCode, response.body).toBe(200);
  return response.json() as Page<T>;
};

describe("v2 identities", () => {
  it("create, get by id or externalId, update with set semantics, clear meta, delete, recreate", async () => {
    h = await harness();
    const { identityId } = dataOf<{ identityId: string }>(
      await v2(h, "identities.createIdentity", {
        externalId: "user_1",
        meta: { plan: "pro" },
        ratelimits: [
          { name: "requests", limit: 10, duration: 60_000, autoApply: true },
          { name: "tokens", limit: 100, duration: 3_600_000 },
        ],
      }),
    );
    expect(identityId).toMatch(/^id_/);
    const byExternal = dataOf<{ id: string; ratelimits: { id: string; name: string }[] }>(
      await v2(h, "identities.getIdentity", { identity: "user_1" }),
    );
    expect(byExternal).toMatchObject({
      id: identityId,
      externalId: "user_1",
      meta: { plan: "pro" },
      ratelimits: [
        { name: "requests", limit: 10, duration: 60_000, autoApply: true },
        { name: "tokens", limit: 100, duration: 3_600_000, autoApply: false },
      ],
    });
    expect(dataOf(await v2(h, "identities.getIdentity", { identity: identityId }))).toEqual(byExternal);
    const requestsId = byExternal.ratelimits[0]!.id;
    expect(requestsId).toMatch(/^rl_/);

    // update: add new, update existing (its id stays), delete one
    const updated = dataOf<{ ratelimits: { id: string; name: string; limit: number }[] }>(
      await v2(h, "identities.updateIdentity", {
        identity: identityId,
        ratelimits: [
          { name: "requests", limit: 20, duration: 60_000, autoApply: true },
          { name: "bursts", limit: 5, duration: 1000 },
        ],
      }),
    );
    expect(updated.ratelimits.map((r) => [r.name, r.limit])).toEqual([
      ["bursts", 5],
      ["requests", 20],
    ]);
    expect(updated.ratelimits.find((r) => r.name === "requests")?.id).toBe(requestsId);
    // clear meta, remove all limits
    expect(dataOf(await v2(h, "identities.updateIdentity", { identity: "user_1", meta: {}, ratelimits: [] }))).toEqual({
      id: identityId,
      externalId: "user_1",
    });

    // duplicate names are a 400 (create and update)
    const duplicate = [
      { name: "same", limit: 1, duration: 1000 },
      { name: "same", limit: 2, duration: 1000 },
    ];
    expect(
      problemOf(
        await v2(h, "identities.updateIdentity", { identity: identityId, ratelimits: duplicate }),
        400,
        "unkey/application/invalid_input",
      ).detail,
    ).toBe("Ratelimit with name 'same' is already defined in the request");
    problemOf(
      await v2(h, "identities.createIdentity", { externalId: "user_2", ratelimits: duplicate }),
      400,
      "unkey/application/invalid_input",
    );

    // delete: body is {meta} only; deleting again is 404; the externalId can be used again
    const deleted = await v2(h, "identities.deleteIdentity", { identity: "user_1" });
    expect(deleted.statusCode).toBe(200);
    expect(Object.keys(deleted.json() as object)).toEqual(["meta"]);
    // The client types deleteIdentity's errors only as problem+json: that is what they are sent as.
    const again404 = await v2(h, "identities.deleteIdentity", { identity: identityId });
    expect(again404.statusCode).toBe(404);
    expect(again404.headers["content-type"]).toMatch(/^application\/problem\+json/);
    expect((again404.json() as { error: { type: string } }).error.type).toBe(
      "https://unkey.com/docs/errors/unkey/data/identity_not_found",
    );
    problemOf(await v2(h, "identities.getIdentity", { identity: identityId }), 404, "unkey/data/identity_not_found");
    const again = dataOf<{ identityId: string }>(await v2(h, "identities.createIdentity", { externalId: "user_1" }));
    expect(again.identityId).not.toBe(identityId);
    expect((await v2(h, "identities.deleteIdentity", { identity: "user_1" })).statusCode).toBe(200);
  });

  it("createIdentity twice is 409; bad input is 400", async () => {
    h = await harness();
    dataOf(await v2(h, "identities.createIdentity", { externalId: "dup" }));
    const conflict = problemOf(
      await v2(h, "identities.createIdentity", { externalId: "dup" }),
      409,
      "unkey/data/identity_already_exists",
    );
    expect(conflict.detail).toBe("Identity with externalId 'dup' already exists in this workspace.");
    for (const body of [
      { externalId: "" },
      { externalId: "x", ratelimits: [{ name: "zero", limit: 0, duration: 1000 }] },
      { externalId: "x", ratelimits: [{ name: "fast", limit: 1, duration: 999 }] },
      { externalId: "x", meta: { big: "x".repeat(70_000) } },
    ]) {
      problemOf(await v2(h, "identities.createIdentity", body), 400, "unkey/application/invalid_input");
    }
  });

  it("listIdentities pages by id, searches id and externalId case-insensitively, and needs read_identity", async () => {
    h = await harness();
    const ids: string[] = [];
    for (const externalId of ["Alpha_1", "beta_2", "gamma_3"]) {
      ids.push(dataOf<{ identityId: string }>(await v2(h, "identities.createIdentity", { externalId })).identityId);
    }
    // v1 takes any externalId: `%` must match literally in a search.
    ids.push(
      ((await h.post("/v1/identities.createIdentity", { externalId: "delta%4" })).json() as { identityId: string })
        .identityId,
    );
    ids.sort();
    const first = pageOf<{ id: string }>(await v2(h, "identities.listIdentities", { limit: 3 }));
    expect(first.data.map((i) => i.id)).toEqual(ids.slice(0, 3));
    expect(first.pagination).toEqual({ hasMore: true, cursor: ids[3] });
    const second = pageOf<{ id: string }>(
      await v2(h, "identities.listIdentities", { limit: 3, cursor: first.pagination.cursor }),
    );
    expect(second.data.map((i) => i.id)).toEqual([ids[3]]);
    expect(second.pagination).toEqual({ hasMore: false });
    const search = async (text: string) =>
      pageOf<{ externalId: string }>(await v2(h, "identities.listIdentities", { search: text })).data.map(
        (i) => i.externalId,
      );
    expect(await search("ALPHA")).toEqual(["Alpha_1"]);
    expect(await search("%")).toEqual(["delta%4"]);
    expect((await search("  ")).length).toBe(4);
    problemOf(await v2(h, "identities.listIdentities", { limit: 0 }), 400, "unkey/application/invalid_input");
    problemOf(await v2(h, "identities.listIdentities", { limit: 101 }), 400, "unkey/application/invalid_input");
    problemOf(
      await v2(h, "identities.listIdentities", { search: "x".repeat(257) }),
      400,
      "unkey/application/invalid_input",
    );
    const reader = await h.rootKeyWith([`identity.${ids[0]}.read_identity`]);
    const denied = problemOf(
      await v2(h, "identities.listIdentities", {}, reader),
      403,
      "unkey/authorization/insufficient_permissions",
    );
    expect(denied.detail).toContain("identity.*.read_identity");
    // ...but that key reads its one identity
    expect(dataOf(await v2(h, "identities.getIdentity", { identity: ids[0] }, reader))).toMatchObject({ id: ids[0] });
    problemOf(
      await v2(h, "identities.getIdentity", { identity: ids[1] }, reader),
      403,
      "unkey/authorization/insufficient_permissions",
    );
  });

  it("an identity made in v1 reads in v2, and one made in v2 reads in v1", async () => {
    h = await harness();
    const v1 = await h.post("/v1/identities.createIdentity", {
      externalId: "from_v1",
      meta: { a: 1 },
      ratelimits: [{ name: "v1limit", limit: 3, duration: 1000 }],
    });
    const v1Id = (v1.json() as { identityId: string }).identityId;
    expect(dataOf(await v2(h, "identities.getIdentity", { identity: "from_v1" }))).toMatchObject({
      id: v1Id,
      meta: { a: 1 },
      ratelimits: [{ name: "v1limit", limit: 3, duration: 1000, autoApply: false }],
    });
    dataOf(await v2(h, "identities.createIdentity", { externalId: "from_v2", meta: { b: 2 } }));
    expect((await h.get("/v1/identities.getIdentity?externalId=from_v2")).json()).toMatchObject({
      externalId: "from_v2",
      meta: { b: 2 },
      ratelimits: [],
    });
    dataOf(
      await v2(h, "identities.updateIdentity", {
        identity: v1Id,
        ratelimits: [{ name: "v2limit", limit: 9, duration: 2000 }],
      }),
    );
    expect((await h.get(`/v1/identities.getIdentity?identityId=${v1Id}`)).json()).toMatchObject({
      ratelimits: [{ name: "v2limit", limit: 9, duration: 2000 }],
    });
  });
});

describe("v2 permissions and roles", () => {
  it("create, conflict (ignoring case), get by id or slug, list with search and pages, delete", async () => {
    h = await harness();
    const { permissionId } = dataOf<{ permissionId: string }>(
      await v2(h, "permissions.createPermission", {
        name: "Read documents",
        slug: "documents.read",
        description: "lets a key read documents",
      }),
    );
    const conflict = problemOf(
      await v2(h, "permissions.createPermission", { name: "x", slug: "DOCUMENTS.read" }),
      409,
      "unkey/data/permission_already_exists",
    );
    expect(conflict.detail).toBe("A permission with slug 'DOCUMENTS.read' already exists in this workspace");
    const expected = {
      id: permissionId,
      name: "Read documents",
      slug: "documents.read",
      description: "lets a key read documents",
    };
    expect(dataOf(await v2(h, "permissions.getPermission", { permission: permissionId }))).toEqual(expected);
    expect(dataOf(await v2(h, "permissions.getPermission", { permission: "documents.read" }))).toEqual(expected);
    for (const body of [
      { name: "x", slug: "has space" },
      { name: "x", slug: "a".repeat(129) },
      { name: "", slug: "ok" },
    ]) {
      problemOf(await v2(h, "permissions.createPermission", body), 400, "unkey/application/invalid_input");
    }
    dataOf(await v2(h, "permissions.createPermission", { name: "write", slug: "documents.write" }));
    dataOf(await v2(h, "permissions.createPermission", { name: "billing", slug: "billing.*" }));
    const search = pageOf<{ slug: string }>(await v2(h, "permissions.listPermissions", { search: "LETS A KEY" }));
    expect(search.data.map((p) => p.slug)).toEqual(["documents.read"]);
    const all = pageOf<{ id: string; slug: string }>(await v2(h, "permissions.listPermissions", {}));
    // The root key's `*` permission is listed too.
    expect(all.data.map((p) => p.slug).sort()).toEqual(["*", "billing.*", "documents.read", "documents.write"]);
    const firstPage = pageOf<{ id: string }>(await v2(h, "permissions.listPermissions", { limit: 2 }));
    const secondPage = pageOf<{ id: string }>(
      await v2(h, "permissions.listPermissions", { limit: 2, cursor: firstPage.pagination.cursor }),
    );
    expect([...firstPage.data, ...secondPage.data].map((p) => p.id)).toEqual(all.data.map((p) => p.id));
    expect(secondPage.pagination).toEqual({ hasMore: false });

    expect(dataOf(await v2(h, "permissions.deletePermission", { permission: "Documents.Read" }))).toEqual({});
    problemOf(
      await v2(h, "permissions.deletePermission", { permission: permissionId }),
      404,
      "unkey/data/permission_not_found",
    );
    problemOf(
      await v2(h, "permissions.deletePermission", { permission: "*" }),
      412,
      "unkey/application/protected_resource",
    );
  });

  it("createRole links existing slugs, creates missing ones only with create_permission; 409 on a taken name", async () => {
    h = await harness();
    dataOf(await v2(h, "permissions.createPermission", { name: "read", slug: "docs.read" }));
    const { roleId } = dataOf<{ roleId: string }>(
      await v2(h, "permissions.createRole", {
        name: "editor",
        description: "edits docs",
        permissions: ["DOCS.read", "docs.write", "docs.write"],
      }),
    );
    expect(dataOf(await v2(h, "permissions.getRole", { role: "Editor" }))).toMatchObject({
      id: roleId,
      name: "editor",
      description: "edits docs",
      permissions: [
        { name: "read", slug: "docs.read" },
        { name: "docs.write", slug: "docs.write" },
      ].map((p) => expect.objectContaining(p)),
    });
    problemOf(await v2(h, "permissions.createRole", { name: "EDITOR" }), 409, "unkey/data/role_already_exists");
    const noCreate = await h.rootKeyWith(["rbac.*.create_role", "rbac.*.add_permission_to_role"]);
    const denied = problemOf(
      await v2(h, "permissions.createRole", { name: "viewer", permissions: ["docs.read", "new.one"] }, noCreate),
      403,
      "unkey/authorization/insufficient_permissions",
    );
    expect(denied.detail).toContain("rbac.*.create_permission");
    // An existing permission needs no create_permission.
    dataOf(await v2(h, "permissions.createRole", { name: "viewer", permissions: ["docs.read"] }, noCreate));
    const noAdd = await h.rootKeyWith(["rbac.*.create_role"]);
    problemOf(
      await v2(h, "permissions.createRole", { name: "other", permissions: ["docs.read"] }, noAdd),
      403,
      "unkey/authorization/insufficient_permissions",
    );
    const roles = pageOf<{ name: string }>(await v2(h, "permissions.listRoles", { search: "VIEW" }));
    expect(roles.data.map((r) => r.name)).toEqual(["viewer"]);
    expect(dataOf(await v2(h, "permissions.deleteRole", { role: "viewer" }))).toEqual({});
    problemOf(await v2(h, "permissions.getRole", { role: "viewer" }), 404, "unkey/data/role_not_found");
  });

  it("setRolePermissions: replace, deduplicate, create, repeat, clear; keys holding the role follow", async () => {
    h = await harness();
    dataOf(await v2(h, "permissions.createPermission", { name: "keep", slug: "keep.permission" }));
    const { roleId } = dataOf<{ roleId: string }>(await v2(h, "permissions.createRole", { name: "r" }));
    const { key } = await h.createKey({ roles: ["r"] });
    const set = async (permissions: string[]) =>
      dataOf<{ slug: string }[]>(await v2(h, "permissions.setRolePermissions", { roleId, permissions }));
    const first = await set(["KEEP.Permission", "new.permission", "NEW.Permission"]);
    expect(first.map((p) => p.slug)).toEqual(["keep.permission", "new.permission"]);
    expect((await h.post("/v1/keys.verifyKey", { key })).json()).toMatchObject({
      permissions: ["keep.permission", "new.permission"],
    });
    expect(await set(["new.permission", "keep.permission"])).toEqual(first);
    expect(await set([])).toEqual([]);
    expect(
      ((await h.post("/v1/keys.verifyKey", { key })).json() as { permissions?: string[] }).permissions ?? [],
    ).toEqual([]);
    problemOf(
      await v2(h, "permissions.setRolePermissions", { roleId: "role_unknown", permissions: [] }),
      404,
      "unkey/data/role_not_found",
    );
    const addOnly = await h.rootKeyWith(["rbac.*.add_permission_to_role"]);
    problemOf(
      await v2(h, "permissions.setRolePermissions", { roleId, permissions: [] }, addOnly),
      403,
      "unkey/authorization/insufficient_permissions",
    );
    const noCreate = await h.rootKeyWith(["rbac.*.add_permission_to_role", "rbac.*.remove_permission_from_role"]);
    problemOf(
      await v2(h, "permissions.setRolePermissions", { roleId, permissions: ["brand.new"] }, noCreate),
      403,
      "unkey/authorization/insufficient_permissions",
    );
    problemOf(
      await v2(h, "permissions.setRolePermissions", { roleId: "a b", permissions: [] }),
      400,
      "unkey/application/invalid_input",
    );
  });

  it("a role and permission made in v1 are used in v2 and the other way round", async () => {
    h = await harness();
    const perm = (await h.post("/v1/permissions.createPermission", { name: "v1.perm" })).json() as {
      permissionId: string;
    };
    const role = (await h.post("/v1/permissions.createRole", { name: "v1role", permissions: ["v1.perm"] })).json() as {
      roleId: string;
    };
    expect(dataOf(await v2(h, "permissions.getRole", { role: role.roleId }))).toMatchObject({
      name: "v1role",
      permissions: [{ id: perm.permissionId, slug: "v1.perm" }],
    });
    const { roleId } = dataOf<{ roleId: string }>(
      await v2(h, "permissions.createRole", { name: "v2role", description: "made in v2", permissions: ["v2.perm"] }),
    );
    expect((await h.get(`/v1/permissions.getRole?roleId=${roleId}`)).json()).toMatchObject({
      name: "v2role",
      description: "made in v2",
      permissions: ["v2.perm"],
    });
    // The v1 key route finds the v2 permission by slug ignoring case.
    const { keyId } = await h.createKey({});
    expect((await h.post("/v1/keys.addPermissions", { keyId, permissions: [{ name: "V2.PERM" }] })).statusCode).toBe(
      200,
    );
  });
});
