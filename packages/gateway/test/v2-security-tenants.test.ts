// The tenant guards of test/security-tenants.test.ts on the v2 routes: linking a key to an
// existing identity needs an identity permission, and only `*` holders see or change what is
// attached to api_root and the permissions and roles root keys use.
import { createHash } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { harness, type Harness } from "./app-harness.js";
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
    expect(h.machine.state.keyIdByHash.has(b64("legacy_1"))).toBe(false);

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
