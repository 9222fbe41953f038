// The official v1 client against a listening gateway (port 0): the request/response shapes of
// @unkey/api@0.38.0 are the contract.

import { Unkey } from "@unkey/api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { harness, rootKey, type Harness } from "./app-harness.js";

let h: Harness;
let unkey: Unkey;

beforeAll(async () => {
  h = await harness();
  const address = await h.app.listen({ port: 0, host: "127.0.0.1" });
  unkey = new Unkey({ rootKey, baseUrl: address, disableTelemetry: true, retry: { attempts: 0 } });
});
afterAll(async () => {
  await h.app.close();
});

describe("@unkey/api 0.38.0", () => {
  it("creates an api and a key, verifies, updates and deletes it", async () => {
    const api = await unkey.apis.create({ name: "client-api" });
    expect(api.error).toBeUndefined();
    const apiId = api.result!.apiId;
    const created = await unkey.keys.create({
      apiId,
      prefix: "cl",
      remaining: 2,
      ratelimit: { limit: 5, duration: 60_000 },
      meta: { a: 1 },
    });
    const { key, keyId } = created.result!;
    const verified = await unkey.keys.verify({ key, apiId });
    expect(verified.result).toMatchObject({
      valid: true,
      code: "VALID",
      keyId,
      remaining: 1,
      ratelimit: { limit: 5, remaining: 4 },
    });
    expect((await unkey.keys.update({ keyId, enabled: false })).error).toBeUndefined();
    expect((await unkey.keys.verify({ key })).result).toMatchObject({ valid: false, code: "DISABLED" });
    const got = await unkey.keys.get({ keyId });
    expect(got.result).toMatchObject({ id: keyId, apiId, enabled: false, remaining: 1 });
    const perms = await unkey.keys.setPermissions({ keyId, permissions: [{ name: "read", create: true }] });
    expect(perms.result).toEqual([{ id: expect.any(String), name: "read" }]);
    const roles = await unkey.keys.setRoles({ keyId, roles: [{ name: "admin", create: true }] });
    expect(roles.result).toEqual([{ id: expect.any(String), name: "admin" }]);
    expect((await unkey.keys.delete({ keyId })).error).toBeUndefined();
    const missing = await unkey.keys.get({ keyId });
    expect(missing.error).toMatchObject({ code: "NOT_FOUND" });
  });

  it("rate limits, overrides and their listing", async () => {
    const limited = await unkey.ratelimits.limit({ namespace: "client", identifier: "u1", limit: 1, duration: 10_000 });
    expect(limited.result).toMatchObject({ success: true, limit: 1, remaining: 0 });
    expect(
      (await unkey.ratelimits.limit({ namespace: "client", identifier: "u1", limit: 1, duration: 10_000 })).result,
    ).toMatchObject({ success: false });
    const set = await unkey.ratelimits.setOverride({
      namespaceName: "client",
      identifier: "u1x",
      limit: 3,
      duration: 10_000,
    });
    expect(set.error).toBeUndefined();
    expect(set.result?.overrideId).toMatch(/^rlor_/);
    const list = await unkey.ratelimits.listOverrides({ namespaceName: "client" });
    expect(list.result).toMatchObject({ total: 1, overrides: [{ identifier: "u1x", limit: 3, duration: 10_000 }] });
    const got = await unkey.ratelimits.getOverride({ namespaceName: "client", identifier: "u1x" });
    expect(got.result).toMatchObject({ identifier: "u1x", limit: 3 });
    expect(
      (await unkey.ratelimits.deleteOverride({ namespaceName: "client", identifier: "u1x" })).error,
    ).toBeUndefined();
  });

  it("reports errors in the v1 shape", async () => {
    const bad = await unkey.keys.create({ apiId: "api_missing" });
    expect(bad.error).toMatchObject({
      code: "NOT_FOUND",
      message: "api api_missing not found",
      docs: expect.stringContaining("NOT_FOUND"),
    });
  });
});
