import { afterEach, describe, expect, it } from "vitest";
import { errorOf, harness, type Harness } from "./app-harness.js";

let h: Harness;
afterEach(async () => {
  await h?.app.close();
});

describe("POST /v1/keys.verifyKey", () => {
  it("verifies a created key and reports its configuration", async () => {
    h = await harness();
    const { apiId, keyId, key } = await h.createKey({
      name: "k",
      meta: { plan: "pro" },
      remaining: 10,
      ratelimit: { limit: 10, duration: 1000 },
      externalId: "user_1",
      environment: "test",
    });
    const response = await h.post("/v1/keys.verifyKey", { key, apiId, remaining: { cost: 2 } }, null);
    expect(response.statusCode).toBe(200);
    const requestId = response.headers["unkey-request-id"];
    expect(requestId).toMatch(/^req_/);
    expect(response.json()).toEqual({
      keyId,
      valid: true,
      code: "VALID",
      name: "k",
      ownerId: "user_1",
      meta: { plan: "pro" },
      remaining: 8,
      ratelimit: { limit: 10, remaining: 9, reset: expect.any(Number) },
      enabled: true,
      permissions: [],
      roles: [],
      environment: "test",
      identity: { id: expect.stringMatching(/^id_/), externalId: "user_1", meta: {} },
      requestId,
    });
  });

  it("answers NOT_FOUND with the minimal body and ignores Authorization", async () => {
    h = await harness();
    const response = await h.post("/v1/keys.verifyKey", { key: "nope" }, "garbage");
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({
      valid: false,
      code: "NOT_FOUND",
      requestId: response.headers["unkey-request-id"],
    });
  });

  it("sets Unkey-Ratelimit-Triggered when a limit rejects", async () => {
    h = await harness();
    const { key } = await h.createKey({ ratelimit: { limit: 1, duration: 60_000 } });
    expect((await h.post("/v1/keys.verifyKey", { key }, null)).json()).toMatchObject({ valid: true });
    const limited = await h.post("/v1/keys.verifyKey", { key }, null);
    expect(limited.json()).toMatchObject({ valid: false, code: "RATE_LIMITED", ratelimit: { limit: 1, remaining: 0 } });
    expect(limited.headers["unkey-ratelimit-triggered"]).toBe("default");
  });

  it("spends credits through the command log and never overspends", async () => {
    h = await harness();
    const { key, keyId } = await h.createKey({ remaining: 3 });
    const before = h.log.appliedIndex();
    const results = await Promise.all([1, 2, 3, 4].map(() => h.post("/v1/keys.verifyKey", { key }, null)));
    const codes = results.map((r) => (r.json() as { code: string }).code).sort();
    expect(codes).toEqual(["USAGE_EXCEEDED", "VALID", "VALID", "VALID"]);
    expect(h.log.appliedIndex() - before).toBe(3);
    expect(h.machine.state.keys.get(keyId)!.remaining).toBe(0);
    const exceeded = await h.post("/v1/keys.verifyKey", { key, remaining: { cost: 0 } }, null);
    expect(exceeded.json()).toMatchObject({ valid: true, remaining: 0 });
  });

  it("returns 400 for invalid permission queries and unknown named limits", async () => {
    h = await harness();
    const { key, keyId } = await h.createKey({});
    const invalid = await h.post("/v1/keys.verifyKey", { key, authorization: { permissions: { and: [] } } }, null);
    expect(invalid.statusCode).toBe(400);
    expect(errorOf(invalid)).toMatchObject({ code: "BAD_REQUEST", message: "permission query is invalid" });
    expect(errorOf(invalid).requestId).toBe(invalid.headers["unkey-request-id"]);
    const unknown = await h.post("/v1/keys.verifyKey", { key, ratelimits: [{ name: "x" }] }, null);
    expect(errorOf(unknown).message).toBe(
      `ratelimit "x" was requested but does not exist for key "${keyId}" and there is no identity connected`,
    );
  });

  it("validates the body with zod-style messages", async () => {
    h = await harness();
    const missing = await h.post("/v1/keys.verifyKey", {}, null);
    expect(missing.statusCode).toBe(400);
    expect(errorOf(missing)).toEqual({
      code: "BAD_REQUEST",
      docs: "https://unkey.dev/docs/api-reference/errors/code/BAD_REQUEST",
      message: "key: Required",
      requestId: missing.headers["unkey-request-id"],
    });
    expect(errorOf(await h.post("/v1/keys.verifyKey", { key: "" }, null)).message).toBe(
      "key: String must contain at least 1 character(s)",
    );
    expect(errorOf(await h.post("/v1/keys.verifyKey", { key: 5 }, null)).message).toBe(
      "key: Expected string, received number",
    );
    expect(errorOf(await h.post("/v1/keys.verifyKey", { key: "k", tags: [""] }, null)).message).toBe(
      "tags.0: String must contain at least 1 character(s)",
    );
    expect(errorOf(await h.post("/v1/keys.verifyKey", { key: "k", remaining: { cost: 1.5 } }, null)).message).toBe(
      "remaining.cost: Expected integer, received float",
    );
    expect(errorOf(await h.post("/v1/keys.verifyKey", { apiId: 1 }, null)).message).toBe(
      "apiId: Expected string, received number",
    );
  });
});
