// Drives the `Ratelimit` and `Overrides` classes of @unkey/ratelimit@0.5.5 against a running
// keyraft node.

import { Overrides, Ratelimit } from "@unkey/ratelimit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServer, type ClientServer } from "./server.js";

let server: ClientServer;

beforeAll(async () => {
  server = await startServer();
});
afterAll(async () => {
  await server.close();
});

describe("@unkey/ratelimit 0.5.5 against keyraft", () => {
  it("Ratelimit.limit admits `limit` per window, honours cost, and reports remaining and reset", async () => {
    const limiter = new Ratelimit({
      rootKey: server.rootKey,
      baseUrl: server.baseUrl,
      namespace: "login",
      limit: 3,
      duration: "10s",
      disableTelemetry: true,
    });
    const results = [];
    for (let i = 0; i < 4; i++) results.push(await limiter.limit("ip_1.2.3.4"));
    expect(results.map((r) => r.success)).toEqual([true, true, true, false]);
    expect(results.map((r) => r.remaining)).toEqual([2, 1, 0, 0]);
    expect(results.every((r) => r.limit === 3)).toBe(true);
    expect(results[3]!.reset).toBeGreaterThan(server.h.clock.nowMs);
    // Another identifier has its own window; a cost of 3 uses it up at once.
    expect(await limiter.limit("ip_5.6.7.8", { cost: 3 })).toMatchObject({ success: true, remaining: 0 });
    expect((await limiter.limit("ip_5.6.7.8")).success).toBe(false);
    // At the reported reset time the identifier is admitted again (the window slides).
    server.h.clock.nowMs = results[3]!.reset;
    expect((await limiter.limit("ip_1.2.3.4")).success).toBe(true);
  });

  it("a root key without rights makes Ratelimit.limit reject with the v1 error code", async () => {
    const limiter = new Ratelimit({
      rootKey: "wrong",
      baseUrl: server.baseUrl,
      namespace: "login",
      limit: 3,
      duration: 10_000,
      disableTelemetry: true,
    });
    await expect(limiter.limit("ip")).rejects.toThrow(/UNAUTHORIZED/);
  });

  it("Overrides: set, get, list, delete, and the override applies to Ratelimit.limit", async () => {
    const overrides = new Overrides({ rootKey: server.rootKey, baseUrl: server.baseUrl, disableTelemetry: true });
    const limiter = new Ratelimit({
      rootKey: server.rootKey,
      baseUrl: server.baseUrl,
      namespace: "api.calls",
      limit: 1,
      duration: "1m",
      disableTelemetry: true,
    });
    await limiter.limit("warmup"); // creates the namespace
    const set = await overrides.setOverride({
      namespaceName: "api.calls",
      identifier: "customer_*",
      limit: 10,
      duration: 60_000,
    });
    const overrideId = set.result?.overrideId;
    expect(overrideId).toMatch(/^rlor_/);
    expect(
      (await overrides.getOverride({ namespaceName: "api.calls", identifier: "customer_*" })).result,
    ).toMatchObject({ id: overrideId, limit: 10 });
    expect((await overrides.listOverrides({ namespaceName: "api.calls" })).result).toMatchObject({
      total: 1,
      overrides: [{ identifier: "customer_*" }],
    });
    expect(await limiter.limit("customer_7")).toMatchObject({ success: true, limit: 10, remaining: 9 });
    expect((await overrides.deleteOverride({ namespaceName: "api.calls", identifier: "customer_*" })).result).toEqual(
      {},
    );
    expect(await limiter.limit("customer_8")).toMatchObject({ success: true, limit: 1, remaining: 0 });
    expect((await limiter.limit("customer_8")).success).toBe(false);
  });
});
