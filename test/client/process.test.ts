// The official client against a real keyraft process (`node packages/gateway/dist/main.js`,
// built by `tsc -b`): a realistic flow, a graceful restart, and the state (and analytics) still there.

import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Unkey } from "@unkey/api";
import { Ratelimit } from "@unkey/ratelimit";
import { afterAll, describe, expect, it } from "vitest";
import { killAll, startNode, type NodeProcess } from "../e2e/node-process.js";

const rootKey = "client_process_root_0123456789abcdef";
let dataDir = "";
let node: NodeProcess | null = null;

afterAll(async () => {
  killAll();
  if (dataDir !== "") await rm(dataDir, { recursive: true, force: true });
});

function ok<T>(response: { result?: T; error?: { code: string; message: string } }): T {
  if (response.error !== undefined) throw new Error(`${response.error.code}: ${response.error.message}`);
  return response.result as T;
}

describe("@unkey/api against a keyraft process", () => {
  it("creates, verifies, limits and reads analytics; state survives a graceful restart", async () => {
    dataDir = await mkdtemp(join(tmpdir(), "keyraft-client-"));
    node = await startNode(dataDir, { KEYRAFT_ROOT_KEY: rootKey });
    let unkey = new Unkey({ rootKey, baseUrl: node.baseUrl, disableTelemetry: true, retry: { attempts: 0 } });
    const { apiId } = ok(await unkey.apis.create({ name: "process-api" }));
    const { identityId } = ok(
      await unkey.identities.create({
        externalId: "tenant_1",
        ratelimits: [{ name: "burst", limit: 1, duration: 60_000 }],
      }),
    );
    const { key, keyId } = ok(
      await unkey.keys.create({
        apiId,
        externalId: "tenant_1",
        remaining: 10,
        roles: ["reader"],
        permissions: ["docs.read"],
      }),
    );
    expect(ok(await unkey.keys.verify({ key, tags: ["env=test"], ratelimits: [{ name: "burst" }] }))).toMatchObject({
      valid: true,
      remaining: 9,
      identity: { id: identityId },
    });
    expect(ok(await unkey.keys.verify({ key, ratelimits: [{ name: "burst" }] })).code).toBe("RATE_LIMITED");
    const rows = ok(await unkey.analytics.getVerifications({ apiId, groupBy: "key" }));
    expect(rows).toEqual([expect.objectContaining({ keyId, valid: 1, rateLimited: 1, total: 2 })]);
    const limiter = new Ratelimit({
      rootKey,
      baseUrl: node.baseUrl,
      namespace: "process",
      limit: 1,
      duration: "1m",
      disableTelemetry: true,
    });
    expect((await limiter.limit("a")).success).toBe(true);
    expect((await limiter.limit("a")).success).toBe(false);
    const openapi = (await (await fetch(`${node.baseUrl}/openapi.json`)).json()) as {
      openapi: string;
      paths: Record<string, unknown>;
    };
    expect(openapi.openapi).toMatch(/^3\./);
    expect(Object.keys(openapi.paths)).toContain("/v1/analytics.getVerifications");

    node.child.kill("SIGTERM");
    expect(await node.exited).toBe(0);
    node = await startNode(dataDir, { KEYRAFT_ROOT_KEY: rootKey });
    unkey = new Unkey({ rootKey, baseUrl: node.baseUrl, disableTelemetry: true, retry: { attempts: 0 } });
    expect(ok(await unkey.keys.get({ keyId }))).toMatchObject({
      remaining: 9,
      roles: ["reader"],
      permissions: ["docs.read"],
      identity: { id: identityId },
    });
    expect(ok(await unkey.identities.get({ identityId })).ratelimits).toEqual([
      { name: "burst", limit: 1, duration: 60_000 },
    ]);
    expect(ok(await unkey.apis.listKeys({ apiId })).keys.map((k) => k.id)).toEqual([keyId]);
    // Analytics are saved on a graceful stop and read back on start.
    expect(ok(await unkey.analytics.getVerifications({ apiId, groupBy: "key" }))).toEqual([
      expect.objectContaining({ keyId, valid: 1, rateLimited: 1, total: 2 }),
    ]);
    node.child.kill("SIGTERM");
    expect(await node.exited).toBe(0);
    node = null;
  });
});
