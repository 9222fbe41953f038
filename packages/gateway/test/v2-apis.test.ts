import { afterEach, describe, expect, it } from "vitest";
import { harness, type Harness } from "./app-harness.js";
import { dataOf, problemOf, v2 } from "./v2-harness.js";

let h: Harness;
afterEach(async () => {
  await h?.app.close();
});

type Page = {
  data: { keyId: string; identity?: { externalId: string } }[];
  pagination: { hasMore: boolean; cursor?: string };
};

describe("apis", () => {
  it("createApi, getApi, deleteApi (twice: 200 then 404), api_root is protected", async () => {
    h = await harness();
    const { apiId } = dataOf<{ apiId: string }>(await v2(h, "apis.createApi", { name: "payments" }));
    expect(apiId).toMatch(/^api_/);
    expect(dataOf(await v2(h, "apis.getApi", { apiId }))).toEqual({ id: apiId, name: "payments" });
    problemOf(await v2(h, "apis.createApi", { name: "ab" }), 400, "unkey/application/invalid_input");
    problemOf(await v2(h, "apis.createApi", {}), 400, "unkey/application/invalid_input");
    problemOf(await v2(h, "apis.getApi", { apiId: "short" }), 400, "unkey/application/invalid_input");
    expect(dataOf(await v2(h, "apis.deleteApi", { apiId }))).toEqual({});
    const gone = problemOf(await v2(h, "apis.getApi", { apiId }), 404, "unkey/data/api_not_found");
    expect(gone.detail).toBe("The requested API does not exist or has been deleted.");
    problemOf(await v2(h, "apis.deleteApi", { apiId }), 404, "unkey/data/api_not_found");
    problemOf(await v2(h, "apis.deleteApi", { apiId }), 404, "unkey/data/api_not_found");
    const protectedApi = problemOf(
      await v2(h, "apis.deleteApi", { apiId: "api_root" }),
      412,
      "unkey/application/protected_resource",
    );
    expect(protectedApi.detail).toBe("This API has delete protection enabled. Disable it before attempting to delete.");
  });

  it("deleting an api deletes its keys: they verify NOT_FOUND", async () => {
    h = await harness();
    const { apiId, key } = await h.createKey({});
    dataOf(await v2(h, "apis.deleteApi", { apiId }));
    expect(dataOf(await v2(h, "keys.verifyKey", { key }))).toEqual({ valid: false, code: "NOT_FOUND" });
  });

  it("permissions are checked before the lookup", async () => {
    h = await harness();
    const none = await h.rootKeyWith(["api.*.read_key"]);
    problemOf(
      await v2(h, "apis.getApi", { apiId: "api_doesnotexist" }, none),
      403,
      "unkey/authorization/insufficient_permissions",
    );
    problemOf(
      await v2(h, "apis.deleteApi", { apiId: "api_doesnotexist" }, none),
      403,
      "unkey/authorization/insufficient_permissions",
    );
    problemOf(
      await v2(h, "apis.createApi", { name: "abc" }, none),
      403,
      "unkey/authorization/insufficient_permissions",
    );
  });
});

describe("apis.listKeys", () => {
  it("pages by id with an inclusive cursor that is absent on the last page", async () => {
    h = await harness();
    const apiId = await h.createApi();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await h.createKey({}, apiId)).keyId);
    ids.sort();
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let pages = 0; pages < 10; pages++) {
      const response = await v2(h, "apis.listKeys", { apiId, limit: 2, ...(cursor === undefined ? {} : { cursor }) });
      const page = response.json() as Page;
      dataOf(response);
      seen.push(...page.data.map((key) => key.keyId));
      if (page.pagination.cursor === undefined) {
        expect(page.pagination.hasMore).toBe(false);
        break;
      }
      expect(page.pagination.hasMore).toBe(true);
      cursor = page.pagination.cursor;
    }
    expect(seen).toEqual(ids);
    const empty = (await v2(h, "apis.listKeys", { apiId: await h.createApi("empty") })).json() as Page;
    expect(empty).toMatchObject({ data: [], pagination: { hasMore: false } });
  });

  it("filters by externalId; an unknown externalId is an empty page", async () => {
    h = await harness();
    const apiId = await h.createApi();
    const owned = await h.createKey({ externalId: "user_1" }, apiId);
    await h.createKey({}, apiId);
    const page = (await v2(h, "apis.listKeys", { apiId, externalId: "user_1" })).json() as Page;
    expect(page.data.map((key) => key.keyId)).toEqual([owned.keyId]);
    expect(page.data[0]?.identity?.externalId).toBe("user_1");
    const none = (await v2(h, "apis.listKeys", { apiId, externalId: "nobody" })).json() as Page;
    expect(none).toMatchObject({ data: [], pagination: { hasMore: false } });
  });

  it("a missing read permission answers exactly like a missing api; decrypt is 412", async () => {
    h = await harness();
    const apiId = await h.createApi();
    const missing = problemOf(await v2(h, "apis.listKeys", { apiId: "api_nope" }), 404, "unkey/data/api_not_found");
    for (const permissions of [
      [],
      ["api.*.read_key"],
      [`api.${apiId}.read_api`],
      ["api.other.read_key", "api.*.read_api"],
    ]) {
      const token = await h.rootKeyWith(permissions);
      const masked = problemOf(await v2(h, "apis.listKeys", { apiId }, token), 404, "unkey/data/api_not_found");
      expect(masked.detail).toBe(missing.detail);
    }
    const reader = await h.rootKeyWith([`api.${apiId}.read_key`, "api.*.read_api"]);
    dataOf(await v2(h, "apis.listKeys", { apiId }, reader));
    problemOf(
      await v2(h, "apis.listKeys", { apiId, decrypt: true }, reader),
      412,
      "unkey/application/precondition_failed",
    );
    problemOf(await v2(h, "apis.listKeys", { apiId, limit: 0 }), 400, "unkey/application/invalid_input");
    problemOf(await v2(h, "apis.listKeys", { apiId, limit: 101 }), 400, "unkey/application/invalid_input");
  });
});
