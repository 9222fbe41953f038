import { createHash } from "node:crypto";
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

type Verified = {
  valid: boolean;
  code: string;
  keyId?: string;
  credits?: number;
  ratelimits?: {
    name: string;
    exceeded: boolean;
    remaining: number;
    limit: number;
    reset: number;
    autoApply: boolean;
    id: string;
    duration: number;
  }[];
  [field: string]: unknown;
};
const verify = async (body: Record<string, unknown>, token?: string) =>
  dataOf<Verified>(await v2(h, "keys.verifyKey", body, token));

describe("keys.verifyKey (v2)", () => {
  it("valid, expired after its time, disabled; the minimal NOT_FOUND for unknown and deleted keys", async () => {
    h = await harness();
    const { key, keyId } = await createV2Key({ expires: h.clock.nowMs + 3000, name: "k" });
    expect(await verify({ key })).toEqual({
      valid: true,
      code: "VALID",
      keyId,
      name: "k",
      enabled: true,
      expires: h.clock.nowMs + 3000,
    });
    h.clock.nowMs += 4000;
    expect(await verify({ key })).toMatchObject({ valid: false, code: "EXPIRED", keyId });
    const disabled = await createV2Key({ enabled: false, expires: h.clock.nowMs - 1 });
    expect(await verify({ key: disabled.key })).toMatchObject({ code: "DISABLED" });
    expect(await verify({ key: "nope" })).toEqual({ valid: false, code: "NOT_FOUND" });
    dataOf(await v2(h, "keys.deleteKey", { keyId }));
    expect(await verify({ key })).toEqual({ valid: false, code: "NOT_FOUND" });
  });

  it("credits: default cost 1, cost above the balance deducts nothing, cost 0 at 0", async () => {
    h = await harness();
    const { key } = await createV2Key({ credits: { remaining: 5 } });
    expect(await verify({ key })).toMatchObject({ code: "VALID", credits: 4 });
    expect(await verify({ key, credits: { cost: 15 } })).toMatchObject({ code: "USAGE_EXCEEDED", credits: 4 });
    expect(await verify({ key, credits: { cost: 4 } })).toMatchObject({ code: "VALID", credits: 0 });
    expect(await verify({ key })).toMatchObject({ code: "USAGE_EXCEEDED", credits: 0 });
    expect(await verify({ key, credits: { cost: 0 } })).toMatchObject({ code: "VALID", credits: 0 });
  });

  it("every code but NOT_FOUND shows the balance of a key with credits, unchanged when nothing was spent", async () => {
    h = await harness();
    const api = await h.createApi();
    const limited = await createV2Key(
      {
        credits: { remaining: 5 },
        permissions: ["a"],
        ratelimits: [{ name: "tight", limit: 1, duration: 60_000, autoApply: true }],
      },
      api,
    );
    expect(await verify({ key: limited.key })).toMatchObject({ code: "VALID", credits: 4 });
    expect(await verify({ key: limited.key })).toMatchObject({ code: "RATE_LIMITED", credits: 4 });
    expect(await verify({ key: limited.key, permissions: "b" })).toMatchObject({
      code: "INSUFFICIENT_PERMISSIONS",
      credits: 4,
    });
    const disabled = await createV2Key({ credits: { remaining: 3 }, enabled: false }, api);
    expect(await verify({ key: disabled.key })).toMatchObject({ code: "DISABLED", credits: 3 });
    const expiring = await createV2Key({ credits: { remaining: 2 }, expires: h.clock.nowMs + 1000 }, api);
    h.clock.nowMs += 2000;
    expect(await verify({ key: expiring.key })).toMatchObject({ code: "EXPIRED", credits: 2 });
    const unlimited = await createV2Key(
      { ratelimits: [{ name: "tiny", limit: 1, duration: 60_000, autoApply: true }] },
      api,
    );
    await verify({ key: unlimited.key });
    const refused = await verify({ key: unlimited.key });
    expect(refused.code).toBe("RATE_LIMITED");
    expect(refused).not.toHaveProperty("credits");
  });

  it("permission queries against direct and role permissions; * is literal", async () => {
    h = await harness();
    await h.post("/v1/permissions.createPermission", { name: "role.perm" });
    await h.post("/v1/permissions.createRole", { name: "role1", permissions: ["role.perm"] });
    const { key } = await createV2Key({ permissions: ["a", "b", "api.*", "ns:read"], roles: ["role1"] });
    expect(await verify({ key, permissions: "a AND (b OR c)" })).toMatchObject({ code: "VALID" });
    expect(await verify({ key, permissions: "a AND c" })).toMatchObject({ code: "INSUFFICIENT_PERMISSIONS" });
    expect(await verify({ key, permissions: "api.*" })).toMatchObject({ code: "VALID" });
    expect(await verify({ key, permissions: "api.read" })).toMatchObject({ code: "INSUFFICIENT_PERMISSIONS" });
    expect(await verify({ key, permissions: "ns:read and role.perm" })).toMatchObject({ code: "VALID" });
    const many = Array.from({ length: 25 }, (_, i) => `p${i}`).join(" OR ");
    expect(await verify({ key, permissions: `${many} OR a` })).toMatchObject({ code: "VALID" });
    const info = await verify({ key });
    expect(info["roles"]).toEqual(["role1"]);
    expect(info["permissions"]).toEqual(["a", "api.*", "b", "ns:read", "role.perm"]);
  });

  it("a malformed query is 400 permissions_query_syntax_error with upstream's details", async () => {
    h = await harness();
    const { key } = await createV2Key({});
    const cases: [string, string][] = [
      ["permission_1 AND", "Unexpected end of query. Expected a permission identifier or opening parenthesis."],
      [
        "(permission_1 AND permission_2",
        "Missing closing parenthesis ')' at position 30. Every opening parenthesis must have a matching closing parenthesis.",
      ],
      [
        "permission_1 AND ()",
        "Empty parentheses found at position 18. Parentheses must contain at least one permission or expression.",
      ],
      [
        "AND permission_1",
        "Unexpected token 'AND' at position 0. Expected a permission identifier or opening parenthesis.",
      ],
    ];
    for (const [query, detail] of cases) {
      const error = problemOf(
        await v2(h, "keys.verifyKey", { key, permissions: query }),
        400,
        "user/bad_request/permissions_query_syntax_error",
      );
      expect(error.detail).toBe(detail);
    }
    problemOf(await v2(h, "keys.verifyKey", { key, permissions: "" }), 400, "unkey/application/invalid_input");
    // Only reached for a found key: an unknown key with a bad query is NOT_FOUND.
    expect(await verify({ key: "nope", permissions: "AND" })).toEqual({ valid: false, code: "NOT_FOUND" });
  });

  it("400s of the schema: apiId, negative costs, tags, missing key", async () => {
    h = await harness();
    const { key, apiId } = await createV2Key({});
    const bad = async (body: Record<string, unknown>) =>
      problemOf(await v2(h, "keys.verifyKey", body), 400, "unkey/application/invalid_input");
    await bad({ key, apiId });
    await bad({ key, credits: { cost: -1 } });
    await bad({ key, ratelimits: [{ name: "abc", cost: -1 }] });
    await bad({ key, tags: Array.from({ length: 21 }, (_, i) => `t${i}`) });
    await bad({ key, tags: [""] });
    await bad({ key, tags: ["x".repeat(513)] });
    await bad({});
    expect(await verify({ key, tags: ["path=/api/users", "ü ✓ & <>"] })).toMatchObject({ code: "VALID" });
  });

  it("root keys: a verify permission for another api or none at all answers NOT_FOUND", async () => {
    h = await harness();
    const { key, apiId, keyId } = await createV2Key({});
    const other = await h.rootKeyWith(["api.api_other.verify_key"]);
    expect(await verify({ key }, other)).toEqual({ valid: false, code: "NOT_FOUND" });
    const none = await h.rootKeyWith(["api.*.read_key"]);
    expect(await verify({ key }, none)).toEqual({ valid: false, code: "NOT_FOUND" });
    const scoped = await h.rootKeyWith([`api.${apiId}.verify_key`]);
    expect(await verify({ key }, scoped)).toMatchObject({ code: "VALID", keyId });
    const wildcard = await h.rootKeyWith(["api.*.verify_key"]);
    expect(await verify({ key }, wildcard)).toMatchObject({ code: "VALID" });
    problemOf(await v2(h, "keys.verifyKey", { key }, null), 400, "unkey/application/invalid_input");
    problemOf(await v2(h, "keys.verifyKey", { key }, "invalid_token_here"), 401, "unkey/authentication/key_not_found");
  });

  it("rate limits: auto-applied, named, inline, identity, and the answer's fields", async () => {
    h = await harness();
    const auto = await createV2Key({
      ratelimits: [{ name: "auto-apply", limit: 1, duration: 60_000, autoApply: true }],
    });
    const first = await verify({ key: auto.key });
    expect(first).toMatchObject({ code: "VALID" });
    expect(first.ratelimits).toEqual([
      {
        exceeded: false,
        id: expect.stringMatching(/^rl_/),
        name: "auto-apply",
        limit: 1,
        duration: 60_000,
        reset: expect.any(Number),
        remaining: 0,
        autoApply: true,
      },
    ]);
    expect(first.ratelimits?.[0]?.reset).toBeGreaterThan(h.clock.nowMs);
    expect(await verify({ key: auto.key })).toMatchObject({ code: "RATE_LIMITED", ratelimits: [{ exceeded: true }] });

    const named = await createV2Key({
      ratelimits: [{ name: "requests", limit: 1, duration: 60_000, autoApply: false }],
    });
    expect((await verify({ key: named.key })).ratelimits).toBeUndefined();
    expect(await verify({ key: named.key, ratelimits: [{ name: "requests" }] })).toMatchObject({ code: "VALID" });
    expect(await verify({ key: named.key, ratelimits: [{ name: "requests" }] })).toMatchObject({
      code: "RATE_LIMITED",
    });

    const inline = await createV2Key({});
    const custom = { key: inline.key, ratelimits: [{ name: "requests", cost: 15, limit: 20, duration: 60_000 }] };
    expect(await verify(custom)).toMatchObject({
      code: "VALID",
      ratelimits: [{ id: "", autoApply: false, remaining: 5 }],
    });
    expect(await verify(custom)).toMatchObject({ code: "RATE_LIMITED" });

    dataOf(await v2(h, "keys.updateKey", { keyId: inline.keyId, externalId: "user_1" }));
    // The identity's limits through v1 identities (a v1 identity limit is not auto-applied).
    await h.post("/v1/identities.updateIdentity", {
      externalId: "user_1",
      ratelimits: [{ name: "tokens", limit: 4, duration: 1_800_000 }],
    });
    const tokens = { key: inline.key, ratelimits: [{ name: "tokens", cost: 4 }] };
    expect(await verify(tokens)).toMatchObject({ code: "VALID" });
    expect(await verify(tokens)).toMatchObject({ code: "RATE_LIMITED" });
  });

  it("a requested limit that does not exist is 412; an inline limit of 0 is 400", async () => {
    h = await harness();
    const { key } = await createV2Key({});
    const error = problemOf(
      await v2(h, "keys.verifyKey", { key, ratelimits: [{ name: "missing" }] }),
      412,
      "unkey/application/precondition_failed",
    );
    expect(error.detail).toContain("ratelimit 'missing' was requested but does not exist for key");
    const withIdentity = await createV2Key({ externalId: "user_2" });
    const identityError = problemOf(
      await v2(h, "keys.verifyKey", { key: withIdentity.key, ratelimits: [{ name: "missing" }] }),
      412,
      "unkey/application/precondition_failed",
    );
    expect(identityError.detail).toContain("external ID: 'user_2'");
    problemOf(
      await v2(h, "keys.verifyKey", { key, ratelimits: [{ name: "zero", limit: 0, duration: 1000 }] }),
      400,
      "unkey/application/invalid_input",
    );
  });

  it("several limits: 12/min and 200/month, the 13th call is limited and the month reports 188", async () => {
    h = await harness();
    const { key } = await createV2Key({
      ratelimits: [
        { name: "minute", limit: 12, duration: 60_000, autoApply: true },
        { name: "month", limit: 200, duration: 30 * 86_400_000, autoApply: true },
      ],
    });
    for (let i = 0; i < 12; i++) expect((await verify({ key })).code).toBe("VALID");
    const thirteenth = await verify({ key });
    expect(thirteenth.code).toBe("RATE_LIMITED");
    expect(thirteenth.ratelimits?.find((limit) => limit.name === "month")).toMatchObject({
      exceeded: false,
      remaining: 188,
    });
    expect(thirteenth.ratelimits?.find((limit) => limit.name === "minute")).toMatchObject({ exceeded: true });
  });

  it("identity limits are shared by the identity's keys; key limits are per key", async () => {
    h = await harness();
    const apiId = await h.createApi();
    await h.post("/v1/identities.createIdentity", {
      externalId: "shared_user",
      ratelimits: [{ name: "shared", limit: 5, duration: 60_000 }],
    });
    const one = await createV2Key(
      { externalId: "shared_user", ratelimits: [{ name: "own", limit: 1, duration: 60_000, autoApply: true }] },
      apiId,
    );
    const two = await createV2Key(
      { externalId: "shared_user", ratelimits: [{ name: "own", limit: 1, duration: 60_000, autoApply: true }] },
      apiId,
    );
    const shared = (key: string) => verify({ key, ratelimits: [{ name: "shared" }] });
    expect((await shared(one.key)).code).toBe("VALID");
    // `own` admits one call per key: key two still has its own.
    expect((await shared(two.key)).code).toBe("VALID");
    expect((await shared(one.key)).code).toBe("RATE_LIMITED");
  });

  it("records the verification for analytics as v1 does (minimal NOT_FOUND is not recorded)", async () => {
    h = await harness();
    const { key, apiId } = await createV2Key({
      ratelimits: [{ name: "one", limit: 1, duration: 60_000, autoApply: true }],
    });
    await verify({ key, tags: ["a=b"] });
    await verify({ key, tags: ["a=b"] });
    await verify({ key: "nope" });
    const rows = await h.get(`/v1/analytics.getVerifications?apiId=${apiId}&groupBy=tags`);
    expect(rows.json()).toEqual([expect.objectContaining({ tags: ["a=b"], total: 2, valid: 1, rateLimited: 1 })]);
  });
});

