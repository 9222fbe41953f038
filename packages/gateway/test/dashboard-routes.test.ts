// The dashboard's server side: its page and assets (a fixed list, same-origin policy headers) and
// the two lists it reads, filtered by what the root key may see.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { errorOf, harness, type Harness } from "./app-harness.js";

let h: Harness;
beforeAll(async () => {
  h = await harness();
});
afterAll(async () => {
  await h.app.close();
});

describe("GET /dashboard", () => {
  it("serves the page and its assets with a strict content security policy", async () => {
    const page = await h.get("/dashboard", null);
    expect(page.statusCode).toBe(200);
    expect(page.headers["content-type"]).toMatch(/^text\/html/);
    expect(page.headers["content-security-policy"]).toContain("script-src 'self'");
    expect(page.headers["content-security-policy"]).toContain("frame-ancestors 'none'");
    expect(page.body).toContain('src="/dashboard/assets/app.js"');
    for (const asset of [
      "app.js",
      "api.js",
      "pages/key.js",
      "app.css",
      "vendor/uPlot.iife.min.js",
      "vendor/uPlot.min.css",
    ]) {
      const response = await h.get(`/dashboard/assets/${asset}`, null);
      expect(response.statusCode, asset).toBe(200);
      expect(response.body.length, asset).toBeGreaterThan(100);
    }
    expect((await h.get("/dashboard/assets/app.js", null)).headers["content-type"]).toMatch(/^text\/javascript/);
  });

  it("serves nothing beyond its list", async () => {
    for (const path of [
      "/dashboard/assets/nope.js",
      "/dashboard/assets/../package.json",
      "/dashboard/assets/%2e%2e/src/app.ts",
    ]) {
      expect((await h.get(path, null)).statusCode, path).toBe(404);
    }
  });

  it("never puts a root key anywhere but the Authorization header", async () => {
    const api = (await h.get("/dashboard/assets/api.js", null)).body;
    expect(api).toContain("sessionStorage");
    expect(api).not.toContain("localStorage");
    expect(api).not.toContain("document.cookie");
    expect(api).toContain("authorization: `Bearer");
  });
});

describe("the lists the dashboard reads", () => {
  it("apis.listApis lists what the root key may read, api_root only for *", async () => {
    const a = await h.createApi("alpha-api");
    const b = await h.createApi("beta-api");
    await h.createKey({}, a);
    const all = (await h.get("/v1/apis.listApis")).json().apis as { id: string; name: string; keys: number }[];
    expect(all.map((api) => api.id)).toEqual(expect.arrayContaining(["api_root", a, b]));
    expect(all.find((api) => api.id === a)?.keys).toBe(1);
    const onlyA = await h.rootKeyWith([`api.${a}.read_api`]);
    expect((await h.get("/v1/apis.listApis", onlyA)).json().apis.map((api: { id: string }) => api.id)).toEqual([a]);
    const anyApi = await h.rootKeyWith(["api.*.read_api"]);
    const seen = (await h.get("/v1/apis.listApis", anyApi)).json().apis.map((api: { id: string }) => api.id);
    expect(seen).toEqual(expect.arrayContaining([a, b]));
    expect(seen).not.toContain("api_root");
    expect(errorOf(await h.get("/v1/apis.listApis", null)).code).toBe("UNAUTHORIZED");
  });

  it("ratelimits.listNamespaces needs * or ratelimit.*.read_override", async () => {
    await h.post("/v1/ratelimits.limit", { namespace: "emails", identifier: "u1", limit: 1, duration: 1000 });
    await h.post("/v1/ratelimits.setOverride", {
      namespaceName: "emails",
      identifier: "vip",
      limit: 9,
      duration: 1000,
    });
    const answer = (await h.get("/v1/ratelimits.listNamespaces")).json();
    expect(answer.namespaces).toEqual([{ id: expect.stringMatching(/^rlns_/), name: "emails", overrides: 1 }]);
    const other = await h.rootKeyWith(["api.*.read_api"]);
    expect(errorOf(await h.get("/v1/ratelimits.listNamespaces", other)).code).toBe("INSUFFICIENT_PERMISSIONS");
    const reader = await h.rootKeyWith(["ratelimit.*.read_override"]);
    expect((await h.get("/v1/ratelimits.listNamespaces", reader)).statusCode).toBe(200);
  });
});
