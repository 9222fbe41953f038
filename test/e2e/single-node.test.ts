// One keyraft node as a real process (what `npm start` runs), driven by the official v1 client
// @unkey/api@0.38.0: the v1 surface end to end, then a clean restart (SIGTERM) and a crash
// (SIGKILL during verification traffic) on the same data dir.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Unkey } from "@unkey/api";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { freePort } from "@keyraft/raft/testing";
import { killAll, startNode, type NodeProcess } from "./node-process.js";

const rootKey = "e2e_root_0123456789abcdefghij";
let dataDir: string;
let node: NodeProcess | null = null;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), "keyraft-e2e-"));
  // The client logs every failed fetch with console.debug; the crash tests cause them on purpose.
  vi.spyOn(console, "debug").mockImplementation(() => undefined);
});
afterAll(async () => {
  killAll();
  await rm(dataDir, { recursive: true, force: true });
});

function client(baseUrl: string, key = rootKey): Unkey {
  return new Unkey({ rootKey: key, baseUrl, retry: { attempts: 0 }, disableTelemetry: true });
}

/** Unwraps a client Result, failing the test with the v1 error body when there is none. */
function ok<R>(res: { result: R; error?: never } | { result?: never; error: { code: string; message: string } }): R {
  if (res.error !== undefined) throw new Error(`v1 error ${res.error.code}: ${res.error.message}`);
  return res.result as R;
}