describe("keys.migrateKeys and on-demand migration", () => {
  const seamSecret = "resend_abcd1234_longsecretpart0123456789";
  const hex = (text: string) => createHash("sha256").update(text).digest("hex");
  const b64 = (text: string) => createHash("sha256").update(text).digest("base64");

  it("sha256: imported hashes verify directly; existing and repeated hashes fail", async () => {
    h = await harness({ deps: { keyMigrations: new Map([["mig_legacy", "sha256"]]) } });
    const apiId = await h.createApi();
    const secret = "legacy_secret_value_1";
    const migrated = dataOf<{ migrated: { hash: string; keyId: string }[]; failed: string[] }>(
      await v2(h, "keys.migrateKeys", {
        migrationId: "mig_legacy",
        apiId,
        keys: [
          {
            hash: b64(secret),
            name: "legacy",
            credits: { remaining: 3 },
            permissions: ["read"],
            roles: ["migrated-role"],
          },
          { hash: b64("other") },
          { hash: b64("other") },
        ],
      }),
    );
    expect(migrated.migrated.map((entry) => entry.hash)).toEqual([b64(secret), b64("other")]);
    expect(migrated.failed).toEqual([b64("other")]);
    expect(await verify({ key: secret })).toMatchObject({
      code: "VALID",
      name: "legacy",
      credits: 2,
      roles: ["migrated-role"],
    });
    const again = dataOf<{ migrated: unknown[]; failed: string[] }>(
      await v2(h, "keys.migrateKeys", { migrationId: "mig_legacy", apiId, keys: [{ hash: b64(secret) }] }),
    );
    expect(again).toEqual({ migrated: [], failed: [b64(secret)] });
  });

  it("404s: unknown migration, deleted api; 403 before the api lookup", async () => {
    h = await harness({ deps: { keyMigrations: new Map([["mig_legacy", "sha256"]]) } });
    const apiId = await h.createApi();
    const missing = problemOf(
      await v2(h, "keys.migrateKeys", { migrationId: "mig_nope", apiId, keys: [{ hash: "abc" }] }),
      404,
      "unkey/data/migration_not_found",
    );
    expect(missing.detail).toBe("The requested Migration does not exist or has been deleted.");
    dataOf(await v2(h, "apis.deleteApi", { apiId }));
    problemOf(
      await v2(h, "keys.migrateKeys", { migrationId: "mig_legacy", apiId, keys: [{ hash: "abc" }] }),
      404,
      "unkey/data/api_not_found",
    );
    const reader = await h.rootKeyWith(["api.*.read_key"]);
    problemOf(
      await v2(
        h,
        "keys.migrateKeys",
        { migrationId: "mig_legacy", apiId: "api_nope", keys: [{ hash: "abc" }] },
        reader,
      ),
      403,
      "unkey/authorization/insufficient_permissions",
    );
    problemOf(
      await v2(h, "keys.migrateKeys", { migrationId: "mig_legacy", apiId, keys: [] }),
      400,
      "unkey/application/invalid_input",
    );
  });

  it("seam prefixed keys verify only with migrationId, then without it", async () => {
    h = await harness({ deps: { keyMigrations: new Map([["mig_seam", "github.com/seamapi/prefixed-api-key"]]) } });
    const apiId = await h.createApi();
    const long = seamSecret.split("_").at(-1)!;
    const { migrated } = dataOf<{ migrated: { keyId: string }[] }>(
      await v2(h, "keys.migrateKeys", { migrationId: "mig_seam", apiId, keys: [{ hash: hex(long) }] }),
    );
    const keyId = migrated[0]!.keyId;
    expect(dataOf(await v2(h, "keys.getKey", { keyId }))).toMatchObject({ start: "" });
    expect(await verify({ key: seamSecret })).toEqual({ valid: false, code: "NOT_FOUND" });
    problemOf(
      await v2(h, "keys.verifyKey", { key: "no-underscores", migrationId: "mig_seam" }),
      400,
      "unkey/authentication/malformed",
    );
    expect(await verify({ key: seamSecret, migrationId: "mig_nope" })).toEqual({ valid: false, code: "NOT_FOUND" });
    expect(await verify({ key: seamSecret, migrationId: "mig_seam" })).toMatchObject({ code: "VALID", keyId });
    expect(await verify({ key: seamSecret })).toMatchObject({ code: "VALID", keyId });
    expect(dataOf(await v2(h, "keys.getKey", { keyId }))).toMatchObject({ start: "resend_abcd" });
    // Through v1 as well, now that it has keyraft's hash.
    expect(((await h.post("/v1/keys.verifyKey", { key: seamSecret }, null)).json() as { code: string }).code).toBe(
      "VALID",
    );
  });
});
