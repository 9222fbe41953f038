import { randomBytes } from "node:crypto";
import { keyStateMachine, ROOT_API_ID, type CommandOutcome, type KeyCommand } from "@keyraft/core";
import { bootstrapRootKey, MemoryCommandLog } from "@keyraft/gateway";
import { afterEach, describe, expect, it } from "vitest";
import { errorOf, harness, type Harness } from "./app-harness.js";

let h: Harness;
afterEach(async () => {
  await h?.app.close();
});

describe("root-key authentication", () => {
  it("rejects missing, unknown and non-root keys with 403 UNAUTHORIZED", async () => {
    h = await harness();
    for (const [token, message] of [
      [null, "key required"],
      ["", "key required"],
      ["nope", "key not found"],
    ] as const) {
      const response = await h.post("/v1/apis.createApi", { name: "api" }, token);
      expect(response.statusCode).toBe(403);
      expect(errorOf(response)).toMatchObject({ code: "UNAUTHORIZED", message });
    }
    const { key } = await h.createKey({ permissions: ["*"] });
    expect(errorOf(await h.post("/v1/apis.createApi", { name: "api" }, key))).toMatchObject({
      code: "UNAUTHORIZED",
      message: "root key required",
    });
  });

  it("a disabled root key is DISABLED; authenticating spends none of the root key's credits or limits", async () => {
    h = await harness();
    const created = await h.createKey(
      { permissions: ["*"], remaining: 1, ratelimit: { limit: 1, duration: 60_000 } },
      ROOT_API_ID,
    );
    for (const name of ["one", "two", "three"]) {
      expect((await h.post("/v1/apis.createApi", { name }, created.key)).statusCode).toBe(200);
    }
    expect(h.machine.state.keys.get(created.keyId)?.remaining).toBe(1);
    await h.post("/v1/keys.updateKey", { keyId: created.keyId, enabled: false });
    expect(errorOf(await h.post("/v1/apis.createApi", { name: "four" }, created.key))).toMatchObject({
      code: "DISABLED",
      message: "the key is disabled",
    });
  });

  it("reports the missing permissions with the evaluator's message", async () => {
    h = await harness();
    const reader = await h.rootKeyWith(["api.*.read_key"]);
    const denied = await h.post("/v1/apis.createApi", { name: "api" }, reader);
    expect(denied.statusCode).toBe(403);
    expect(errorOf(denied)).toMatchObject({
      code: "INSUFFICIENT_PERMISSIONS",
      message: `Missing one of these permissions: ['"*"', '"api.*.create_api"'], have: ['api.*.read_key']`,
    });
  });

  it("accepts `*` everywhere, including getOverride", async () => {
    h = await harness();
    await h.post("/v1/ratelimits.limit", { namespace: "n", identifier: "x", limit: 1, duration: 1000 });
    await h.post("/v1/ratelimits.setOverride", { namespaceName: "n", identifier: "abc", limit: 1, duration: 1000 });
    expect((await h.get("/v1/ratelimits.getOverride?namespaceName=n&identifier=abc")).statusCode).toBe(200);
  });

  it("only a caller holding `*` may create or change keys of api_root", async () => {
    h = await harness();
    const admin = await h.rootKeyWith(["api.*.create_key", "api.*.update_key", "api.*.delete_key", "api.*.read_key"]);
    const escalate = await h.post("/v1/keys.createKey", { apiId: ROOT_API_ID, permissions: ["*"] }, admin);
    expect(escalate.statusCode).toBe(403);
    expect(errorOf(escalate).code).toBe("INSUFFICIENT_PERMISSIONS");
    const other = await h.createKey({ permissions: ["api.*.read_key"] }, ROOT_API_ID);
    expect(errorOf(await h.post("/v1/keys.updateKey", { keyId: other.keyId, enabled: false }, admin)).code).toBe(
      "INSUFFICIENT_PERMISSIONS",
    );
    expect(errorOf(await h.post("/v1/keys.deleteKey", { keyId: other.keyId }, admin)).code).toBe(
      "INSUFFICIENT_PERMISSIONS",
    );
    expect(
      errorOf(await h.post("/v1/keys.setPermissions", { keyId: other.keyId, permissions: [{ name: "*" }] }, admin))
        .code,
    ).toBe("INSUFFICIENT_PERMISSIONS");
    // The same caller may manage keys of ordinary apis.
    const apiId = await h.createApi();
    expect((await h.post("/v1/keys.createKey", { apiId }, admin)).statusCode).toBe(200);
  });

  it("creating permissions on createKey needs the create right", async () => {
    h = await harness();
    const apiId = await h.createApi();
    const creator = await h.rootKeyWith(["api.*.create_key"]);
    const denied = await h.post("/v1/keys.createKey", { apiId, permissions: ["brand_new"] }, creator);
    expect(errorOf(denied).code).toBe("INSUFFICIENT_PERMISSIONS");
    expect(h.machine.state.permissionIdBySlugFolded.has("brand_new")).toBe(false);
  });
});

describe("bootstrapRootKey", () => {
  it("makes KEYRAFT_ROOT_KEY a root key once; restarts append nothing", async () => {
    const machine = keyStateMachine();
    const log = new MemoryCommandLog<KeyCommand, CommandOutcome>(machine);
    const options = {
      state: machine.state,
      commandLog: log,
      nowMs: () => 1_770_000_000_000,
      randomBytes,
      rootKey: "my_configured_root_key",
    };
    const first = await bootstrapRootKey(options);
    expect(first).toMatchObject({ changed: true, generatedKey: null });
    expect(machine.state.keys.get(first.keyId)!.apiId).toBe(ROOT_API_ID);
    const second = await bootstrapRootKey(options);
    expect(second).toEqual({ keyId: first.keyId, changed: false, generatedKey: null, ignored: null });
    expect(log.appliedIndex()).toBe(1);
  });

  it("generates one root key when none exists and returns its plaintext once", async () => {
    const machine = keyStateMachine();
    const log = new MemoryCommandLog<KeyCommand, CommandOutcome>(machine);
    const options = {
      state: machine.state,
      commandLog: log,
      nowMs: () => 1_770_000_000_000,
      randomBytes,
      rootKey: null,
    };
    const first = await bootstrapRootKey(options);
    expect(first.generatedKey).toMatch(/^unkey_/);
    const second = await bootstrapRootKey(options);
    expect(second).toEqual({ keyId: first.keyId, changed: false, generatedKey: null, ignored: null });
  });
});
