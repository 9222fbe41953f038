// What `remaining` shows, with real keyraft processes (needs `tsc -b`; docs/counters.md, "What
// `remaining` shows"). A single node is exact: every verification answers the balance after its
// own spend and keys.getKey the balance at that moment, with small leases so that renewals,
// deadlines and settles happen all the time, across a graceful restart and (less the journaled
// forfeit) a kill -9. Concurrent clients see every balance exactly once.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  call,
  kill,
  killAllMembers,
  peersOf,
  planMembers,
  rootKey,
  sleep,
  spawnMember,
  waitLive,
  type ClusterMember,
} from "./cluster-harness.js";

// Leases of 8 credits for at most 150 ms: a key of 100 credits goes through a dozen leases.
const leaseCredits = 8;
const leaseTtlMs = 150;
const leaseEnv = {
  KEYRAFT_LOG_LEVEL: "warn",
  KEYRAFT_CREDIT_LEASE_TTL_MS: String(leaseTtlMs),
  KEYRAFT_CREDIT_LEASE_CREDITS: String(leaseCredits),
  KEYRAFT_CREDIT_LEASE_CREDITS_MAX: String(leaseCredits),
};
/** Credits a kill -9 may forfeit: less than a quarter lease for each of the (at most 2) leases per key. */
const crashForfeitMax = 2 * (Math.ceil(leaseCredits / 4) - 1);

let root = "";
let node: ClusterMember;
let apiId = "";

async function start(): Promise<void> {
  spawnMember(node, peersOf([node]), leaseEnv);
  await waitLive(node);
}

async function getRemaining(keyId: string): Promise<number | undefined> {
  const response = await fetch(`${node.baseUrl}/v1/keys.getKey?keyId=${keyId}`, {
    headers: { authorization: `Bearer ${rootKey}` },
  });
  expect(response.status).toBe(200);
  return ((await response.json()) as { remaining?: number }).remaining;
}

async function keyWith(credits: number): Promise<{ key: string; keyId: string }> {
  const created = await call(node, "/v1/keys.createKey", { apiId, remaining: credits });
  expect(created.status, JSON.stringify(created.body)).toBe(200);
  return created.body as { key: string; keyId: string };
}

async function verifyOnce(key: string): Promise<{ code: string; remaining: number | undefined }> {
  const answer = await call(node, "/v1/keys.verifyKey", { key }, false);
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  return { code: answer.body.code as string, remaining: answer.body.remaining as number | undefined };
}

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "keyraft-shown-"));
  [node] = (await planMembers(["solo"], (id) => join(root, id))) as [ClusterMember];
  await start();
  const created = await call(node, "/v1/apis.createApi", { name: "shown" });
  expect(created.status).toBe(200);
  apiId = created.body.apiId as string;
}, 60_000);

afterAll(async () => {
  killAllMembers();
  await rm(root, { recursive: true, force: true });
});

