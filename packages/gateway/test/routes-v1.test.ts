// The endpoints beyond the single-node set: details the client suite (test/client) does not
// reach — orders of checks, error bodies, legacy aliases, atomic imports, the shutdown answer,
// the OpenAPI document and analytics persistence.

import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  emptyCounts,
  keyStateMachine,
  SlidingWindowLimiter,
  type CommandOutcome,
  type KeyCommand,
  type VerificationFilter,
  type VerificationSeries,
} from "@keyraft/core";
import { pino } from "pino";
import {
  bootstrapRootKey,
  buildApp,
  loadAnalytics,
  MemoryCommandLog,
  pendingVerificationsMax,
  saveAnalytics,
  VerificationRecorder,
  volatileCounterDurability,
} from "@keyraft/gateway";
import { errorOf, harness, type Harness } from "./app-harness.js";

let h: Harness;
beforeAll(async () => {
  h = await harness();
});
afterAll(async () => {
  await h.app.close();
});

const sha = (secret: string) => createHash("sha256").update(secret).digest("base64");

describe("apis.deleteKeys and legacy routes", () => {
  it("deleteKeys deletes every key of the api and counts them; api_root is protected", async () => {
    const apiId = await h.createApi();
    const a = await h.createKey({}, apiId);
    await h.createKey({}, apiId);
    const response = await h.post("/v1/apis.deleteKeys", { apiId });
    expect(response.json()).toEqual({ deletedKeys: 2 });
    expect((await h.post("/v1/keys.verifyKey", { key: a.key })).json()).toMatchObject({ code: "NOT_FOUND" });
    expect((await h.get(`/v1/apis.getApi?apiId=${apiId}`)).statusCode).toBe(200);
    const root = await h.post("/v1/apis.deleteKeys", { apiId: "api_root" });
    expect(root.statusCode).toBe(412);
    expect(errorOf(root).code).toBe("DELETE_PROTECTED");
    expect(errorOf(await h.post("/v1/apis.deleteKeys", { apiId: "api_nope" })).code).toBe("NOT_FOUND");
  });

  it("POST /v1/keys, POST /v1/keys/verify and GET /v1/apis/{apiId}/keys alias the v1 routes", async () => {
    const apiId = await h.createApi();
    const created = await h.post("/v1/keys", { apiId, prefix: "old", remaining: 2 });
    expect(created.statusCode).toBe(200);
    const { key, keyId } = created.json() as { key: string; keyId: string };
    expect((await h.post("/v1/keys/verify", { key, apiId }, null)).json()).toMatchObject({
      valid: true,
      keyId,
      remaining: 1,
    });
    await h.createKey({}, apiId);
    const page = await h.get(`/v1/apis/${apiId}/keys?limit=1&offset=1`);
    expect(page.json()).toMatchObject({ total: 2, keys: [expect.objectContaining({ apiId })] });
  });
});

describe("key roles and permissions: add/remove", () => {
  it("addPermissions: unknown id or name is 404, creating needs the right (403 UNAUTHORIZED), api_root needs *", async () => {
    const { keyId } = await h.createKey({});
    expect(
      errorOf(await h.post("/v1/keys.addPermissions", { keyId, permissions: [{ id: "perm_nope" }] })).message,
    ).toBe("permission perm_nope not found");
    expect(errorOf(await h.post("/v1/keys.addPermissions", { keyId, permissions: [{ name: "nope" }] })).message).toBe(
      "permission nope not found",
    );
    const limited = await h.rootKeyWith(["rbac.*.add_permission_to_key"]);
    const denied = await h.post(
      "/v1/keys.addPermissions",
      { keyId, permissions: [{ name: "fresh", create: true }] },
      limited,
    );
    expect(denied.statusCode).toBe(403);
    expect(errorOf(denied).code).toBe("UNAUTHORIZED");
    expect(errorOf(await h.post("/v1/keys.addRoles", { keyId, roles: [{ name: "r" }] }, limited)).code).toBe(
      "INSUFFICIENT_PERMISSIONS",
    );
    expect(
      errorOf(await h.post("/v1/keys.addPermissions", { keyId: "key_nope", permissions: [{ name: "x" }] })).code,
    ).toBe("NOT_FOUND");
    const empty = await h.post("/v1/keys.removeRoles", { keyId, roles: [] });
    expect(errorOf(empty).message).toBe("roles: Array must contain at least 1 element(s)");
  });

  it("permission names follow upstream's pattern; a role may carry permissions (keyraft extension) that verification sees", async () => {
    const bad = await h.post("/v1/permissions.createPermission", { name: "has space" });
    expect(errorOf(bad).message).toBe("name: Only alphanumeric, underscores, periods, colons and hyphens are allowed");
    const { permissionId } = (await h.post("/v1/permissions.createPermission", { name: "files.read" })).json() as {
      permissionId: string;
    };
    const role = await h.post("/v1/permissions.createRole", { name: "reader", permissions: ["files.read"] });
    const { roleId } = role.json() as { roleId: string };
    expect((await h.get(`/v1/permissions.getRole?roleId=${roleId}`)).json()).toMatchObject({
      name: "reader",
      permissions: ["files.read"],
    });
    const { key } = await h.createKey({ roles: ["reader"] });
    expect(
      (await h.post("/v1/keys.verifyKey", { key, authorization: { permissions: "files.read" } })).json(),
    ).toMatchObject({ valid: true, permissions: ["files.read"] });
    expect(errorOf(await h.post("/v1/permissions.createRole", { name: "other", permissions: ["nope"] })).code).toBe(
      "NOT_FOUND",
    );
    await h.post("/v1/permissions.deletePermission", { permissionId });
    expect(
      (await h.post("/v1/keys.verifyKey", { key, authorization: { permissions: "files.read" } })).json(),
    ).toMatchObject({ code: "INSUFFICIENT_PERMISSIONS" });
    expect(errorOf(await h.post("/v1/permissions.deleteRole", { roleId: "role_nope" })).message).toBe(
      "Role role_nope not found",
    );
  });
});