async function whoami(baseUrl: string, key: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${baseUrl}/v1/keys.whoami`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${rootKey}` },
    body: JSON.stringify({ key }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function stop(running: NodeProcess, signal: NodeJS.Signals = "SIGTERM"): Promise<number | NodeJS.Signals> {
  running.child.kill(signal);
  return running.exited;
}

/** Verifies `key` from `workers` loops until told to halt or the node stops answering; counts the VALID answers. */
function verificationTraffic(unkey: Unkey, key: string, creditsGranted: number, workers: number) {
  const counts = { valid: 0, lowestReported: creditsGranted, halted: false };
  const worker = async () => {
    while (!counts.halted) {
      const res = await unkey.keys.verify({ key }).catch(() => null);
      if (res === null || res.error !== undefined) return; // the node is gone or closing (503)
      if (res.result.valid) {
        counts.valid += 1;
        counts.lowestReported = Math.min(counts.lowestReported, res.result.remaining ?? creditsGranted);
      }
    }
  };
  const done = Promise.all(Array.from({ length: workers }, worker));
  return { counts, done };
}

async function untilValid(counts: { valid: number }, wanted: number): Promise<void> {
  while (counts.valid < wanted) await new Promise((resolve) => setTimeout(resolve, 5));
}

// State created in the first phase and checked after each restart.
const made = {
  apiId: "",
  disabledKey: { keyId: "", key: "" },
  creditKey: { keyId: "", key: "" },
  deletedKeyId: "",
  creditsAfterFirstRun: 0,
};

describe("single node end to end", () => {
  it("serves the v1 API through the official client", async () => {
    node = await startNode(dataDir, { KEYRAFT_ROOT_KEY: rootKey, KEYRAFT_CREDIT_LEASE_TTL_MS: "300" });
    const unkey = client(node.baseUrl);

    const api = ok(await unkey.apis.create({ name: "e2e-api" }));
    made.apiId = api.apiId;
    expect(ok(await unkey.apis.get({ apiId: api.apiId }))).toMatchObject({ id: api.apiId, name: "e2e-api" });

    // A key with meta, credits, a rate limit, roles and permissions.
    const created = ok(
      await unkey.keys.create({
        apiId: api.apiId,
        prefix: "e2e",
        name: "first",
        meta: { plan: "pro", seats: 3 },
        remaining: 3,
        ratelimit: { type: "fast", limit: 100, duration: 60_000 },
        roles: ["admin"],
        permissions: ["docs.read", "docs.write"],
      }),
    );
    expect(created.key.startsWith("e2e_")).toBe(true);
    made.disabledKey = created;

    const first = ok(await unkey.keys.verify({ key: created.key, authorization: { permissions: "docs.read" } }));
    expect(first).toMatchObject({
      valid: true,
      code: "VALID",
      keyId: created.keyId,
      name: "first",
      meta: { plan: "pro", seats: 3 },
      remaining: 2,
    });
    expect(first.permissions).toEqual(expect.arrayContaining(["docs.read", "docs.write"]));
    expect(first.ratelimit).toMatchObject({ limit: 100 });
    expect(
      ok(await unkey.keys.verify({ key: created.key, authorization: { permissions: "billing.read" } })),
    ).toMatchObject({
      valid: false,
      code: "INSUFFICIENT_PERMISSIONS",
    });
    expect(ok(await unkey.keys.verify({ key: created.key, remaining: { cost: 2 } }))).toMatchObject({
      valid: true,
      remaining: 0,
    });
    expect(ok(await unkey.keys.verify({ key: created.key }))).toMatchObject({
      valid: false,
      code: "USAGE_EXCEEDED",
      remaining: 0,
    });

    // Disable it.
    ok(await unkey.keys.update({ keyId: created.keyId, enabled: false, remaining: 10 }));
    expect(ok(await unkey.keys.verify({ key: created.key }))).toMatchObject({ valid: false, code: "DISABLED" });

    // A second key: credits spent partly, permissions and roles replaced.
    const credit = ok(
      await unkey.keys.create({ apiId: api.apiId, name: "credits", remaining: 50, externalId: "user_e2e" }),
    );
    made.creditKey = credit;
    for (let i = 0; i < 3; i++) expect(ok(await unkey.keys.verify({ key: credit.key }))).toMatchObject({ valid: true });
    const setPermissions = ok(
      await unkey.keys.setPermissions({ keyId: credit.keyId, permissions: [{ name: "files.read", create: true }] }),
    );
    expect(setPermissions).toEqual([expect.objectContaining({ name: "files.read" })]);
    const setRoles = ok(await unkey.keys.setRoles({ keyId: credit.keyId, roles: [{ name: "reader", create: true }] }));
    expect(setRoles).toEqual([expect.objectContaining({ name: "reader" })]);
    const verified = ok(await unkey.keys.verify({ key: credit.key, authorization: { permissions: "files.read" } }));
    expect(verified).toMatchObject({ valid: true, remaining: 46, ownerId: "user_e2e" });
    made.creditsAfterFirstRun = 46;

    // whoami and getKey show the replicated value: every credit not known spent, so while the
    // node's credit lease is open it counts the lease's grant in full (between 46 and 50 here);
    // exactly 46 once the lease is settled (its ttl is short on this node).
    let me = await whoami(node.baseUrl, credit.key);
    expect(me.status).toBe(200);
    expect(me.body.remaining).toBeGreaterThanOrEqual(46);
    expect(me.body.remaining).toBeLessThanOrEqual(50);
    for (let i = 0; i < 100 && me.body.remaining !== 46; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      me = await whoami(node.baseUrl, credit.key);
    }
    expect(me.body).toMatchObject({ id: credit.keyId, name: "credits", remaining: 46, enabled: true });

    const got = ok(await unkey.keys.get({ keyId: credit.keyId }));
    expect(got).toMatchObject({ id: credit.keyId, apiId: api.apiId, name: "credits", remaining: 46, enabled: true });
    expect(got.permissions).toEqual(["files.read"]);
    expect(got.roles).toEqual(["reader"]);

    // Delete a key.
    const doomed = ok(await unkey.keys.create({ apiId: api.apiId, name: "doomed" }));
    made.deletedKeyId = doomed.keyId;
    ok(await unkey.keys.delete({ keyId: doomed.keyId }));
    expect(ok(await unkey.keys.verify({ key: doomed.key }))).toMatchObject({ valid: false, code: "NOT_FOUND" });
    expect((await unkey.keys.get({ keyId: doomed.keyId })).error?.code).toBe("NOT_FOUND");

    // Rate limits and overrides.
    const limit = (identifier: string) =>
      unkey.ratelimits.limit({ namespace: "e2e", identifier, limit: 2, duration: 60_000 });
    expect(ok(await limit("user_1")).success).toBe(true);
    expect(ok(await limit("user_1"))).toMatchObject({ success: true, limit: 2, remaining: 0 });
    expect(ok(await limit("user_1"))).toMatchObject({ success: false, remaining: 0 });
    const override = ok(
      await unkey.ratelimits.setOverride({ namespaceName: "e2e", identifier: "vip_*", limit: 5, duration: 60_000 }),
    );
    expect(override.overrideId).toMatch(/^rlor_/);
    ok(await unkey.ratelimits.setOverride({ namespaceName: "e2e", identifier: "gold", limit: 7, duration: 60_000 }));
    const listed = ok(await unkey.ratelimits.listOverrides({ namespaceName: "e2e" }));
    expect(listed.total).toBe(2);
    expect(listed.overrides.map((o) => o.identifier).sort()).toEqual(["gold", "vip_*"]);
    expect(ok(await unkey.ratelimits.getOverride({ namespaceName: "e2e", identifier: "vip_*" }))).toMatchObject({
      id: override.overrideId,
      identifier: "vip_*",
      limit: 5,
      duration: 60_000,
    });
    expect(ok(await limit("vip_anna"))).toMatchObject({ success: true, limit: 5, remaining: 4 });
    ok(await unkey.ratelimits.deleteOverride({ namespaceName: "e2e", identifier: "gold" }));
    expect((await unkey.ratelimits.getOverride({ namespaceName: "e2e", identifier: "gold" })).error?.code).toBe(
      "NOT_FOUND",
    );

    // The root key never reaches the logs.
    expect(node.stdout()).not.toContain(rootKey);
    expect(node.stdout()).not.toContain(created.key);
  });

  it("exits 0 on SIGTERM and restarts on the same data dir with all state back", async () => {
    expect(await stop(node!)).toBe(0);
    node = await startNode(dataDir, { KEYRAFT_ROOT_KEY: rootKey });
    const unkey = client(node.baseUrl);
    expect(ok(await unkey.apis.get({ apiId: made.apiId }))).toMatchObject({ name: "e2e-api" });
    expect(ok(await unkey.keys.verify({ key: made.disabledKey.key }))).toMatchObject({
      valid: false,
      code: "DISABLED",
    });
    expect(ok(await unkey.keys.verify({ key: "e2e_not_a_key" }))).toMatchObject({ valid: false, code: "NOT_FOUND" });
    expect((await unkey.keys.get({ keyId: made.deletedKeyId })).error?.code).toBe("NOT_FOUND");
    // Spent credits are exactly as before.
    const got = ok(await unkey.keys.get({ keyId: made.creditKey.keyId }));
    expect(got).toMatchObject({ remaining: made.creditsAfterFirstRun, permissions: ["files.read"], roles: ["reader"] });
    // A used-up rate limit stays used up across the restart (never admits more).
    expect(
      ok(await unkey.ratelimits.limit({ namespace: "e2e", identifier: "user_1", limit: 2, duration: 60_000 })),
    ).toMatchObject({ success: false });
    const listed = ok(await unkey.ratelimits.listOverrides({ namespaceName: "e2e" }));
    expect(listed.overrides.map((o) => o.identifier)).toEqual(["vip_*"]);
  });

  it("keeps every acknowledged credit spend across kill -9 during verification traffic", async () => {
    const unkey = client(node!.baseUrl);
    const creditsGranted = 2000;
    const workers = 8;
    const key = ok(await unkey.keys.create({ apiId: made.apiId, name: "crash", remaining: creditsGranted }));
    const limitCrash = (u: Unkey) =>
      u.ratelimits.limit({ namespace: "e2e", identifier: "user_crash", limit: 3, duration: 60_000 });
    for (let i = 0; i < 3; i++) expect(ok(await limitCrash(unkey)).success).toBe(true);
    const traffic = verificationTraffic(unkey, key.key, creditsGranted, workers);
    await untilValid(traffic.counts, 200);
    node!.child.kill("SIGKILL");
    traffic.counts.halted = true;
    await traffic.done;
    expect(await node!.exited).toBe("SIGKILL");

    node = await startNode(dataDir, { KEYRAFT_ROOT_KEY: rootKey });
    // The restarted node settles its credit leases from its journal (until then getKey counts
    // their grants in full); wait for that, bounded.
    const readRemaining = async () => ok(await client(node!.baseUrl).keys.get({ keyId: key.keyId })).remaining!;
    let after = await readRemaining();
    for (let i = 0; i < 100 && after > creditsGranted - traffic.counts.valid; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      after = await readRemaining();
    }
    // Nothing acknowledged was lost ...
    expect(after).toBeLessThanOrEqual(creditsGranted - traffic.counts.valid);
    expect(after).toBeLessThanOrEqual(traffic.counts.lowestReported);
    // ... and at most the requests in flight at the kill, plus the spends journaled ahead of the
    // answers (less than a quarter of each of at most 2 leases of 100 credits, docs/counters.md),
    // were spent without an answer.
    const journaledAheadMax = 2 * (Math.ceil(100 / 4) - 1);
    expect(after).toBeGreaterThanOrEqual(creditsGranted - traffic.counts.valid - workers - journaledAheadMax);
    // The exhausted rate limit is still exhausted: a crash never lets a limit admit more.
    expect(ok(await limitCrash(client(node.baseUrl))).success).toBe(false);
  });

  it("on SIGTERM under traffic answers what it accepted, exits 0, and keeps exactly the answered spends", async () => {
    const unkey = client(node!.baseUrl);
    const creditsGranted = 2000;
    const key = ok(await unkey.keys.create({ apiId: made.apiId, name: "graceful", remaining: creditsGranted }));
    const traffic = verificationTraffic(unkey, key.key, creditsGranted, 8);
    await untilValid(traffic.counts, 100);
    expect(await stop(node!)).toBe(0);
    traffic.counts.halted = true;
    await traffic.done;

    node = await startNode(dataDir, { KEYRAFT_ROOT_KEY: rootKey });
    const after = ok(await client(node.baseUrl).keys.get({ keyId: key.keyId })).remaining!;
    // In-flight requests were finished and answered before the exit: no spend went unanswered.
    expect(after).toBe(creditsGranted - traffic.counts.valid);
    expect(await stop(node)).toBe(0);
    node = null;
  });
});

describe("root key bootstrap", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "keyraft-e2e-boot-"));
  });
  afterAll(async () => {
    killAll();
    await rm(dir, { recursive: true, force: true });
  });

  it("prints a generated root key once on the first start, and it works", async () => {
    const first = await startNode(dir);
    const match = /root key \(shown once, store it now\): (\S+)/.exec(first.stdout());
    expect(match).not.toBeNull();
    const generated = match![1]!;
    expect(ok(await client(first.baseUrl, generated).apis.create({ name: "boot-api" })).apiId).toMatch(/^api_/);
    // Only that one line carries it: never the structured logs.
    expect(first.stdout().split(generated).length - 1).toBe(1);
    expect(await stop(first)).toBe(0);

    const second = await startNode(dir);
    expect(second.stdout()).not.toMatch(/root key \(shown once/);
    expect(ok(await client(second.baseUrl, generated).apis.create({ name: "boot-api-2" })).apiId).toMatch(/^api_/);
    expect(await stop(second, "SIGINT")).toBe(0);
  });

  it("exits at once with code 1 on a second signal during shutdown", async () => {
    const running = await startNode(dir);
    running.child.kill("SIGTERM");
    running.child.kill("SIGINT"); // arrives while the first shutdown is still closing
    expect(await running.exited).toBe(1);
    expect(running.stdout()).toMatch(/second signal/);
  });

  it("refuses to start on a data dir another node holds, with exit code 1 and a clear message", async () => {
    const { spawnNode } = await import("./node-process.js");
    const holder = await startNode(dir);
    const second = spawnNode({ PORT: String(await freePort()), KEYRAFT_DATA_DIR: dir });
    expect(await second.exited).toBe(1);
    expect(second.stderr()).toMatch(/could not start: the data directory .* is in use by another process/);
    expect(await stop(holder)).toBe(0);
  });

  it("refuses an invalid configuration with exit code 2 and a message naming the variable", async () => {
    const { spawnNode } = await import("./node-process.js");
    const bad = spawnNode({
      PORT: "not-a-port",
      KEYRAFT_DATA_DIR: dir,
      KEYRAFT_ROOT_KEY: "tinysecret",
      KEYRAFT_KEY_MIGRATIONS: '{"mig_legacy":"md5"}',
    });
    expect(await bad.exited).toBe(2);
    expect(bad.stderr()).toMatch(/KEYRAFT_KEY_MIGRATIONS entry "mig_legacy": "md5" is invalid/);
    expect(bad.stderr()).toMatch(/PORT="not-a-port" is invalid: expected an integer from 0 to 65535/);
    expect(bad.stderr()).toMatch(/KEYRAFT_ROOT_KEY is invalid/);
    expect(bad.stderr()).not.toContain("tinysecret");
  });
});