describe("credits shown by a single node", () => {
  it("101 sequential verifications of 100 credits: each answer and getKey after it are exact, then 0", async () => {
    const { key, keyId } = await keyWith(100);
    for (let i = 1; i <= 101; i++) {
      const answer = await verifyOnce(key);
      const expected = Math.max(0, 100 - i);
      expect(answer, `verification ${i}`).toEqual({ code: i <= 100 ? "VALID" : "USAGE_EXCEEDED", remaining: expected });
      expect(await getRemaining(keyId), `getKey after verification ${i}`).toBe(expected);
      // Now and then past a lease's deadline: it is closed and settled while getKey is asked.
      if (i % 23 === 0) {
        await sleep(leaseTtlMs + 50);
        expect(await getRemaining(keyId), `getKey after a pause at ${i}`).toBe(expected);
      }
    }
  }, 60_000);

  it("10 credits, 4 verifications: getKey says 6", async () => {
    const { key, keyId } = await keyWith(10);
    const shown: Array<number | undefined> = [];
    for (let i = 0; i < 4; i++) shown.push((await verifyOnce(key)).remaining);
    expect(shown).toEqual([9, 8, 7, 6]);
    expect(await getRemaining(keyId)).toBe(6);
    await sleep(leaseTtlMs * 3); // the lease reaches its deadline and is settled
    expect(await getRemaining(keyId)).toBe(6);
  }, 30_000);

  it("v2 updateCredits between lease spends: its answer and getKey after it are the true balance", async () => {
    const created = await call(node, "/v2/keys.createKey", { apiId, credits: { remaining: 40 } });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const { key, keyId } = created.body.data as { key: string; keyId: string };
    const v2Credits = async (route: string, body: unknown) => {
      const answer = await call(node, `/v2/${route}`, body);
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      return answer.body.data as { credits?: { remaining: number | null }; remaining?: number | null };
    };
    let balance = 40;
    const steps: Array<{ operation: "set" | "increment" | "decrement"; value: number }> = [
      { operation: "increment", value: 1 },
      { operation: "decrement", value: 2 },
      { operation: "set", value: 30 },
      { operation: "increment", value: 5 },
      { operation: "decrement", value: 1 },
    ];
    for (const [round, step] of steps.entries()) {
      // Spends from this node's lease (a new lease every few, leases of 8), then the update.
      for (let i = 0; i < 7; i++) {
        const verified = await v2Credits("keys.verifyKey", { key });
        balance -= 1;
        expect(verified.credits, `round ${round} spend ${i}`).toBe(balance);
      }
      balance =
        step.operation === "set"
          ? step.value
          : step.operation === "increment"
            ? balance + step.value
            : balance - step.value;
      const updated = await v2Credits("keys.updateCredits", { keyId, ...step });
      expect(updated.remaining, `updateCredits ${step.operation} ${step.value} in round ${round}`).toBe(balance);
      expect((await v2Credits("keys.getKey", { keyId })).credits?.remaining, `getKey in round ${round}`).toBe(balance);
      expect(await getRemaining(keyId), `v1 getKey in round ${round}`).toBe(balance);
    }
  }, 60_000);

  it("16 concurrent clients on 300 credits: the VALID answers show each balance exactly once", async () => {
    const { key, keyId } = await keyWith(300);
    const shown: number[] = [];
    let exceeded = 0;
    let left = 320;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (left > 0) {
          left--;
          const answer = await verifyOnce(key);
          if (answer.code === "VALID") shown.push(answer.remaining!);
          else {
            expect(answer).toEqual({ code: "USAGE_EXCEEDED", remaining: 0 });
            exceeded++;
          }
        }
      }),
    );
    expect(exceeded).toBe(20);
    expect(shown.sort((a, b) => a - b)).toEqual(Array.from({ length: 300 }, (_, i) => i));
    expect(await getRemaining(keyId)).toBe(0);
  }, 60_000);

  it("exact across a graceful restart; after kill -9 it shows the balance less the journaled forfeit, and stays exact", async () => {
    const { key, keyId } = await keyWith(200);
    for (let i = 1; i <= 50; i++) expect((await verifyOnce(key)).remaining).toBe(200 - i);
    expect(await getRemaining(keyId)).toBe(150);
    await kill(node, "SIGTERM");
    await start();
    expect(await getRemaining(keyId)).toBe(150);
    for (let i = 1; i <= 50; i++) {
      expect((await verifyOnce(key)).remaining).toBe(150 - i);
      expect(await getRemaining(keyId)).toBe(150 - i);
    }
    await kill(node, "SIGKILL");
    await start();
    // The restarted holder settles what it journaled: at least what it answered, less than a
    // quarter lease more per lease; shown at once, before the settle is applied.
    const after = (await getRemaining(keyId))!;
    expect(after).toBeLessThanOrEqual(100);
    expect(after).toBeGreaterThanOrEqual(100 - crashForfeitMax);
    await sleep(500);
    expect(await getRemaining(keyId)).toBe(after);
    for (let i = 1; i <= after; i++) {
      expect((await verifyOnce(key)).remaining).toBe(after - i);
      if (i % 10 === 0) expect(await getRemaining(keyId)).toBe(after - i);
    }
    expect(await verifyOnce(key)).toEqual({ code: "USAGE_EXCEEDED", remaining: 0 });
    expect(await getRemaining(keyId)).toBe(0);
  }, 60_000);
});
