// v2 ratelimit.*, overrides and analytics.getVerifications through app.inject, with scenarios of
// upstream's route tests (svc/api/routes/v2_ratelimit_*, v2_analytics_get_verifications), and
// counters and overrides shared with v1.
import { afterEach, describe, expect, it } from "vitest";
import { harness, type Harness } from "./app-harness.js";
import { dataOf, problemOf, v2 } from "./v2-harness.js";

let h: Harness;
afterEach(async () => {
  await h?.app.close();
});

interface LimitData {
  limit: number;
  remaining: number;
  reset: number;
  success: boolean;
  overrideId?: string;
}

const limit = async (body: Record<string, unknown>, token?: string) =>
  dataOf<LimitData>(await v2(h, "ratelimit.limit", { limit: 3, duration: 60_000, ...body }, token));

describe("v2 ratelimit.limit", () => {
  it("admits `limit` per window, honours cost, reports remaining and a reset in unix ms", async () => {
    h = await harness();
    const results: LimitData[] = [];
    for (let i = 0; i < 4; i++) results.push(await limit({ namespace: "api", identifier: "user_1" }));
    expect(results.map((r) => r.success)).toEqual([true, true, true, false]);
    expect(results.map((r) => r.remaining)).toEqual([2, 1, 0, 0]);
    expect(results.every((r) => r.limit === 3 && r.overrideId === undefined)).toBe(true);
    expect(results[3]!.reset).toBeGreaterThan(h.clock.nowMs);
    expect(await limit({ namespace: "api", identifier: "user_2", cost: 3 })).toMatchObject({
      success: true,
      remaining: 0,
    });
    // cost 0 never consumes
    expect(await limit({ namespace: "api", identifier: "user_2", cost: 0 })).toMatchObject({ success: true });
    // The namespace can be named by id too; v1 ratelimits.limit shares the counters.
    const namespaceId = h.machine.state.namespaceIdByName.get("api")!;
    expect(await limit({ namespace: namespaceId, identifier: "user_3" })).toMatchObject({ remaining: 2 });
    const v1 = await h.post("/v1/ratelimits.limit", {
      namespace: "api",
      identifier: "user_3",
      limit: 3,
      duration: 60_000,
    });
    expect(v1.json()).toMatchObject({ success: true, remaining: 1 });
  });

  it("auto-creates a namespace only with create_namespace; bad input is 400", async () => {
    h = await harness();
    const limitOnly = await h.rootKeyWith(["ratelimit.*.limit"]);
    const denied = problemOf(
      await v2(h, "ratelimit.limit", { namespace: "fresh", identifier: "a", limit: 1, duration: 1000 }, limitOnly),
      403,
      "unkey/authorization/insufficient_permissions",
    );
    expect(denied.detail).toContain("create_namespace");
    expect(h.machine.state.namespaceIdByName.has("fresh")).toBe(false);
    expect(await limit({ namespace: "any characters / ✓ here", identifier: "a" })).toMatchObject({ success: true });
    await limit({ namespace: "fresh", identifier: "a" });
    const freshId = h.machine.state.namespaceIdByName.get("fresh")!;
    const scoped = await h.rootKeyWith([`ratelimit.${freshId}.limit`]);
    expect(await limit({ namespace: "fresh", identifier: "b" }, scoped)).toMatchObject({ success: true });
    problemOf(
      await v2(h, "ratelimit.limit", { namespace: "api", identifier: "b", limit: 1, duration: 1000 }, scoped),
      403,
      "unkey/authorization/insufficient_permissions",
    );
    for (const body of [
      { namespace: "x", identifier: "a", limit: 1, duration: 1000, cost: -1 },
      { identifier: "a", limit: 1, duration: 1000 },
      { namespace: "x", identifier: "a", limit: 0, duration: 1000 },
      { namespace: "x", identifier: "a", limit: 1, duration: 999 },
      { namespace: "x", identifier: "a", limit: 1, duration: 2_592_000_001 },
      { namespace: "x", identifier: "", limit: 1, duration: 1000 },
      { namespace: "x", identifier: "a", limit: 1, duration: 1000, async: true },
    ]) {
      problemOf(await v2(h, "ratelimit.limit", body), 400, "unkey/application/invalid_input");
    }
  });

  it("an override applies (exact and wildcard) and reports its id; limit 0 blocks", async () => {
    h = await harness();
    await limit({ namespace: "api", identifier: "warmup" });
    const set = async (identifier: string, overrideLimit: number) =>
      dataOf<{ overrideId: string }>(
        await v2(h, "ratelimit.setOverride", { namespace: "api", identifier, limit: overrideLimit, duration: 60_000 }),
      ).overrideId;
    const exact = await set("vip", 10);
    const wildcard = await set("customer_*", 5);
    const blocked = await set("banned_*", 0);
    expect(await limit({ namespace: "api", identifier: "vip" })).toMatchObject({
      limit: 10,
      remaining: 9,
      overrideId: exact,
    });
    expect(await limit({ namespace: "api", identifier: "customer_42" })).toMatchObject({
      limit: 5,
      remaining: 4,
      overrideId: wildcard,
    });
    expect(await limit({ namespace: "api", identifier: "banned_1" })).toMatchObject({
      success: false,
      limit: 0,
      remaining: 0,
      overrideId: blocked,
    });
    // ...through v1 too
    const v1 = await h.post("/v1/ratelimits.limit", {
      namespace: "api",
      identifier: "banned_2",
      limit: 9,
      duration: 1000,
    });
    expect(v1.json()).toMatchObject({ success: false, limit: 0 });
    // Setting the same identifier again updates the same override.
    expect(await set("vip", 20)).toBe(exact);
  });
});

