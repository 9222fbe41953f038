// Realistic flows that drive every method of the official v2 clients, @unkey/api@2.5.1 and the
// `Ratelimit`/`Overrides` classes of @unkey/ratelimit@2.1.4, unchanged, against keyraft nodes,
// asserting the results. The same flows run against one node (unkey-v2.test.ts) and a three-node
// cluster (test/cluster/clients-v2.test.ts): writes go to the first node, reads that must see
// them happen on the last one (bounded staleness: polled until they converge).

import { createHash } from "node:crypto";
import { Unkey } from "@unkey/api-v2";
import {
  BadRequestErrorResponse,
  ConflictErrorResponse,
  NotFoundErrorResponse,
  UnauthorizedErrorResponse,
  UnkeyError,
} from "@unkey/api-v2/models/errors";
import { Overrides, Ratelimit } from "@unkey/ratelimit-v2";
import { expect } from "vitest";

/** The migration every target node declares in KEYRAFT_KEY_MIGRATIONS. */
export const migrationEnv = { KEYRAFT_KEY_MIGRATIONS: JSON.stringify({ mig_legacy: "sha256" }) };

export interface V2Target {
  baseUrls: string[];
  rootKey: string;
}

export interface Clients {
  /** The node writes go to. */
  writer: Unkey;
  /** Another node (the same one on a single node). */
  reader: Unkey;
  all: Unkey[];
  target: V2Target;
}

export function clientsFor(target: V2Target): Clients {
  const all = target.baseUrls.map(
    (serverURL) => new Unkey({ rootKey: target.rootKey, serverURL, retryConfig: { strategy: "none" } }),
  );
  return { writer: all[0]!, reader: all[all.length - 1]!, all, target };
}

