// Beside v2-badinput.test.ts (random JSON and field-shaped objects): one-field mutations of a
// valid body of each v2 route (so generated requests reach the handlers, not only the schema
// check), hostile values, extra fields, broken JSON, other content types and methods, and bad
// Authorization headers. The routes are those of the OpenAPI document. Every answer is a 200 or a
// 4xx with the v2 problem body (meta.requestId, status, type, errors[] on a 400):
// never a 5xx. The seeds are printed.

import fc from "fast-check";
import type { LightMyRequestResponse } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { harness, rootKey, type Harness } from "./app-harness.js";

interface V2Route {
  url: string;
  fields: string[];
  arrayBody: boolean;
}

let h: Harness;
let routes: V2Route[] = [];
const known: string[] = [];

beforeAll(async () => {
  h = await harness({ keyMigrations: new Map([["mig_legacy", "sha256"]]) });
  const doc = (await h.get("/openapi.json", null)).json() as {
    paths: Record<string, { post?: { requestBody?: { content?: Record<string, { schema?: SchemaLike }> } } }>;
  };
  routes = Object.entries(doc.paths)
    .filter(([path, item]) => path.startsWith("/v2/") && item.post !== undefined)
    .map(([url, item]) => {
      const schema = item.post?.requestBody?.content?.["application/json"]?.schema ?? {};
      const object = schema.type === "array" ? (schema.items ?? {}) : schema;
      return { url, fields: Object.keys(object.properties ?? {}), arrayBody: schema.type === "array" };
    });
  // Records that exist, so generated references sometimes hit something.
  const { apiId, keyId, key } = await h.createKey({ remaining: 5, permissions: ["p.read"] });
  const identity = await h.post("/v1/identities.createIdentity", { externalId: "ext_1" });
  await h.post("/v1/ratelimits.limit", { namespace: "ns", identifier: "a", limit: 1, duration: 1000 });
  known.push(apiId, keyId, key, (identity.json() as { identityId: string }).identityId, "ext_1", "ns", "p.read");
  known.push("api_root", "*", "mig_legacy", "role_x", "perm_x");
});
afterAll(async () => {
  await h.app.close();
});

interface SchemaLike {
  type?: string;
  properties?: Record<string, unknown>;
  items?: SchemaLike;
}

/** Values that break schemas and handlers, and ids of records that exist (`known`, filled by beforeAll). */
const hostileValue = (): fc.Arbitrary<unknown> => {
  const hostileString = fc.oneof(
    fc.string({ maxLength: 20 }),
    fc.string({ unit: "grapheme", maxLength: 20 }),
    fc.constantFrom("", " ", "*", "a AND (", "()", "%", "_", "../", "\u0000", "x".repeat(600), "x".repeat(20_000)),
    fc.constantFrom(...known),
  );
  return fc.letrec((tie) => ({
    value: fc.oneof(
      { depthSize: "small" },
      hostileString,
      fc.integer(),
      fc.constantFrom(-1, 0, 1, 999, 1000, 2 ** 31, 2 ** 53 - 1, -(2 ** 53), 1e308, 0.5),
      fc.boolean(),
      fc.constant(null),
      fc.array(tie("value"), { maxLength: 4 }),
      fc.dictionary(fc.string({ maxLength: 8 }), tie("value"), { maxKeys: 4 }),
    ),
  })).value;
};