describe("v2 ratelimit.multiLimit", () => {
  it("judges all together: one refusal consumes nothing, every entry is reported", async () => {
    h = await harness();
    await limit({ namespace: "a", identifier: "x", limit: 1 });
    const multi = async (body: unknown[]) =>
      dataOf<{ passed: boolean; limits: (LimitData & { passed: boolean; namespace: string })[] }>(
        await v2(h, "ratelimit.multiLimit", body),
      );
    const refused = await multi([
      { namespace: "b", identifier: "y", limit: 5, duration: 60_000 },
      { namespace: "a", identifier: "x", limit: 1, duration: 60_000 },
    ]);
    expect(refused.passed).toBe(false);
    expect(refused.limits.map((l) => [l.namespace, l.passed, l.remaining])).toEqual([
      ["b", true, 5],
      ["a", false, 0],
    ]);
    // Nothing was consumed in "b".
    expect(await limit({ namespace: "b", identifier: "y", limit: 5 })).toMatchObject({ remaining: 4 });
    const admitted = await multi([
      { namespace: "b", identifier: "y", limit: 5, duration: 60_000, cost: 2 },
      { namespace: "c", identifier: "z", limit: 2, duration: 60_000 },
    ]);
    expect(admitted).toMatchObject({ passed: true, limits: [{ remaining: 2 }, { remaining: 1 }] });
    problemOf(await v2(h, "ratelimit.multiLimit", []), 400, "unkey/application/invalid_input");
    problemOf(await v2(h, "ratelimit.multiLimit", {}), 400, "unkey/application/invalid_input");
  });

  it("needs ratelimit.*.limit or the limit permission of every namespace", async () => {
    h = await harness();
    await limit({ namespace: "a", identifier: "x" });
    await limit({ namespace: "b", identifier: "x" });
    const aId = h.machine.state.namespaceIdByName.get("a")!;
    const onlyA = await h.rootKeyWith([`ratelimit.${aId}.limit`]);
    const body = [
      { namespace: "a", identifier: "x", limit: 5, duration: 60_000 },
      { namespace: "b", identifier: "x", limit: 5, duration: 60_000 },
    ];
    problemOf(await v2(h, "ratelimit.multiLimit", body, onlyA), 403, "unkey/authorization/insufficient_permissions");
    expect(dataOf(await v2(h, "ratelimit.multiLimit", body.slice(0, 1), onlyA))).toMatchObject({ passed: true });
  });
});

