// One state for both APIs: identities, permissions, roles, overrides and analytics made or
// changed through one version are used through the other.
import { afterEach, describe, expect, it } from "vitest";
import { harness, type Harness } from "./app-harness.js";
import { dataOf, v2 } from "./v2-harness.js";

let h: Harness;
afterEach(async () => {
  await h?.app.close();
});

const v1Verify = async (body: Record<string, unknown>) =>
  (await h.post("/v1/keys.verifyKey", body)).json() as { valid: boolean; code: string; identity?: unknown };

describe("v1 <-> v2 over one state", () => {
  it("an identity made in v2 with an autoApply limit limits a key made in v1, verified through v1", async () => {
    h = await harness();
    dataOf(
      await v2(h, "identities.createIdentity", {
        externalId: "acme",
        ratelimits: [{ name: "per_tenant", limit: 2, duration: 60_000, autoApply: true }],
      }),
    );
    const { key } = await h.createKey({ externalId: "acme" });
    const codes = [];
    for (let i = 0; i < 3; i++) codes.push((await v1Verify({ key })).code);
    expect(codes).toEqual(["VALID", "VALID", "RATE_LIMITED"]);
    // Deleting the identity through v2: the v1 key keeps working, without it.
    await v2(h, "identities.deleteIdentity", { identity: "acme" });
    expect((await h.get("/v1/identities.getIdentity?externalId=acme")).statusCode).toBe(404);
    const after = await v1Verify({ key });
    expect(after).toMatchObject({ valid: true });
    expect(after.identity).toBeUndefined();
  });

  it("a v1 update of an identity's limits keeps the autoApply v2 gave a name; new names are not auto-applied", async () => {
    h = await harness();
    dataOf(
      await v2(h, "identities.createIdentity", {
        externalId: "acme",
        ratelimits: [{ name: "per_tenant", limit: 5, duration: 60_000, autoApply: true }],
      }),
    );
    const updated = await h.post("/v1/identities.updateIdentity", {
      externalId: "acme",
      ratelimits: [
        { name: "per_tenant", limit: 1, duration: 60_000 },
        { name: "extra", limit: 9, duration: 1000 },
      ],
    });
    expect(updated.statusCode, updated.body).toBe(200);
    expect(dataOf(await v2(h, "identities.getIdentity", { identity: "acme" }))).toMatchObject({
      ratelimits: [
        { name: "extra", limit: 9, autoApply: false },
        { name: "per_tenant", limit: 1, autoApply: true },
      ],
    });
    const { key } = await h.createKey({ externalId: "acme" });
    expect((await v1Verify({ key })).code).toBe("VALID");
    expect((await v1Verify({ key })).code).toBe("RATE_LIMITED");
  });

  it("permissions and roles made in v2 authorise v1 verifications; setRolePermissions shows in v1", async () => {
    h = await harness();
    dataOf(await v2(h, "permissions.createPermission", { name: "Read", slug: "docs.read" }));
    const { roleId } = dataOf<{ roleId: string }>(
      await v2(h, "permissions.createRole", { name: "writer", permissions: ["docs.write"] }),
    );
    // v1 names them in another case: the same records.
    const { key } = await h.createKey({ permissions: ["DOCS.READ"], roles: ["Writer"] });
    expect(h.machine.state.permissions.size).toBe(3); // `*`, docs.read, docs.write
    const query = { and: ["docs.read", "docs.write"] };
    expect(await v1Verify({ key, authorization: { permissions: query } })).toMatchObject({ valid: true });
    dataOf(await v2(h, "permissions.setRolePermissions", { roleId, permissions: ["docs.admin"] }));
    expect((await h.get(`/v1/permissions.getRole?roleId=${roleId}`)).json()).toMatchObject({
      permissions: ["docs.admin"],
    });
    expect(await v1Verify({ key, authorization: { permissions: query } })).toMatchObject({
      code: "INSUFFICIENT_PERMISSIONS",
    });
    // A permission deleted through v1 disappears from the v2 role.
    const adminId = h.machine.state.permissionIdBySlugFolded.get("docs.admin")!;
    await h.post("/v1/permissions.deletePermission", { permissionId: adminId });
    expect(dataOf(await v2(h, "permissions.getRole", { role: roleId }))).not.toHaveProperty("permissions");
  });

  it("overrides: set in v1, read and applied in v2; set in v2, applied and listed in v1", async () => {
    h = await harness();
    await h.post("/v1/ratelimits.limit", { namespace: "api", identifier: "warmup", limit: 1, duration: 1000 });
    await h.post("/v1/ratelimits.setOverride", {
      namespaceName: "api",
      identifier: "team_*",
      limit: 3,
      duration: 60_000,
    });
    expect(
      dataOf(await v2(h, "ratelimit.limit", { namespace: "api", identifier: "team_9", limit: 1, duration: 1000 })),
    ).toMatchObject({ limit: 3, remaining: 2 });
    dataOf(await v2(h, "ratelimit.setOverride", { namespace: "api", identifier: "solo", limit: 2, duration: 60_000 }));
    const v1 = (
      await h.post("/v1/ratelimits.limit", {
        namespace: "api",
        identifier: "solo",
        limit: 100,
        duration: 1000,
      })
    ).json() as { limit: number; remaining: number };
    expect(v1).toMatchObject({ limit: 2, remaining: 1 });
    const listed = (await h.get("/v1/ratelimits.listOverrides?namespaceName=api")).json() as {
      overrides: { identifier: string }[];
    };
    expect(listed.overrides.map((o) => o.identifier).sort()).toEqual(["solo", "team_*"]);
    await v2(h, "ratelimit.deleteOverride", { namespace: "api", identifier: "team_*" });
    expect((await h.get("/v1/ratelimits.getOverride?namespaceName=api&identifier=team_*")).statusCode).toBe(404);
  });

  it("v1 and v2 analytics count the same verifications", async () => {
    h = await harness();
    const { key, keyId, apiId } = await h.createKey({ remaining: 2 });
    for (let i = 0; i < 3; i++) await v1Verify({ key, tags: ["t"] });
    const v1Rows = (await h.get(`/v1/analytics.getVerifications?apiId=${apiId}&groupBy=key`)).json() as {
      valid: number;
      usageExceeded: number;
      total: number;
    }[];
    expect(v1Rows).toEqual([expect.objectContaining({ valid: 2, usageExceeded: 1, total: 3 })]);
    const v2Rows = dataOf<Record<string, unknown>[]>(
      await v2(h, "analytics.getVerifications", {
        query: `SELECT key_id, countIf(outcome = 'VALID') AS valid, countIf(outcome = 'USAGE_EXCEEDED') AS usage_exceeded, COUNT(*) AS total, SUM(spent_credits) AS spent FROM key_verifications_v1 WHERE key_space_id = 'ks_${apiId.slice(4)}' GROUP BY key_id`,
      }),
    );
    expect(v2Rows).toEqual([{ key_id: keyId, valid: 2, usage_exceeded: 1, total: 3, spent: 2 }]);
  });
});