describe("identities", () => {
  it("orders of checks and conflicts", async () => {
    const missing = await h.get("/v1/identities.getIdentity", null);
    expect(errorOf(missing).message).toBe("Provide either identityId or externalId");
    const { identityId } = (await h.post("/v1/identities.createIdentity", { externalId: "acme" })).json() as {
      identityId: string;
    };
    const again = await h.post("/v1/identities.createIdentity", { externalId: "acme" });
    expect(again.statusCode).toBe(409);
    expect(errorOf(again).message).toBe('Identity with externalId "acme" already exists in this workspace');
    const duplicate = await h.post("/v1/identities.updateIdentity", {
      identityId,
      ratelimits: [
        { name: "a", limit: 1, duration: 1000 },
        { name: "a", limit: 2, duration: 1000 },
      ],
    });
    expect(errorOf(duplicate).message).toBe('Ratelimit with name "a" is already defined in the request');
    expect(errorOf(await h.post("/v1/identities.updateIdentity", { externalId: "nobody" })).message).toBe(
      "identity nobody not found",
    );
    const byExternal = await h.post("/v1/identities.updateIdentity", { externalId: "acme", meta: { a: 1 } });
    expect(byExternal.json()).toEqual({ id: identityId, externalId: "acme", meta: { a: 1 }, ratelimits: [] });
    const limited = await h.rootKeyWith([`identity.${identityId}.read_identity`]);
    expect((await h.get(`/v1/identities.getIdentity?identityId=${identityId}`, limited)).statusCode).toBe(200);
    expect((await h.post("/v1/identities.deleteIdentity", { identityId })).statusCode).toBe(200);
    expect(errorOf(await h.post("/v1/identities.deleteIdentity", { identityId })).code).toBe("NOT_FOUND");
  });
});

describe("migrations", () => {
  it("createKeys is all-or-nothing, validates hashes, and imports into several apis", async () => {
    const apiA = await h.createApi();
    const apiB = await h.createApi();
    const before = h.machine.state.keys.size;
    const failed = await h.post("/v1/migrations.createKeys", [
      { apiId: apiA, plaintext: "m_one" },
      { apiId: apiB, plaintext: "m_one" },
    ]);
    expect(errorOf(failed).code).toBe("CONFLICT");
    expect(h.machine.state.keys.size).toBe(before);
    expect(errorOf(await h.post("/v1/migrations.createKeys", [{ apiId: apiA }])).message).toBe(
      "0: provide either hash or plaintext",
    );
    expect(
      errorOf(
        await h.post("/v1/migrations.createKeys", [{ apiId: apiA, hash: { value: "abc", variant: "sha256_base64" } }]),
      ).code,
    ).toBe("BAD_REQUEST");
    expect(
      errorOf(await h.post("/v1/migrations.createKeys", [{ apiId: apiA, hash: { value: sha("x"), variant: "hex" } }]))
        .message,
    ).toContain("hash.variant");
    const ok = await h.post("/v1/migrations.createKeys", [
      { apiId: apiA, plaintext: "m_one", roles: ["migrated"] },
      {
        apiId: apiB,
        hash: { value: sha("m_two"), variant: "sha256_base64" },
        ratelimit: { limit: 1, duration: 60_000 },
      },
    ]);
    expect(ok.statusCode).toBe(200);
    const { keyIds } = ok.json() as { keyIds: string[] };
    expect(h.machine.state.keys.get(keyIds[1]!)?.apiId).toBe(apiB);
    expect((await h.post("/v1/keys.verifyKey", { key: "m_two", apiId: apiB })).json()).toMatchObject({
      valid: true,
      ratelimit: { limit: 1, remaining: 0 },
    });
    expect((await h.post("/v1/keys.verifyKey", { key: "m_one" })).json()).toMatchObject({
      valid: true,
      roles: ["migrated"],
    });
    const enqueued = await h.post("/v1/migrations.enqueueKeys", {
      migrationId: "m",
      apiId: apiA,
      keys: [{ plaintext: "m_three" }],
    });
    expect(enqueued.statusCode).toBe(202);
  });
});