describe("v2 overrides", () => {
  it("set, get (wildcards match), list with pages, delete; 404s; v1 sees the same overrides", async () => {
    h = await harness();
    problemOf(
      await v2(h, "ratelimit.setOverride", { namespace: "none", identifier: "a", limit: 1, duration: 1000 }),
      404,
      "unkey/data/ratelimit_namespace_not_found",
    );
    await limit({ namespace: "api", identifier: "warmup" });
    const ids: string[] = [];
    for (const identifier of ["a", "b", "c_*"]) {
      ids.push(
        dataOf<{ overrideId: string }>(
          await v2(h, "ratelimit.setOverride", { namespace: "api", identifier, limit: 7, duration: 60_000 }),
        ).overrideId,
      );
    }
    expect(dataOf(await v2(h, "ratelimit.getOverride", { namespace: "api", identifier: "c_9" }))).toEqual({
      overrideId: ids[2],
      identifier: "c_*",
      limit: 7,
      duration: 60_000,
    });
    problemOf(
      await v2(h, "ratelimit.getOverride", { namespace: "api", identifier: "zzz" }),
      404,
      "unkey/data/ratelimit_override_not_found",
    );
    // An unauthorised read of an existing override answers the same 404 as a missing one.
    const stranger = await h.rootKeyWith(["api.*.read_api"]);
    const masked = await v2(h, "ratelimit.getOverride", { namespace: "api", identifier: "a" }, stranger);
    const missing = await v2(h, "ratelimit.getOverride", { namespace: "api", identifier: "zzz" }, stranger);
    expect(masked.statusCode).toBe(404);
    expect((masked.json() as { error: unknown }).error).toEqual((missing.json() as { error: unknown }).error);
    const first = await v2(h, "ratelimit.listOverrides", { namespace: "api", limit: 2 });
    const firstBody = first.json() as { data: { overrideId: string }[]; pagination: { cursor?: string } };
    const second = await v2(h, "ratelimit.listOverrides", {
      namespace: "api",
      limit: 2,
      cursor: firstBody.pagination.cursor,
    });
    const secondBody = second.json() as { data: { overrideId: string }[]; pagination: { hasMore: boolean } };
    expect([...firstBody.data, ...secondBody.data].map((o) => o.overrideId)).toEqual([...ids].sort());
    expect(secondBody.pagination).toEqual({ hasMore: false });
    expect((await h.get("/v1/ratelimits.listOverrides?namespaceName=api")).json()).toMatchObject({ total: 3 });
    expect(dataOf(await v2(h, "ratelimit.deleteOverride", { namespace: "api", identifier: "a" }))).toEqual({});
    problemOf(
      await v2(h, "ratelimit.deleteOverride", { namespace: "api", identifier: "a" }),
      404,
      "unkey/data/ratelimit_override_not_found",
    );
    // setOverride after a delete makes it live again.
    dataOf(await v2(h, "ratelimit.setOverride", { namespace: "api", identifier: "a", limit: 1, duration: 1000 }));
    const empty = await v2(h, "ratelimit.listOverrides", { namespace: "api" });
    expect((empty.json() as { data: unknown[] }).data).toHaveLength(3);
    // An override set in v1 reads in v2.
    await h.post("/v1/ratelimits.setOverride", {
      namespaceName: "api",
      identifier: "from_v1",
      limit: 4,
      duration: 1000,
    });
    expect(dataOf(await v2(h, "ratelimit.getOverride", { namespace: "api", identifier: "from_v1" }))).toMatchObject({
      limit: 4,
    });
  });
});

describe("v2 analytics.getVerifications", () => {
  it("answers the SQL subset from this node's verifications, scoped by read_analytics", async () => {
    h = await harness();
    const a = await h.createKey({ remaining: 10 });
    const b = await h.createKey({});
    for (let i = 0; i < 3; i++) await h.post("/v1/keys.verifyKey", { key: a.key, tags: ["path=/a"] });
    await h.post("/v1/keys.verifyKey", { key: b.key });
    const query = async (sql: string, token?: string) =>
      dataOf<Record<string, unknown>[]>(await v2(h, "analytics.getVerifications", { query: sql }, token));
    expect(
      await query(
        "SELECT key_id, COUNT(*) AS n, SUM(spent_credits) AS spent FROM key_verifications_v1 GROUP BY key_id ORDER BY n DESC",
      ),
    ).toEqual([
      { key_id: a.keyId, n: 3, spent: 3 },
      { key_id: b.keyId, n: 1, spent: 0 },
    ]);
    expect(
      await query(
        "SELECT COUNT(*) AS n FROM key_verifications_per_day_v1 WHERE has(tags, 'path=/a') AND outcome = 'VALID'",
      ),
    ).toEqual([{ n: 1 }]);
    const scoped = await h.rootKeyWith([`api.${a.apiId}.read_analytics`]);
    expect(await query("SELECT COUNT(*) AS n FROM key_verifications_v1", scoped)).toEqual([{ n: 3 }]);
    const unknownApi = await h.rootKeyWith(["api.api_doesnotexist.read_analytics"]);
    expect(await query("SELECT COUNT(*) AS n FROM key_verifications_v1", unknownApi)).toEqual([]);
    problemOf(
      await v2(
        h,
        "analytics.getVerifications",
        { query: "SELECT 1 FROM key_verifications_v1" },
        await h.rootKeyWith(["api.*.read_api"]),
      ),
      403,
      "unkey/authorization/insufficient_permissions",
    );
    const refusals: [string, string][] = [
      ["", "invalid_analytics_query"],
      ["SELECT * FROM system.tables", "invalid_analytics_table"],
      ["DELETE FROM key_verifications_v1", "invalid_analytics_query_type"],
      ["SELECT avg(spent_credits) FROM key_verifications_v1", "invalid_analytics_function"],
      [
        "SELECT COUNT(*) FROM key_verifications_v1 WHERE time > now() - INTERVAL 100 DAY",
        "query_range_exceeds_retention",
      ],
      ["SELECT nope FROM key_verifications_v1", "invalid_analytics_query"],
    ];
    for (const [sql, type] of refusals) {
      const error = problemOf(
        await v2(h, "analytics.getVerifications", { query: sql }),
        400,
        `user/bad_request/${type}`,
      );
      expect(error.errors?.[0]?.location).toBe("body/query");
    }
  });
});