/** Polls `check` until it stops throwing (a follower catching up), at most `timeoutMs`. */
export async function converge<T>(check: () => Promise<T>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

/** The error a client call rejects with (fails the test when it resolves). */
export async function rejection(call: Promise<unknown>): Promise<UnkeyError> {
  try {
    await call;
  } catch (error) {
    expect(error).toBeInstanceOf(UnkeyError);
    return error as UnkeyError;
  }
  throw new Error("expected the call to be rejected");
}

/** The v2 error type's tail of a rejection (the body is the problem document). */
function errorType(error: UnkeyError): string {
  const body = JSON.parse(error.body) as { error: { type: string } };
  return body.error.type.replace("https://unkey.com/docs/errors/", "");
}

/** Every item of every page of a client page iterator. */
async function collect<T>(pages: AsyncIterable<{ result: { data: T[] } }>): Promise<T[]> {
  const items: T[] = [];
  for await (const page of pages) items.push(...page.result.data);
  return items;
}

export async function permissionsAndRolesFlow({ writer, reader }: Clients, tag: string): Promise<void> {
  const { data: created } = await writer.permissions.createPermission({
    name: "Read documents",
    slug: `documents.read.${tag}`,
    description: "read the documents",
  });
  expect(created.permissionId).toMatch(/^perm_/);
  const conflict = await rejection(writer.permissions.createPermission({ name: "x", slug: `DOCUMENTS.read.${tag}` }));
  expect(conflict.statusCode).toBe(409);
  expect(errorType(conflict)).toBe("unkey/data/permission_already_exists");
  const read = await converge(() => reader.permissions.getPermission({ permission: `documents.read.${tag}` }));
  expect(read.data).toEqual({
    id: created.permissionId,
    name: "Read documents",
    slug: `documents.read.${tag}`,
    description: "read the documents",
  });
  await writer.permissions.createPermission({ name: "write", slug: `documents.write.${tag}` });
  const { data: role } = await writer.permissions.createRole({
    name: `editor-${tag}`,
    description: "edits documents",
    permissions: [`documents.read.${tag}`, `documents.write.${tag}`, `documents.delete.${tag}`],
  });
  const gotRole = await converge(() => reader.permissions.getRole({ role: `EDITOR-${tag}` }));
  expect(gotRole.data.id).toBe(role.roleId);
  expect(gotRole.data.permissions?.map((p) => p.slug)).toEqual([
    `documents.delete.${tag}`,
    `documents.read.${tag}`,
    `documents.write.${tag}`,
  ]);
  const set = await writer.permissions.setRolePermissions({
    roleId: role.roleId,
    permissions: [`documents.read.${tag}`, `DOCUMENTS.READ.${tag}`, `reports.read.${tag}`],
  });
  expect(set.data.map((p) => p.slug)).toEqual([`documents.read.${tag}`, `reports.read.${tag}`]);
  const permissions = await collect(await writer.permissions.listPermissions({ limit: 2, search: tag.toUpperCase() }));
  expect(permissions.map((p) => p.slug).sort()).toEqual(
    [`documents.delete.${tag}`, `documents.read.${tag}`, `documents.write.${tag}`, `reports.read.${tag}`].sort(),
  );
  await writer.permissions.createRole({ name: `viewer-${tag}` });
  const roles = await collect(await writer.permissions.listRoles({ limit: 1, search: tag }));
  expect(roles.map((r) => r.name).sort()).toEqual([`editor-${tag}`, `viewer-${tag}`]);
  expect((await writer.permissions.deleteRole({ role: `viewer-${tag}` })).data).toEqual({});
  expect((await writer.permissions.deletePermission({ permission: `documents.write.${tag}` })).data).toEqual({});
  const gone = await rejection(writer.permissions.getRole({ role: `viewer-${tag}` }));
  expect(gone.statusCode).toBe(404);
  expect(errorType(await rejection(writer.permissions.getPermission({ permission: `documents.write.${tag}` })))).toBe(
    "unkey/data/permission_not_found",
  );
}

export async function identitiesFlow({ writer, reader }: Clients, tag: string): Promise<void> {
  const externalId = `tenant_${tag}`;
  const { data } = await writer.identities.createIdentity({
    externalId,
    meta: { plan: "pro" },
    ratelimits: [{ name: "requests", limit: 2, duration: 60_000, autoApply: true }],
  });
  expect(data.identityId).toMatch(/^id_/);
  expect((await rejection(writer.identities.createIdentity({ externalId }))).statusCode).toBe(409);
  const got = await converge(() => reader.identities.getIdentity({ identity: externalId }));
  expect(got.data).toMatchObject({
    id: data.identityId,
    externalId,
    meta: { plan: "pro" },
    ratelimits: [{ name: "requests", limit: 2, duration: 60_000, autoApply: true }],
  });
  const updated = await writer.identities.updateIdentity({
    identity: data.identityId,
    meta: { plan: "enterprise" },
    ratelimits: [
      { name: "requests", limit: 3, duration: 60_000, autoApply: true },
      { name: "tokens", limit: 100, duration: 3_600_000, autoApply: false },
    ],
  });
  expect(updated.data.meta).toEqual({ plan: "enterprise" });
  expect(updated.data.ratelimits?.map((r) => [r.name, r.limit])).toEqual([
    ["requests", 3],
    ["tokens", 100],
  ]);
  expect(updated.data.ratelimits?.[0]?.id).toBe(got.data.ratelimits?.[0]?.id);
  for (let i = 0; i < 3; i++) await writer.identities.createIdentity({ externalId: `${externalId}_extra_${i}` });
  const listed = await collect(await writer.identities.listIdentities({ limit: 2, search: externalId }));
  expect(listed.map((identity) => identity.externalId).sort()).toEqual(
    [externalId, ...[0, 1, 2].map((i) => `${externalId}_extra_${i}`)].sort(),
  );
  const deleted = await writer.identities.deleteIdentity({ identity: `${externalId}_extra_0` });
  expect(deleted.meta.requestId).toMatch(/^req_/);
  const missing = await rejection(writer.identities.deleteIdentity({ identity: `${externalId}_extra_0` }));
  expect(missing.statusCode).toBe(404);
}

/** apis.*, keys.* (verifyKey with permissions, credits, limits; reroll; migrate) and analytics. */
export async function keysFlow({ writer, reader, all }: Clients, tag: string): Promise<void> {
  const { data: api } = await writer.apis.createApi({ name: `billing-${tag}` });
  expect((await converge(() => reader.apis.getApi({ apiId: api.apiId }))).data).toEqual({
    id: api.apiId,
    name: `billing-${tag}`,
  });
  await writer.permissions.createRole({ name: `reader-${tag}`, permissions: [`docs.read.${tag}`] });
  await writer.identities.createIdentity({
    externalId: `owner_${tag}`,
    ratelimits: [{ name: "shared", limit: 5, duration: 60_000, autoApply: false }],
  });
  const { data: created } = await writer.keys.createKey({
    apiId: api.apiId,
    prefix: "sk",
    name: "first key",
    externalId: `owner_${tag}`,
    meta: { env: "test" },
    roles: [`reader-${tag}`],
    permissions: [`docs.write.${tag}`],
    credits: { remaining: 10, refill: { interval: "daily", amount: 10 } },
    ratelimits: [{ name: "burst", limit: 2, duration: 60_000, autoApply: true }],
  });
  expect(created.key).toMatch(/^sk_/);
  const key = await converge(() => reader.keys.getKey({ keyId: created.keyId }));
  expect(key.data).toMatchObject({
    keyId: created.keyId,
    name: "first key",
    enabled: true,
    meta: { env: "test" },
    roles: [`reader-${tag}`],
    credits: { remaining: 10, refill: { interval: "daily", amount: 10 } },
    identity: { externalId: `owner_${tag}` },
    ratelimits: [{ name: "burst", limit: 2, duration: 60_000, autoApply: true }],
  });
  expect([...(key.data.permissions ?? [])].sort()).toEqual([`docs.read.${tag}`, `docs.write.${tag}`]);
  expect((await writer.keys.whoami({ key: created.key })).data.keyId).toBe(created.keyId);

  // verifyKey: a permission query, credits, the auto-applied key limit, and a named identity limit
  const verify = (request: Parameters<Unkey["keys"]["verifyKey"]>[0], via: Unkey = writer) =>
    via.keys.verifyKey(request).then((response) => response.data);
  expect(
    await verify({
      key: created.key,
      permissions: `docs.read.${tag} AND (docs.write.${tag} OR admin)`,
      tags: ["path=/v1/x"],
      ratelimits: [{ name: "shared" }],
    }),
  ).toMatchObject({ valid: true, code: "VALID", keyId: created.keyId, credits: 9 });
  expect(await verify({ key: created.key, permissions: "admin" })).toMatchObject({
    valid: false,
    code: "INSUFFICIENT_PERMISSIONS",
  });
  // The refused permission check consumed nothing: the second of the 2 per minute is still free.
  expect(await verify({ key: created.key })).toMatchObject({ valid: true, credits: 8 });
  const limited = await verify({ key: created.key });
  // A refusal shows the balance it left unchanged.
  expect(limited).toMatchObject({ valid: false, code: "RATE_LIMITED", credits: 8 });
  expect(limited.ratelimits?.find((r) => r.name === "burst")).toMatchObject({ exceeded: true, remaining: 0 });
  const badQuery = await rejection(writer.keys.verifyKey({ key: created.key, permissions: "a AND" }));
  expect(errorType(badQuery)).toBe("user/bad_request/permissions_query_syntax_error");
  expect(await verify({ key: "sk_unknown" })).toEqual({ valid: false, code: "NOT_FOUND" });

  // credits and key changes
  await writer.keys.updateCredits({ keyId: created.keyId, operation: "increment", value: 5 });
  // Seen at once by the verification, although it is judged where the key's limits are served
  // (that node waits until it has applied what the writer had).
  expect(await verify({ key: created.key, ratelimits: [{ name: "burst", cost: 0 }] })).toMatchObject({ credits: 12 });
  // Unlimited; the daily refill stays and fills the balance at its next instant.
  expect((await writer.keys.updateCredits({ keyId: created.keyId, operation: "set", value: null })).data).toEqual({
    remaining: null,
    refill: { interval: "daily", amount: 10 },
  });
  expect(
    (
      await writer.keys.updateKey({
        keyId: created.keyId,
        name: "renamed",
        ratelimits: [{ name: "burst", limit: 100, duration: 60_000, autoApply: true }],
      })
    ).data,
  ).toEqual({});
  expect(
    (await writer.keys.addPermissions({ keyId: created.keyId, permissions: [`docs.admin.${tag}`] })).data.map(
      (p) => p.slug,
    ),
  ).toContain(`docs.admin.${tag}`);
  expect(
    (await writer.keys.removePermissions({ keyId: created.keyId, permissions: [`docs.admin.${tag}`] })).data.map(
      (p) => p.slug,
    ),
  ).not.toContain(`docs.admin.${tag}`);
  expect(
    (await writer.keys.setPermissions({ keyId: created.keyId, permissions: [`docs.write.${tag}`] })).data.map(
      (p) => p.slug,
    ),
  ).toEqual([`docs.write.${tag}`]);
  await writer.permissions.createRole({ name: `auditor-${tag}` });
  expect(
    (await writer.keys.addRoles({ keyId: created.keyId, roles: [`auditor-${tag}`] })).data.map((r) => r.name).sort(),
  ).toEqual([`auditor-${tag}`, `reader-${tag}`]);
  expect(
    (await writer.keys.removeRoles({ keyId: created.keyId, roles: [`auditor-${tag}`] })).data.map((r) => r.name),
  ).toEqual([`reader-${tag}`]);
  expect((await writer.keys.setRoles({ keyId: created.keyId, roles: [] })).data).toEqual([]);
  // The reader sees the role gone once it has applied the write (bounded staleness).
  await converge(async () =>
    expect(await verify({ key: created.key }, reader)).toMatchObject({
      valid: true,
      permissions: [`docs.write.${tag}`],
    }),
  );

  // reroll: the old key keeps working until its grace period ends, the new one inherits the configuration
  const { data: rerolled } = await writer.keys.rerollKey({ keyId: created.keyId, expiration: 60_000 });
  expect(rerolled.keyId).not.toBe(created.keyId);
  // Verified at once through the node that took the reroll, although a key with rate limits is
  // judged by the node serving its subject: that node waits until it has applied the reroll.
  expect(await verify({ key: rerolled.key })).toMatchObject({ valid: true, keyId: rerolled.keyId });
  expect(await verify({ key: created.key })).toMatchObject({ valid: true, keyId: created.keyId });
  expect((await writer.keys.getKey({ keyId: rerolled.keyId })).data).toMatchObject({ name: "renamed" });

  // migrateKeys: an existing secret imported by its hash verifies as it is
  const legacySecret = `legacy_${tag}_0123456789abcdef`;
  const hash = createHash("sha256").update(legacySecret).digest("base64");
  const migrated = await writer.keys.migrateKeys({
    migrationId: "mig_legacy",
    apiId: api.apiId,
    keys: [{ hash, name: "imported", credits: { remaining: 3 } }, { hash }],
  });
  expect(migrated.data.migrated.map((item) => item.hash)).toEqual([hash]);
  expect(migrated.data.failed).toEqual([hash]);
  await converge(async () =>
    expect(await verify({ key: legacySecret }, reader)).toMatchObject({ valid: true, credits: 2 }),
  );
  const unknownMigration = await rejection(
    writer.keys.migrateKeys({ migrationId: "mig_unknown", apiId: api.apiId, keys: [{ hash: "abcdef" }] }),
  );
  expect(errorType(unknownMigration)).toBe("unkey/data/migration_not_found");

  // listKeys pages through every live key of the api
  const listed = await collect(await writer.apis.listKeys({ apiId: api.apiId, limit: 1 }));
  expect(listed.map((k) => k.keyId).sort()).toEqual(
    [created.keyId, rerolled.keyId, migrated.data.migrated[0]!.keyId].sort(),
  );

  // analytics: every node's verifications, merged on whichever node answers
  for (const via of all) await verify({ key: rerolled.key, tags: ["route=analytics"] }, via);
  const keySpace = `ks_${api.apiId.slice("api_".length)}`;
  const rows = await converge(async () => {
    const answer = await reader.analytics.getVerifications({
      query: `SELECT key_id, outcome, COUNT(*) AS n FROM key_verifications_v1 WHERE key_space_id = '${keySpace}' AND has(tags, 'route=analytics') GROUP BY key_id, outcome`,
    });
    expect(answer.data).toEqual([{ key_id: rerolled.keyId, outcome: "VALID", n: all.length }]);
    return answer.data;
  });
  expect(rows).toHaveLength(1);
  const perDay = await writer.analytics.getVerifications({
    query: `SELECT outcome, SUM(count) AS total FROM key_verifications_per_day_v1 WHERE key_space_id = '${keySpace}' AND time >= now() - INTERVAL 1 DAY GROUP BY outcome ORDER BY outcome`,
  });
  expect(perDay.data.map((row) => row["outcome"])).toEqual(
    expect.arrayContaining(["INSUFFICIENT_PERMISSIONS", "RATE_LIMITED", "VALID"]),
  );
  const refused = await rejection(writer.analytics.getVerifications({ query: "SELECT * FROM system.tables" }));
  expect(errorType(refused)).toBe("user/bad_request/invalid_analytics_table");

  // deletion
  expect((await writer.keys.deleteKey({ keyId: created.keyId })).data).toEqual({});
  await converge(async () => expect(await verify({ key: created.key })).toEqual({ valid: false, code: "NOT_FOUND" }));
  expect((await writer.apis.deleteApi({ apiId: api.apiId })).data).toEqual({});
  expect((await rejection(writer.apis.getApi({ apiId: api.apiId }))).statusCode).toBe(404);
}

export async function ratelimitFlow({ writer, reader }: Clients, tag: string): Promise<void> {
  const namespace = `login-${tag}`;
  const results = [];
  for (let i = 0; i < 4; i++) {
    results.push((await writer.ratelimit.limit({ namespace, identifier: "ip_1", limit: 3, duration: 60_000 })).data);
  }
  expect(results.map((r) => r.success)).toEqual([true, true, true, false]);
  expect(results.map((r) => r.remaining)).toEqual([2, 1, 0, 0]);
  expect(results[3]!.reset).toBeGreaterThan(Date.now() - 60_000);
  // The counter is the cluster's, whichever node answers.
  expect(
    (await reader.ratelimit.limit({ namespace, identifier: "ip_1", limit: 3, duration: 60_000 })).data.success,
  ).toBe(false);
  const multi = await writer.ratelimit.multiLimit([
    { namespace, identifier: "ip_2", limit: 5, duration: 60_000, cost: 2 },
    { namespace, identifier: "ip_1", limit: 3, duration: 60_000 },
  ]);
  expect(multi.data.passed).toBe(false);
  expect(multi.data.limits.map((l) => [l.identifier, l.passed])).toEqual([
    ["ip_2", true],
    ["ip_1", false],
  ]);
  expect(
    (await writer.ratelimit.limit({ namespace, identifier: "ip_2", limit: 5, duration: 60_000 })).data.remaining,
  ).toBe(4);

  const { data: override } = await writer.ratelimit.setOverride({
    namespace,
    identifier: "customer_*",
    limit: 10,
    duration: 60_000,
  });
  const got = await converge(() => reader.ratelimit.getOverride({ namespace, identifier: "customer_7" }));
  expect(got.data).toEqual({ overrideId: override.overrideId, identifier: "customer_*", limit: 10, duration: 60_000 });
  await converge(async () => {
    const applied = await reader.ratelimit.limit({
      namespace,
      identifier: "customer_probe",
      limit: 1,
      duration: 60_000,
      cost: 0,
    });
    expect(applied.data).toMatchObject({ limit: 10, overrideId: override.overrideId });
  });
  expect(
    (await writer.ratelimit.limit({ namespace, identifier: "customer_7", limit: 1, duration: 60_000 })).data,
  ).toMatchObject({ success: true, limit: 10, remaining: 9, overrideId: override.overrideId });
  await writer.ratelimit.setOverride({ namespace, identifier: "blocked", limit: 0, duration: 60_000 });
  expect(
    (await writer.ratelimit.limit({ namespace, identifier: "blocked", limit: 100, duration: 60_000 })).data.success,
  ).toBe(false);
  const overrides = await collect(await writer.ratelimit.listOverrides({ namespace, limit: 1 }));
  expect(overrides.map((o) => o.identifier).sort()).toEqual(["blocked", "customer_*"]);
  expect((await writer.ratelimit.deleteOverride({ namespace, identifier: "customer_*" })).data).toEqual({});
  const missing = await rejection(writer.ratelimit.getOverride({ namespace, identifier: "customer_7" }));
  expect(errorType(missing)).toBe("unkey/data/ratelimit_override_not_found");
}

/** Errors reach the client as UnkeyError with the v2 status and problem body. */
export async function errorsFlow({ writer, target }: Clients): Promise<void> {
  const wrongKey = new Unkey({
    rootKey: "not_a_root_key_0000",
    serverURL: target.baseUrls[0]!,
    retryConfig: { strategy: "none" },
  });
  const unauthorized = await rejection(wrongKey.apis.createApi({ name: "nope-api" }));
  expect(unauthorized.statusCode).toBe(401);
  // The errors reach the client as its typed classes (status and Content-Type as it expects).
  expect(unauthorized).toBeInstanceOf(UnauthorizedErrorResponse);
  expect(errorType(unauthorized)).toBe("unkey/authentication/key_not_found");
  const invalid = await rejection(writer.apis.createApi({ name: "ab" }));
  expect(invalid.statusCode).toBe(400);
  expect(invalid).toBeInstanceOf(BadRequestErrorResponse);
  const missing = await rejection(writer.identities.getIdentity({ identity: "nobody_here" }));
  expect(missing).toBeInstanceOf(NotFoundErrorResponse);
  await writer.permissions.createPermission({ name: "twice", slug: "errors.twice" }).catch(() => undefined);
  const conflict = await rejection(writer.permissions.createPermission({ name: "twice", slug: "errors.twice" }));
  expect(conflict).toBeInstanceOf(ConflictErrorResponse);
  const body = JSON.parse(invalid.body) as { meta: { requestId: string }; error: { errors: unknown[] } };
  expect(body.meta.requestId).toMatch(/^req_/);
  expect(body.error.errors.length).toBeGreaterThan(0);
}

/** The `Ratelimit` and `Overrides` classes of @unkey/ratelimit@2.1.4. */
export async function ratelimitPackageFlow(target: V2Target, tag: string): Promise<void> {
  const baseUrl = target.baseUrls[0]!;
  const namespace = `pkg-${tag}`;
  const limiter = new Ratelimit({ rootKey: target.rootKey, baseUrl, namespace, limit: 2, duration: "1m" });
  const results = [];
  for (let i = 0; i < 3; i++) results.push(await limiter.limit("user_1"));
  expect(results.map((r) => r.success)).toEqual([true, true, false]);
  expect(results.map((r) => r.remaining)).toEqual([1, 0, 0]);
  expect(results.every((r) => r.limit === 2)).toBe(true);
  expect(results[2]!.reset).toBeGreaterThan(Date.now());
  // A rejection is cached until its reset: served locally.
  expect((await limiter.limit("user_1")).success).toBe(false);
  expect(await limiter.limit("user_2", { cost: 2 })).toMatchObject({ success: true, remaining: 0 });
  expect(await limiter.limit("user_3", { limit: { limit: 5, duration: "30s" } })).toMatchObject({
    success: true,
    limit: 5,
    remaining: 4,
  });

  const overrides = new Overrides({ rootKey: target.rootKey, baseUrl: target.baseUrls[target.baseUrls.length - 1]! });
  const set = await overrides.setOverride({ namespace, identifier: "vip_*", limit: 50, duration: 60_000 });
  expect(set.data.overrideId).toMatch(/^rlor_/);
  // The limiter's node has the override once it answers it (a read, so nothing is consumed meanwhile).
  const limiterNode = new Overrides({ rootKey: target.rootKey, baseUrl });
  await converge(() => limiterNode.getOverride({ namespace, identifier: "vip_9" }));
  expect(await limiter.limit("vip_9")).toMatchObject({ success: true, limit: 50, overrideId: set.data.overrideId });
  expect((await overrides.getOverride({ namespace, identifier: "vip_1" })).data).toMatchObject({ limit: 50 });
  const listed = await overrides.listOverrides({ namespace });
  expect(listed.data.map((o) => o.identifier)).toEqual(["vip_*"]);
  expect((await overrides.deleteOverride({ namespace, identifier: "vip_*" })).data).toEqual({});

  const wrong = new Ratelimit({ rootKey: "not_a_root_key_0000", baseUrl, namespace, limit: 1, duration: 1000 });
  await expect(wrong.limit("x")).rejects.toThrow();
  const fallback = new Ratelimit({
    rootKey: "not_a_root_key_0000",
    baseUrl,
    namespace,
    limit: 1,
    duration: 1000,
    onError: () => ({ success: true, limit: 0, remaining: 0, reset: 0 }),
  });
  expect(await fallback.limit("x")).toMatchObject({ success: true, limit: 0 });
}