/** A valid body per route (ids resolved from `known` at generation time), mutated one field at a time. */
function samples(): Record<string, Record<string, unknown>> {
  const [apiId, keyId, key, identityId] = known;
  const limit = { namespace: "ns", identifier: "a", limit: 5, duration: 60_000, cost: 1 };
  return {
    "/v2/apis.createApi": { name: "sample-api" },
    "/v2/apis.getApi": { apiId },
    "/v2/apis.listKeys": { apiId, limit: 10 },
    "/v2/keys.createKey": { apiId, name: "k", permissions: ["p.read"], credits: { remaining: 3 } },
    "/v2/keys.verifyKey": { key, permissions: "p.read AND (x OR y)", credits: { cost: 1 }, tags: ["a"] },
    "/v2/keys.getKey": { keyId },
    "/v2/keys.whoami": { key },
    "/v2/keys.updateKey": { keyId, name: "renamed", ratelimits: [{ name: "abc", limit: 1, duration: 1000 }] },
    "/v2/keys.updateCredits": { keyId, operation: "increment", value: 1 },
    "/v2/keys.rerollKey": { keyId, expiration: 0 },
    "/v2/keys.addPermissions": { keyId, permissions: ["p.read"] },
    "/v2/keys.setRoles": { keyId, roles: [] },
    "/v2/identities.createIdentity": {
      externalId: "sample_ext",
      ratelimits: [{ name: "abc", limit: 1, duration: 1000 }],
    },
    "/v2/identities.getIdentity": { identity: identityId },
    "/v2/identities.updateIdentity": { identity: "ext_1", meta: { a: 1 } },
    "/v2/identities.listIdentities": { limit: 5, search: "ext" },
    "/v2/permissions.createPermission": { name: "n", slug: "sample.slug" },
    "/v2/permissions.getPermission": { permission: "p.read" },
    "/v2/permissions.listPermissions": { limit: 5 },
    "/v2/permissions.createRole": { name: "sample-role", permissions: ["p.read", "new.one"] },
    "/v2/permissions.getRole": { role: "sample-role" },
    "/v2/permissions.setRolePermissions": { roleId: "role_x", permissions: ["p.read"] },
    "/v2/ratelimit.limit": limit,
    "/v2/ratelimit.setOverride": { namespace: "ns", identifier: "a*", limit: 0, duration: 1000 },
    "/v2/ratelimit.getOverride": { namespace: "ns", identifier: "abc" },
    "/v2/ratelimit.listOverrides": { namespace: "ns", limit: 2 },
    "/v2/ratelimit.deleteOverride": { namespace: "ns", identifier: "a*" },
    "/v2/analytics.getVerifications": {
      query: "SELECT outcome, COUNT(*) AS n FROM key_verifications_v1 GROUP BY outcome",
    },
  };
}

function bodyFor(route: V2Route): fc.Arbitrary<unknown> {
  const value = hostileValue();
  const sample = samples()[route.url];
  const fieldObject = fc
    .tuple(
      fc.subarray(route.fields),
      fc.array(value, { minLength: route.fields.length, maxLength: route.fields.length }),
      fc.option(fc.dictionary(fc.string({ maxLength: 10 }), value, { maxKeys: 2 }), { nil: undefined }),
    )
    .map(([fields, values, extra]) => {
      const body: Record<string, unknown> = { ...extra };
      fields.forEach((field, i) => (body[field] = values[i]));
      return body;
    });
  const mutated =
    sample === undefined
      ? fieldObject
      : fc
          .tuple(fc.constantFrom(...Object.keys(sample), "unknownField"), value, fc.boolean())
          .map(([field, replacement, drop]) => {
            const body: Record<string, unknown> = { ...sample };
            if (drop) delete body[field];
            else body[field] = replacement;
            return body;
          });
  const objects = fc.oneof(
    { weight: 3, arbitrary: fieldObject },
    { weight: 4, arbitrary: mutated },
    { weight: 1, arbitrary: fc.jsonValue() },
    { weight: sample === undefined ? 0 : 1, arbitrary: fc.constant(sample ?? {}) },
  );
  if (!route.arrayBody) return objects;
  // multiLimit: arrays of (mutated) ratelimit.limit bodies.
  const items = fc.oneof(fieldObject, bodyFor({ url: "/v2/ratelimit.limit", fields: route.fields, arrayBody: false }));
  return fc.oneof(fc.array(items, { minLength: 1, maxLength: 3 }), objects);
}

const authArb = fc.oneof(
  { weight: 6, arbitrary: fc.constant(`Bearer ${rootKey}`) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(undefined, "", "Bearer ", "Basic abc", "Bearer wrong", `  Bearer  ${rootKey} `),
  },
);

