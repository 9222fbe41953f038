import { readFileSync } from "node:fs";
import { keyStateMachine, snapshotKeyState } from "@keyraft/core";
import { errorStatusByCode } from "@keyraft/gateway";
import { afterEach, describe, expect, it } from "vitest";
import { jsonNestingDepth } from "../src/validation/json-body.js";
import { zodStyleMessage } from "../src/validation/messages.js";
import { harness, type Harness } from "./app-harness.js";

let h: Harness | undefined;
afterEach(async () => {
  await h?.app.close();
  h = undefined;
});

describe("error registry", () => {
  it("maps codes to upstream's statuses", () => {
    expect(errorStatusByCode).toMatchObject({
      BAD_REQUEST: 400,
      UNAUTHORIZED: 403,
      FORBIDDEN: 403,
      INSUFFICIENT_PERMISSIONS: 403,
      NOT_FOUND: 404,
      CONFLICT: 409,
      PRECONDITION_FAILED: 412,
      DELETE_PROTECTED: 412,
      RATE_LIMITED: 429,
      INTERNAL_SERVER_ERROR: 500,
    });
  });

  it("documents every code in docs/api.md", () => {
    const docs = readFileSync(new URL("../../../docs/api.md", import.meta.url), "utf8");
    for (const code of Object.keys(errorStatusByCode)) {
      if (code === "METHOD_NOT_ALLOWED") continue; // never produced: unknown methods are 404
      expect(docs, code).toContain(code);
    }
  });
});

describe("zod-style messages", () => {
  const error = (keyword: string, instancePath: string, params: object, data?: unknown) =>
    ({ keyword, instancePath, schemaPath: "", params, data }) as never;
  it("words Ajv errors like zod v3", () => {
    expect(zodStyleMessage([error("required", "", { missingProperty: "keyId" })])).toBe("keyId: Required");
    expect(zodStyleMessage([error("type", "/a/0/b", { type: "string" }, 5)])).toBe(
      "a.0.b: Expected string, received number",
    );
    expect(zodStyleMessage([error("type", "/n", { type: "integer" }, 1.5)])).toBe(
      "n: Expected integer, received float",
    );
    expect(zodStyleMessage([error("type", "/n", { type: ["integer", "null"] }, "x")])).toBe(
      "n: Expected number, received string",
    );
    expect(zodStyleMessage([error("minimum", "/n", { limit: 1 })])).toBe(
      "n: Number must be greater than or equal to 1",
    );
    expect(zodStyleMessage([error("enum", "/i", { allowedValues: ["daily", "monthly"] }, "weekly")])).toBe(
      "i: Invalid enum value. Expected 'daily' | 'monthly', received 'weekly'",
    );
    expect(zodStyleMessage([error("type", "", { type: "object" }, [])])).toBe("Expected object, received array");
  });

  it("reports the first field in schema order, as zod does", async () => {
    h = await harness();
    const response = await h.post("/v1/ratelimits.setOverride", { identifier: 1 });
    expect((response.json() as { error: { message: string } }).error.message).toBe(
      "identifier: Expected string, received number",
    );
  });
});

describe("JSON nesting", () => {
  it("counts array/object depth outside strings", () => {
    const depth = (text: string) => jsonNestingDepth(Buffer.from(text), 100);
    expect(depth("1")).toBe(0);
    expect(depth('{"a":[{}]}')).toBe(3);
    expect(depth('{"a":"[[[[\\"[["}')).toBe(1);
    expect(jsonNestingDepth(Buffer.from("[".repeat(50)), 10)).toBe(11);
  });
});

describe("the command log as the source of truth", () => {
  it("replaying the commands the routes appended gives the same state", async () => {
    h = await harness();
    const { keyId } = await h.createKey({ permissions: ["a"], roles: ["r"], externalId: "user_1", remaining: 3 });
    await h.post("/v1/keys.setPermissions", { keyId, permissions: [{ name: "b", create: true }] });
    await h.post("/v1/ratelimits.limit", { namespace: "n", identifier: "abc", limit: 1, duration: 1000 });
    await h.post("/v1/ratelimits.setOverride", { namespaceName: "n", identifier: "abc", limit: 3, duration: 1000 });
    await h.post("/v1/keys.updateKey", { keyId, externalId: null, meta: { x: 1 } });
    const replica = keyStateMachine();
    for (const command of structuredClone(h.log.entries)) replica.apply(command);
    expect(snapshotKeyState(replica.state)).toEqual(snapshotKeyState(h.machine.state));
  });

  it("every response carries Unkey-Request-Id, unique per request", async () => {
    h = await harness();
    const ids = new Set<string>();
    for (const response of [
      await h.get("/v1/liveness"),
      await h.get("/v1/nope"),
      await h.post("/v1/keys.verifyKey", {}, null),
    ]) {
      const id = response.headers["unkey-request-id"];
      expect(typeof id).toBe("string");
      ids.add(String(id));
    }
    expect(ids.size).toBe(3);
  });
});
