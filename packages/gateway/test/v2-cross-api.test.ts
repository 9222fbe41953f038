// One key state behind both APIs: what v1 makes, v2 reads, verifies and changes, and back
// (docs/api-v2.md has the field mapping).
import { afterEach, describe, expect, it } from "vitest";
import { harness, type Harness } from "./app-harness.js";
import { dataOf, v2 } from "./v2-harness.js";

let h: Harness;
afterEach(async () => {
  await h?.app.close();
});

const v1Verify = async (body: Record<string, unknown>) =>
  (await h.post("/v1/keys.verifyKey", body, null)).json() as Record<string, unknown>;

describe("v1 and v2 on one state", () => {
  it("a v1 key reads through v2 with the field mapping (remaining/refill -> credits, ratelimit -> ratelimits[default], ownerId -> identity)", async () => {
    h = await harness();
    const { keyId } = await h.createKey({
      name: "v1 key",
      ownerId: "user_1",
      meta: { plan: "pro" },
      remaining: 10,
      refill: { interval: "daily", amount: 10 },
      ratelimit: { type: "fast", limit: 5, duration: 60_000 },
      permissions: ["read"],
    });
    const view = dataOf<Record<string, unknown>>(await v2(h, "keys.getKey", { keyId }));
    expect(view).toMatchObject({
      keyId,
      name: "v1 key",
      meta: { plan: "pro" },
      credits: { remaining: 10, refill: { interval: "daily", amount: 10 } },
      ratelimits: [{ name: "default", limit: 5, duration: 60_000, autoApply: true }],
      identity: { externalId: "user_1" },
      permissions: ["read"],
    });
    expect(view).not.toHaveProperty("ownerId");
    const monthly = await h.createKey({ remaining: 3, refill: { interval: "monthly", amount: 3, refillDay: 15 } });
    expect(dataOf(await v2(h, "keys.getKey", { keyId: monthly.keyId }))).toMatchObject({
      credits: { remaining: 3, refill: { interval: "monthly", amount: 3, refillDay: 15 } },
    });
  });

  it("a v1 key verifies through v2 and spends the same credits and limit counters", async () => {
    h = await harness();
    const { key, keyId } = await h.createKey({ remaining: 3, ratelimit: { type: "fast", limit: 2, duration: 60_000 } });
    expect(await v1Verify({ key })).toMatchObject({ code: "VALID", remaining: 2 });
    const viaV2 = dataOf<Record<string, unknown>>(await v2(h, "keys.verifyKey", { key }));
    expect(viaV2).toMatchObject({ code: "VALID", credits: 1, ratelimits: [{ name: "default", remaining: 0 }] });
    expect(await v1Verify({ key })).toMatchObject({ code: "RATE_LIMITED" });
    expect(dataOf(await v2(h, "keys.getKey", { keyId }))).toMatchObject({ credits: { remaining: 1 } });
  });

  it("a v2 key is read, verified and changed through v1", async () => {
    h = await harness();
    const apiId = await h.createApi();
    const { keyId, key } = dataOf<{ keyId: string; key: string }>(
      await v2(h, "keys.createKey", {
        apiId,
        name: "v2 key",
        externalId: "user_2",
        credits: { remaining: 5, refill: { interval: "monthly", amount: 5, refillDay: 1 } },
        ratelimits: [
          { name: "default", limit: 3, duration: 60_000, autoApply: true },
          { name: "tokens", limit: 100, duration: 60_000, autoApply: false },
        ],
        permissions: ["p1"],
      }),
    );
    const v1View = (await h.get(`/v1/keys.getKey?keyId=${keyId}`)).json() as Record<string, unknown>;
    expect(v1View).toMatchObject({
      id: keyId,
      apiId,
      name: "v2 key",
      ownerId: "user_2",
      remaining: 5,
      refill: { interval: "monthly", amount: 5, refillDay: 1 },
      ratelimit: { limit: 3, duration: 60_000 },
      permissions: ["p1"],
    });
    expect(await v1Verify({ key, ratelimits: [{ name: "tokens", cost: 10 }] })).toMatchObject({
      code: "VALID",
      remaining: 4,
    });
    // v1 updateRemaining, then v2 sees it; v1 clears the default limit, v2's named one stays.
    await h.post("/v1/keys.updateRemaining", { keyId, op: "set", value: 42 });
    await h.post("/v1/keys.updateKey", { keyId, ratelimit: null });
    const after = dataOf<{ credits: { remaining: number }; ratelimits: { name: string }[] }>(
      await v2(h, "keys.getKey", { keyId }),
    );
    expect(after.credits.remaining).toBe(42);
    expect(after.ratelimits.map((limit) => limit.name)).toEqual(["tokens"]);
    // v2 updateKey's ratelimits replace every key limit, `default` included.
    dataOf(
      await v2(h, "keys.updateKey", {
        keyId,
        ratelimits: [{ name: "default", limit: 1, duration: 1000, autoApply: true }],
      }),
    );
    expect(
      ((await h.get(`/v1/keys.getKey?keyId=${keyId}`)).json() as Record<string, unknown>)["ratelimit"],
    ).toMatchObject({
      limit: 1,
      duration: 1000,
    });
  });

  it("a v2 identity limit with autoApply applies to v1 verifications; key limits count per key in both", async () => {
    h = await harness();
    const apiId = await h.createApi();
    await h.post("/v1/identities.createIdentity", { externalId: "user_3" });
    const one = await h.createKey(
      { externalId: "user_3", ratelimit: { type: "fast", limit: 1, duration: 60_000 } },
      apiId,
    );
    const two = await h.createKey(
      { externalId: "user_3", ratelimit: { type: "fast", limit: 1, duration: 60_000 } },
      apiId,
    );
    expect(await v1Verify({ key: one.key })).toMatchObject({ code: "VALID" });
    // Per key: the second key of the same identity has its own `default` counter, in v1 and v2.
    expect(dataOf(await v2(h, "keys.verifyKey", { key: two.key }))).toMatchObject({ code: "VALID" });
    expect(await v1Verify({ key: two.key })).toMatchObject({ code: "RATE_LIMITED" });
    expect(dataOf(await v2(h, "keys.verifyKey", { key: one.key }))).toMatchObject({ code: "RATE_LIMITED" });
  });

  it("roles and permissions made through v1 are set on a key through v2 and read back through v1", async () => {
    h = await harness();
    await h.post("/v1/permissions.createPermission", { name: "docs.read" });
    await h.post("/v1/permissions.createRole", { name: "reader", permissions: ["docs.read"] });
    const { keyId, key } = await h.createKey({});
    dataOf(await v2(h, "keys.setRoles", { keyId, roles: ["reader"] }));
    dataOf(await v2(h, "keys.addPermissions", { keyId, permissions: ["docs.write"] }));
    const v1View = (await h.get(`/v1/keys.getKey?keyId=${keyId}`)).json() as { roles: string[]; permissions: string[] };
    expect(v1View.roles).toEqual(["reader"]);
    expect(v1View.permissions).toEqual(["docs.write"]);
    expect(await v1Verify({ key, authorization: { permissions: { and: ["docs.read", "docs.write"] } } })).toMatchObject(
      {
        code: "VALID",
      },
    );
    expect(dataOf(await v2(h, "keys.verifyKey", { key, permissions: "docs.read AND docs.write" }))).toMatchObject({
      code: "VALID",
    });
  });

  it("a key rerolled through v2 keeps verifying through v1 until its grace period ends", async () => {
    h = await harness();
    const { keyId, key } = await h.createKey({ prefix: "v1" });
    const rerolled = dataOf<{ key: string }>(await v2(h, "keys.rerollKey", { keyId, expiration: 60_000 }));
    expect(rerolled.key.startsWith("v1_")).toBe(true);
    expect(await v1Verify({ key })).toMatchObject({ code: "VALID" });
    h.clock.nowMs += 2 * 60_000 + 1;
    expect(await v1Verify({ key })).toMatchObject({ code: "EXPIRED" });
    expect(await v1Verify({ key: rerolled.key })).toMatchObject({ code: "VALID" });
  });
});