describe("analytics routes", () => {
  it("keys.getVerifications: 400 without an id, authentication before any lookup, 404 for unknown ones, counts after verifications", async () => {
    expect(errorOf(await h.get("/v1/keys.getVerifications", null)).message).toBe("keyId or ownerId must be provided");
    // Without a key nothing is looked up: the answer says nothing about which ids exist.
    expect(errorOf(await h.get("/v1/keys.getVerifications?keyId=key_nope", null)).message).toBe("key required");
    expect(errorOf(await h.get("/v1/keys.getVerifications?ownerId=nobody", null)).message).toBe("key required");
    expect(errorOf(await h.get("/v1/keys.getVerifications?keyId=key_nope")).message).toBe("key key_nope not found");
    expect(errorOf(await h.get("/v1/keys.getVerifications?ownerId=nobody")).message).toBe(
      "No keys were found to match your query",
    );
    const { key, keyId } = await h.createKey({});
    expect((await h.get(`/v1/keys.getVerifications?keyId=${keyId}`)).json()).toEqual({ verifications: [] });
    await h.post("/v1/keys.verifyKey", { key });
    const day = Date.UTC(2026, 0, 10);
    expect((await h.get(`/v1/keys.getVerifications?keyId=${keyId}`)).json()).toEqual({
      verifications: [{ time: day, success: 1, rateLimited: 0, usageExceeded: 0 }],
    });
  });

  it("analytics.getVerifications: bad groupBy is a 400, an unknown api a 404, the read_analytics right suffices", async () => {
    const { apiId, key } = await h.createKey({});
    await h.post("/v1/keys.verifyKey", { key, tags: ["a", "b"] });
    expect(errorOf(await h.get(`/v1/analytics.getVerifications?apiId=${apiId}&groupBy=week`)).message).toContain(
      "groupBy: Invalid enum value",
    );
    expect(errorOf(await h.get("/v1/analytics.getVerifications?apiId=api_nope")).code).toBe("NOT_FOUND");
    const reader = await h.rootKeyWith([`api.${apiId}.read_analytics`]);
    const rows = await h.get(`/v1/analytics.getVerifications?apiId=${apiId}&groupBy=tags,hour`, reader);
    expect(rows.json()).toEqual([
      expect.objectContaining({ tags: ["a", "b"], total: 1, valid: 1, time: Date.UTC(2026, 0, 10, 12) }),
    ]);
  });

  it("the recorder survives a save/load through the data dir", async () => {
    const dir = await mkdtemp(join(tmpdir(), "keyraft-analytics-"));
    try {
      const nowMs = Date.UTC(2026, 0, 10, 12);
      const recorder = new VerificationRecorder(() => nowMs);
      for (let i = 0; i < 5; i++)
        recorder.record(nowMs, "key_1", "api_1", null, i < 3 ? "VALID" : "RATE_LIMITED", ["t"]);
      expect(await saveAnalytics(recorder, dir)).toBe(1);
      const restored = new VerificationRecorder(() => nowMs);
      expect(await loadAnalytics(restored, dir)).toBe(1);
      expect(restored.select({ apiId: "api_1", startMs: 0, endMs: nowMs })).toEqual([
        expect.objectContaining({
          keyId: "key_1",
          tags: ["t"],
          counts: expect.objectContaining({ valid: 3, rateLimited: 2 }),
        }),
      ]);
      expect(await loadAnalytics(new VerificationRecorder(() => nowMs), join(dir, "missing"))).toBe(0);
      // A full ring is folded at once: nothing is lost past pendingVerificationsMax.
      const busy = new VerificationRecorder(() => nowMs);
      for (let i = 0; i < pendingVerificationsMax * 2 + 7; i++)
        busy.record(nowMs, `key_${i % 3}`, "api_1", null, "VALID", undefined);
      const total = busy
        .select({ apiId: "api_1", startMs: 0, endMs: nowMs })
        .reduce((sum, series) => sum + series.counts.valid, 0);
      expect(total).toBe(pendingVerificationsMax * 2 + 7);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe("analytics across nodes", () => {
  it("both routes merge the peers' series (VerificationPeers) with this node's", async () => {
    const machine = keyStateMachine();
    const log = new MemoryCommandLog<KeyCommand, CommandOutcome>(machine);
    const nowMs = Date.UTC(2026, 0, 10, 12);
    const filters: VerificationFilter[] = [];
    let peerSeries: VerificationSeries[] = [];
    const app = buildApp({
      logger: pino({ level: "silent" }),
      state: machine.state,
      commandLog: log,
      limiter: new SlidingWindowLimiter(),
      counterDurability: volatileCounterDurability,
      nowMs: () => nowMs,
      randomBytes: (length) => crypto.getRandomValues(new Uint8Array(length)),
      bodyLimitBytes: 65_536,
      verificationPeers: {
        async fetch(filter) {
          filters.push(filter);
          return peerSeries;
        },
      },
    });
    const rootKey = "peer_test_root_key_0123456789";
    await bootstrapRootKey({
      state: machine.state,
      commandLog: log,
      nowMs: () => nowMs,
      randomBytes: (length) => crypto.getRandomValues(new Uint8Array(length)),
      rootKey,
    });
    try {
      const auth = { authorization: `Bearer ${rootKey}`, "content-type": "application/json" };
      const api = (
        await app.inject({ method: "POST", url: "/v1/apis.createApi", headers: auth, payload: { name: "peers" } })
      ).json() as { apiId: string };
      const created = (
        await app.inject({ method: "POST", url: "/v1/keys.createKey", headers: auth, payload: { apiId: api.apiId } })
      ).json() as { keyId: string; key: string };
      await app.inject({
        method: "POST",
        url: "/v1/keys.verifyKey",
        headers: auth,
        payload: { key: created.key, tags: ["t"] },
      });
      // The peer saw 4 verifications of the same key, tag set and hour, and 2 rate limited ones.
      peerSeries = [
        {
          hourMs: Date.UTC(2026, 0, 10, 12),
          keyId: created.keyId,
          apiId: api.apiId,
          identityId: null,
          tags: ["t"],
          counts: { ...emptyCounts(), valid: 4, rateLimited: 2 },
        },
      ];
      const rows = (
        await app.inject({
          method: "GET",
          url: `/v1/analytics.getVerifications?apiId=${api.apiId}&groupBy=key`,
          headers: auth,
        })
      ).json();
      expect(rows).toEqual([expect.objectContaining({ keyId: created.keyId, valid: 5, rateLimited: 2, total: 7 })]);
      expect(filters[0]).toMatchObject({ apiId: api.apiId, endMs: nowMs });
      const daily = (
        await app.inject({ method: "GET", url: `/v1/keys.getVerifications?keyId=${created.keyId}`, headers: auth })
      ).json();
      expect(daily).toEqual({
        verifications: [{ time: Date.UTC(2026, 0, 10), success: 5, rateLimited: 2, usageExceeded: 0 }],
      });
    } finally {
      await app.close();
    }
  });
});

describe("shutdown", () => {
  it("a request that arrives while the server closes gets 503 with the v1 error body", async () => {
    const node = await harness();
    const address = new URL(await node.app.listen({ host: "127.0.0.1", port: 0 }));
    const socket = connect(Number(address.port), address.hostname);
    await new Promise<void>((resolve) => socket.once("connect", () => resolve()));
    const body = JSON.stringify({ key: "anything" });
    // Half the headers: the connection is busy, so closing waits for it.
    socket.write(`POST /v1/keys.verifyKey HTTP/1.1\r\nHost: x\r\n`);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const closed = node.app.close();
    await new Promise((resolve) => setTimeout(resolve, 50));
    let text = "";
    socket.on("data", (chunk: Buffer) => (text += chunk.toString("utf8")));
    const ended = new Promise<void>((resolve) => socket.once("close", () => resolve()));
    socket.write(`Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
    await ended;
    await closed;
    expect(text.split("\r\n")[0]).toBe("HTTP/1.1 503 Service Unavailable");
    expect(text.toLowerCase()).toContain("retry-after: 1");
    const json = JSON.parse(text.slice(text.indexOf("\r\n\r\n") + 4)) as {
      error: { code: string; message: string; requestId: string };
    };
    expect(json.error).toMatchObject({
      code: "INTERNAL_SERVER_ERROR",
      message: "the server is shutting down; retry on another node",
    });
    expect(json.error.requestId).toMatch(/^req_/);
  });
});

describe("GET /openapi.json", () => {
  it("is an OpenAPI 3 document with every path and method of the v1 client, with request and response schemas", async () => {
    const response = await h.get("/openapi.json", null);
    expect(response.statusCode).toBe(200);
    const doc = response.json() as {
      openapi: string;
      info: { title: string; version: string };
      paths: Record<
        string,
        Record<
          string,
          {
            requestBody?: { content: Record<string, { schema: object }> };
            parameters?: unknown[];
            responses: Record<string, { description?: unknown; content?: Record<string, { schema: object }> }>;
          }
        >
      >;
    };
    expect(doc.openapi).toMatch(/^3\.\d+\.\d+$/);
    expect(doc.info.title).toBe("keyraft");
    // Every path the official client declares, with its method.
    const clientTypes = readFileSync(
      fileURLToPath(new URL("../../../node_modules/@unkey/api/dist/index.d.ts", import.meta.url)),
      "utf8",
    );
    const declared = [
      ...clientTypes.matchAll(/^ {2}"(\/v1\/[^"]+)": \{\n(?: {4}\/\*\*[^\n]*\n)? {4}(get|post):/gm),
    ].map((match) => [match[1]!, match[2]!] as const);
    expect(declared.length).toBeGreaterThanOrEqual(44);
    for (const [path, method] of declared) {
      const operation = doc.paths[path]?.[method];
      expect(operation, `${method} ${path}`).toBeDefined();
      const ok = operation!.responses["200"] ?? operation!.responses["202"];
      expect(ok?.content?.["application/json"]?.schema, `${method} ${path} response`).toBeDefined();
      if (method === "post")
        expect(operation!.requestBody?.content["application/json"]?.schema, `${path} body`).toBeDefined();
    }
    expect(doc.paths["/v1/apis.listKeys"]?.["get"]?.parameters?.length).toBeGreaterThan(3);
    // Structure OpenAPI requires of every operation: responses, each with a description.
    for (const [path, methods] of Object.entries(doc.paths)) {
      for (const [method, operation] of Object.entries(methods)) {
        const statuses = Object.keys(operation.responses);
        expect(statuses.length, `${method} ${path}`).toBeGreaterThan(0);
        for (const status of statuses) {
          expect(status).toMatch(/^([1-5]\d\d|[1-5]XX|default)$/);
          expect(typeof operation.responses[status]?.description, `${method} ${path} ${status}`).toBe("string");
        }
      }
    }
    expect(doc.paths["/openapi.json"]).toBeUndefined();
  });

  it("lists exactly the registered routes (it is generated from them)", async () => {
    const machine = keyStateMachine();
    const app = buildApp({
      logger: pino({ level: "silent" }),
      state: machine.state,
      commandLog: new MemoryCommandLog<KeyCommand, CommandOutcome>(machine),
      limiter: new SlidingWindowLimiter(),
      counterDurability: volatileCounterDurability,
      nowMs: () => Date.now(),
      randomBytes: (length) => new Uint8Array(length),
      bodyLimitBytes: 1024,
    });
    const registered: string[] = [];
    app.addHook("onRoute", (route) => {
      const methods = Array.isArray(route.method) ? route.method : [route.method];
      for (const method of methods)
        // Hidden routes (the dashboard's page and files) are not API endpoints.
        if (method !== "HEAD" && route.url !== "/openapi.json" && route.schema?.hide !== true)
          registered.push(`${method.toLowerCase()} ${route.url.replace(/:(\w+)/g, "{$1}")}`);
    });
    try {
      await app.ready();
      const doc = app.swagger() as { paths: Record<string, Record<string, unknown>> };
      const documented = Object.entries(doc.paths).flatMap(([path, methods]) =>
        Object.keys(methods).map((method) => `${method} ${path}`),
      );
      expect(documented.sort()).toEqual(registered.sort());
      expect(registered.length).toBeGreaterThanOrEqual(44);
    } finally {
      await app.close();
    }
  });
});