function assertAnswer(response: LightMyRequestResponse, what: string): void {
  expect(response.statusCode, `${what}: ${response.body.slice(0, 300)}`).toBeLessThan(500);
  if (response.statusCode < 400) return;
  // application/json by default, problem+json for 429 and the routes the client types that way.
  expect(response.headers["content-type"], what).toMatch(/^application\/(problem\+)?json/);
  const body = response.json() as {
    meta?: { requestId?: string };
    error?: { title?: unknown; detail?: unknown; status?: unknown; type?: unknown; errors?: unknown };
  };
  expect(body.meta?.requestId, what).toMatch(/^req_/);
  expect(body.error?.status, what).toBe(response.statusCode);
  expect(typeof body.error?.title, what).toBe("string");
  expect(typeof body.error?.detail, what).toBe("string");
  expect(String(body.error?.type), what).toMatch(/^https:\/\/unkey\.com\/docs\/errors\//);
  if (response.statusCode === 400) expect(Array.isArray(body.error?.errors), what).toBe(true);
}

describe("v2 bad input", () => {
  it("finds the v2 routes in the OpenAPI document", () => {
    const urls = routes.map((route) => route.url);
    for (const url of [
      "/v2/identities.createIdentity",
      "/v2/permissions.setRolePermissions",
      "/v2/ratelimit.multiLimit",
      "/v2/analytics.getVerifications",
      "/v2/keys.createKey",
    ]) {
      expect(urls).toContain(url);
    }
    expect(routes.find((route) => route.url === "/v2/ratelimit.multiLimit")?.arrayBody).toBe(true);
  });

  it("fixed counterexamples found by the generator answer 400", async () => {
    // Seed 935493: a limit of 1e308 is a JSON integer; it reached the limiter and answered 500.
    for (const [url, body] of [
      ["/v2/ratelimit.limit", { namespace: "ns", identifier: "a", limit: 1e308, duration: 60000, cost: 1 }],
      ["/v2/ratelimit.limit", { namespace: "ns", identifier: "a", limit: 5, duration: 60000, cost: 1e308 }],
      ["/v2/ratelimit.multiLimit", [{ namespace: "ns", identifier: "a", limit: 1e308, duration: 60000 }]],
      ["/v2/ratelimit.setOverride", { namespace: "ns", identifier: "a", limit: 1e308, duration: 60000 }],
    ] as const) {
      const response = await h.app.inject({
        method: "POST",
        url,
        payload: JSON.stringify(body),
        headers: { "content-type": "application/json", authorization: `Bearer ${rootKey}` },
      });
      assertAnswer(response, `${url} ${JSON.stringify(body)}`);
      expect(response.statusCode, response.body).toBe(400);
    }
  });

  it("every v2 route answers generated bodies and headers with a 200 or a 4xx problem, never a 5xx", async () => {
    const seed = Date.now() % 1_000_000;
    console.log(`v2 bad input seed ${seed}`);
    const statuses = new Map<number, number>();
    for (const route of routes) {
      await fc.assert(
        fc.asyncProperty(bodyFor(route), authArb, async (body, auth) => {
          const response = await h.app.inject({
            method: "POST",
            url: route.url,
            payload: JSON.stringify(body),
            headers: { "content-type": "application/json", ...(auth === undefined ? {} : { authorization: auth }) },
          });
          assertAnswer(response, `${route.url} ${JSON.stringify(body)?.slice(0, 200)}`);
          statuses.set(response.statusCode, (statuses.get(response.statusCode) ?? 0) + 1);
        }),
        { seed, numRuns: 30 },
      );
    }
    console.log(`v2 bad input statuses ${JSON.stringify([...statuses].sort((a, b) => a[0] - b[0]))}`);
    // Generated bodies reach the handlers too, not only the schema check.
    expect(statuses.get(400) ?? 0).toBeGreaterThan(0);
    expect([...statuses.keys()].some((status) => status !== 400)).toBe(true);
  });

  it("broken JSON, other content types, GET on a POST route and unknown paths are 4xx problems", async () => {
    const seed = (Date.now() + 1) % 1_000_000;
    console.log(`v2 raw payload seed ${seed}`);
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...routes.map((route) => route.url), "/v2/nothing.here", "/v2/keys.verifyKey/extra"),
        fc.oneof(fc.string({ maxLength: 40 }), fc.constantFrom("{", "[", '{"a":', "null", "", "\u0000")),
        fc.constantFrom("application/json", "text/plain", "application/x-www-form-urlencoded", undefined),
        fc.constantFrom("POST", "GET", "PUT"),
        async (url, payload, contentType, method) => {
          const response = await h.app.inject({
            method: method as "POST",
            url,
            ...(method === "GET" ? {} : { payload }),
            headers: {
              authorization: `Bearer ${rootKey}`,
              ...(contentType === undefined ? {} : { "content-type": contentType }),
            },
          });
          assertAnswer(response, `${method} ${url} ${contentType ?? "-"} ${JSON.stringify(payload)}`);
        },
      ),
      { seed, numRuns: 200 },
    );
  });
});
