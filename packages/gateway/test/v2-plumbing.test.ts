import { afterEach, describe, expect, it } from "vitest";
import { errorContentType } from "../src/v2/problem.js";
import { harness, rootKey, type Harness } from "./app-harness.js";
import { dataOf, problemOf, v2 } from "./v2-harness.js";

let h: Harness;
afterEach(async () => {
  await h?.app.close();
});

describe("v2 plumbing", () => {
  it("GET /v2/liveness answers without a root key, in the envelope", async () => {
    h = await harness();
    const response = await h.get("/v2/liveness", null);
    expect(dataOf(response)).toEqual({ message: "we're cooking" });
    expect(response.headers["content-type"]).toMatch(/^application\/json/);
    expect(response.headers["unkey-request-id"]).toBe(
      (response.json() as { meta: { requestId: string } }).meta.requestId,
    );
    expect((await h.get("/v1/liveness", null)).statusCode).toBe(200);
  });

  it("an unknown /v2 path is a 404 with the v2 body", async () => {
    h = await harness();
    const error = problemOf(await v2(h, "keys.nothing", {}), 404, "keyraft/routing/route_not_found");
    expect(error.detail).toContain("/v2/keys.nothing");
    problemOf(await h.get("/v2/apis.createApi"), 404, "keyraft/routing/route_not_found");
    // v1's unknown paths keep the v1 body.
    expect((await h.post("/v1/nothing", {})).json()).toMatchObject({ error: { code: "NOT_FOUND" } });
  });

  it("validation: unknown fields, wrong types and missing fields are 400 invalid_input with errors[]", async () => {
    h = await harness();
    const unknown = problemOf(
      await v2(h, "apis.createApi", { name: "payments", apiId: "x" }),
      400,
      "unkey/application/invalid_input",
    );
    expect(unknown.errors).toContainEqual({ location: "body/apiId", message: "unknown property 'apiId'" });
    const short = problemOf(await v2(h, "apis.createApi", { name: "ab" }), 400, "unkey/application/invalid_input");
    expect(short.errors?.[0]?.location).toBe("body/name");
    const missing = problemOf(await v2(h, "apis.createApi", {}), 400, "unkey/application/invalid_input");
    expect(missing.errors?.[0]?.location).toBe("body/name");
    problemOf(await v2(h, "apis.createApi", { name: 123 }), 400, "unkey/application/invalid_input");
    problemOf(await v2(h, "apis.createApi", [1]), 400, "unkey/application/invalid_input");
    const malformed = await h.app.inject({
      method: "POST",
      url: "/v2/apis.createApi",
      payload: "{nope",
      headers: { "content-type": "application/json", authorization: "Bearer x" },
    });
    problemOf(malformed, 400, "unkey/application/invalid_input");
    const text = await h.app.inject({
      method: "POST",
      url: "/v2/apis.createApi",
      payload: "name",
      headers: { "content-type": "text/plain", authorization: "Bearer x" },
    });
    problemOf(text, 400, "unkey/application/invalid_input");
  });

  it("validation comes before authentication", async () => {
    h = await harness();
    problemOf(await v2(h, "apis.createApi", { name: "ab" }, "not-a-root-key"), 400, "unkey/application/invalid_input");
  });

  it("an oversized body is 413", async () => {
    h = await harness({ bodyLimitBytes: 64 });
    problemOf(await v2(h, "apis.createApi", { name: "x".repeat(100) }), 413, "user/bad_request/request_body_too_large");
  });

  it("authentication: missing, empty, malformed, unknown, ordinary, disabled, expired", async () => {
    h = await harness();
    const body = { name: "payments" };
    problemOf(await v2(h, "apis.createApi", body, null), 400, "unkey/application/invalid_input");
    const header = (value: string) =>
      h.app.inject({
        method: "POST",
        url: "/v2/apis.createApi",
        payload: JSON.stringify(body),
        headers: { "content-type": "application/json", authorization: value },
      });
    problemOf(await header(""), 400, "unkey/authentication/missing");
    problemOf(await header("   "), 400, "unkey/authentication/missing");
    problemOf(await header("InvalidFormat"), 400, "unkey/authentication/malformed");
    problemOf(await header("Bearer "), 400, "unkey/authentication/malformed");
    const unknown = problemOf(
      await header("  Bearer   invalid_token_here  "),
      401,
      "unkey/authentication/key_not_found",
    );
    expect(unknown.detail).toBe("The provided root key is invalid.");
    const ordinary = await h.createKey({});
    problemOf(await v2(h, "apis.createApi", body, ordinary.key), 401, "unkey/authentication/key_not_found");
    const disabled = await h.createKey({ enabled: false, permissions: ["*"] }, "api_root");
    problemOf(await v2(h, "apis.createApi", body, disabled.key), 403, "unkey/authorization/key_disabled");
    const expiring = await h.createKey({ expires: h.clock.nowMs + 1000, permissions: ["*"] }, "api_root");
    dataOf(await v2(h, "apis.createApi", body, expiring.key));
    h.clock.nowMs += 2000;
    problemOf(await v2(h, "apis.createApi", body, expiring.key), 403, "unkey/authorization/forbidden");
  });

  it("authentication spends none of the root key's credits or limits", async () => {
    h = await harness();
    const root = await h.createKey(
      { permissions: ["api.*.create_api"], remaining: 1, ratelimit: { type: "fast", limit: 1, duration: 60_000 } },
      "api_root",
    );
    for (let i = 0; i < 3; i++) dataOf(await v2(h, "apis.createApi", { name: "payments" }, root.key));
    const key = h.machine.state.keys.get(root.keyId);
    expect(key?.remaining).toBe(1);
  });

  it("permissions are literals; * grants all; the 403 names what is missing", async () => {
    h = await harness();
    const apiId = await h.createApi();
    const reader = await h.rootKeyWith([`api.${apiId}.read_api`]);
    expect(dataOf(await v2(h, "apis.getApi", { apiId }, reader))).toEqual({ id: apiId, name: "my-api" });
    const other = await h.createApi("other");
    const denied = problemOf(
      await v2(h, "apis.getApi", { apiId: other }, reader),
      403,
      "unkey/authorization/insufficient_permissions",
    );
    expect(denied.detail).toBe(`Missing one of these permissions: api.*.read_api or api.${other}.read_api`);
    const glob = await h.rootKeyWith(["api.api_*.read_api"]);
    problemOf(await v2(h, "apis.getApi", { apiId }, glob), 403, "unkey/authorization/insufficient_permissions");
    const single = problemOf(
      await v2(h, "apis.createApi", { name: "payments" }, reader),
      403,
      "unkey/authorization/insufficient_permissions",
    );
    expect(single.detail).toBe("Missing permission: 'api.*.create_api'");
  });

  it("the OpenAPI document describes the v2 routes", async () => {
    h = await harness();
    const document = (await h.get("/openapi.json", null)).json() as { paths: Record<string, unknown> };
    expect(Object.keys(document.paths)).toEqual(
      expect.arrayContaining(["/v2/liveness", "/v2/apis.createApi", "/v2/apis.getApi", "/v1/keys.verifyKey"]),
    );
  });

  it("errors are application/json for the official client, problem+json when Accept asks or for 429", async () => {
    h = await harness();
    const ask = (accept: string) =>
      h.app.inject({
        method: "POST",
        url: "/v2/apis.getApi",
        payload: JSON.stringify({ apiId: "api_missing" }),
        headers: { "content-type": "application/json", authorization: `Bearer ${rootKey}`, accept },
      });
    const typeOf = async (accept: string) => (await ask(accept)).headers["content-type"];
    expect(await typeOf("application/json")).toMatch(/^application\/json/);
    expect(await typeOf("application/problem+json")).toMatch(/^application\/problem\+json/);
    expect(await typeOf("*/*")).toMatch(/^application\/problem\+json/);
    expect(await typeOf("text/html, application/*;q=0.8")).toMatch(/^application\/problem\+json/);
    expect(await typeOf("application/jsonx")).toMatch(/^application\/json/);
    expect(errorContentType(429, "application/json", false)).toBe("application/problem+json");
    expect(errorContentType(404, undefined, true)).toBe("application/problem+json");
    expect(errorContentType(404, undefined, false)).toBe("application/json");
  });
});
