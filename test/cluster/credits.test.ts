// Credits across real keyraft processes (needs `tsc -b`; docs/counters.md, credits): verifications of
// one key spend from per-node leases. Concurrent verifications on all three nodes admit exactly
// the key's credits in total; after kill -9 of a node holding a lease, the cluster admits at most
// the credits, and the dead node's unspent lease comes back once it restarts and settles.
// A single node: credits are exact and survive a kill -9 restart.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  call,
  eventually,
  kill,
  killAllMembers,
  leaderOf,
  peersOf,
  planMembers,
  rootKey,
  spawnMember,
  status,
  untilEveryMemberHasApi,
  waitLive,
  type ClusterMember,
} from "./cluster-harness.js";

// A short ttl so an idle lease is settled soon after its last use.
const leaseCredits = 50;
/**
 * Credits a kill -9 may forfeit: the spends journaled ahead of the answers, less than a quarter
 * lease for each of the (at most 2) leases per key the dead node held (spend-reservations.ts).
 */
const crashForfeitMax = 2 * (Math.ceil(leaseCredits / 4) - 1);
// Leases of a fixed size (no growth), so the forfeit bound below is tight.
const leaseEnv = {
  KEYRAFT_LOG_LEVEL: "warn",
  KEYRAFT_CREDIT_LEASE_TTL_MS: "600",
  KEYRAFT_CREDIT_LEASE_CREDITS: String(leaseCredits),
  KEYRAFT_CREDIT_LEASE_CREDITS_MAX: String(leaseCredits),
};
let root = "";

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "keyraft-credits-"));
});

afterAll(async () => {
  killAllMembers();
  await rm(root, { recursive: true, force: true });
});

async function getRemaining(member: ClusterMember, keyId: string): Promise<number | null> {
  const response = await fetch(`${member.baseUrl}/v1/keys.getKey?keyId=${keyId}`, {
    headers: { authorization: `Bearer ${rootKey}` },
  });
  if (response.status !== 200) {
    await response.arrayBuffer();
    return null;
  }
  const body = (await response.json()) as { remaining?: number };
  return body.remaining ?? null;
}

async function keyWithCredits(
  apiId: string,
  credits: number,
  on: readonly ClusterMember[],
): Promise<{ key: string; keyId: string }> {
  const created = await call(on[0]!, "/v1/keys.createKey", { apiId, remaining: credits });
  expect(created.status, JSON.stringify(created.body)).toBe(200);
  const { key, keyId } = created.body as { key: string; keyId: string };
  for (const member of on)
    await eventually(async () => (await getRemaining(member, keyId)) === credits, 10_000, `${member.id} has the key`);
  return { key, keyId };
}

interface Tally {
  admitted: number;
  exceeded: number;
  unavailable: number;
  other: string[];
  /** Every `remaining` shown by an admitted verification. */
  shown: number[];
}

/** `perNode` verifications on each member, `concurrency` at a time per member. */
async function verifyMany(
  on: readonly ClusterMember[],
  key: string,
  perNode: number,
  concurrency: number,
): Promise<Tally> {
  const tally: Tally = { admitted: 0, exceeded: 0, unavailable: 0, other: [], shown: [] };
  await Promise.all(
    on.map(async (member) => {
      let left = perNode;
      await Promise.all(
        Array.from({ length: concurrency }, async () => {
          while (left > 0) {
            left--;
            const answer = await call(member, "/v1/keys.verifyKey", { key }, false).catch((error: Error) => ({
              status: 0,
              body: { message: error.message },
            }));
            if (answer.status === 200 && answer.body.valid === true) {
              tally.admitted++;
              tally.shown.push(answer.body.remaining as number);
            } else if (answer.status === 200 && answer.body.code === "USAGE_EXCEEDED") tally.exceeded++;
            else if (answer.status === 503 || answer.status === 0) tally.unavailable++;
            else tally.other.push(`${answer.status} ${JSON.stringify(answer.body)}`);
          }
        }),
      );
    }),
  );
  return tally;
}

describe("credits on a three-node cluster", () => {
  let members: ClusterMember[] = [];
  let apiId = "";

  beforeAll(async () => {
    members = await planMembers(["c1", "c2", "c3"], (id) => join(root, id));
    for (const member of members) spawnMember(member, peersOf(members), leaseEnv);
    await Promise.all(members.map((member) => waitLive(member)));
    const leader = await leaderOf(members);
    const created = await call(leader, "/v1/apis.createApi", { name: "credits-test" });
    expect(created.status).toBe(200);
    apiId = created.body.apiId as string;
    // Keys are created through any member, each checked against its own replica first.
    await untilEveryMemberHasApi(members, apiId);
  }, 60_000);

  it("concurrent verifications on all three nodes admit exactly the key's credits", async () => {
    const credits = 600;
    const { key, keyId } = await keyWithCredits(apiId, credits, members);
    const indexBefore = (await status(members[0]!)).commitIndex;
    const tally = await verifyMany(members, key, 260, 8);
    // Spent from leases: a few grant and settle entries per 50 credits, not one entry per verification.
    expect((await status(members[0]!)).commitIndex - indexBefore).toBeLessThan(credits / 3);
    expect(tally.other, JSON.stringify(tally.other.slice(0, 3))).toEqual([]);
    expect(tally.unavailable).toBe(0);
    expect(tally.admitted).toBe(credits);
    expect(tally.exceeded).toBe(3 * 260 - credits);
    expect(Math.min(...tally.shown)).toBeGreaterThanOrEqual(0);
    // Once the leases are settled every replica shows 0 left.
    for (const member of members)
      await eventually(async () => (await getRemaining(member, keyId)) === 0, 15_000, `${member.id} shows 0`);
  }, 60_000);

  it("a key's last credits (held by its owner's lease) are spent for the other nodes by the owner: no false USAGE_EXCEEDED", async () => {
    const credits = 30; // at or below the low mark: only the key's owner gets leases
    const { key, keyId } = await keyWithCredits(apiId, credits, members);
    const answers: string[] = [];
    for (let i = 0; i < credits; i++) {
      const answer = await call(members[i % 3]!, "/v1/keys.verifyKey", { key }, false);
      answers.push(answer.status === 200 ? String(answer.body.code) : `status ${answer.status}`);
    }
    expect(answers, JSON.stringify(answers)).toEqual(Array.from({ length: credits }, () => "VALID"));
    for (const member of members) {
      const answer = await call(member, "/v1/keys.verifyKey", { key }, false);
      expect(answer.body).toMatchObject({ valid: false, code: "USAGE_EXCEEDED" });
    }
    for (const member of members)
      await eventually(async () => (await getRemaining(member, keyId)) === 0, 15_000, `${member.id} shows 0`);
  }, 60_000);

  it("after kill -9 of a node holding a lease: never more than the credits, and its unspent lease returns once it restarts", async () => {
    const credits = 900;
    const { key, keyId } = await keyWithCredits(apiId, credits, members);
    // Every node takes leases and spends some.
    const before = await verifyMany(members, key, 40, 4);
    expect(before.admitted).toBe(120);
    const victim = members.find((member) => member.id === "c3")!;
    await kill(victim, "SIGKILL");
    const alive = members.filter((member) => member !== victim);
    const during = await verifyMany(alive, key, 500, 6);
    expect(during.other).toEqual([]);
    // The dead node's unspent lease is unusable while it is down: fewer than all the credits, never more.
    expect(before.admitted + during.admitted).toBeLessThan(credits);
    spawnMember(victim, peersOf(members), leaseEnv);
    await waitLive(victim);
    // Restarted, it settles its leases from its journal: the credits it did not spend return.
    let after: Tally | null = null;
    await eventually(
      async () => {
        const more = await verifyMany(members, key, 20, 2);
        expect(more.other).toEqual([]);
        after = after === null ? more : { ...after, admitted: after.admitted + more.admitted };
        return (await getRemaining(members[0]!, keyId)) === 0 && more.admitted === 0;
      },
      30_000,
      "every credit spent",
    );
    const total = before.admitted + during.admitted + (after as Tally | null)!.admitted;
    expect(total).toBeLessThanOrEqual(credits);
    expect(total).toBeGreaterThanOrEqual(credits - crashForfeitMax);
    for (const member of members)
      await eventually(async () => (await getRemaining(member, keyId)) === 0, 15_000, `${member.id} shows 0`);
  }, 90_000);
});

describe("credits on a single node", () => {
  it("are exact across a graceful restart, and never overspent across kill -9", async () => {
    const [node] = await planMembers(["solo"], (id) => join(root, id));
    const start = async () => {
      spawnMember(node!, peersOf([node!]), leaseEnv);
      await waitLive(node!);
    };
    await start();
    const created = await call(node!, "/v1/apis.createApi", { name: "credits-single" });
    const { key, keyId } = await keyWithCredits(created.body.apiId as string, 400, [node!]);
    const indexBefore = (await status(node!)).commitIndex;
    const first = await verifyMany([node!], key, 250, 10);
    expect(first.admitted).toBe(250);
    expect(first.unavailable).toBe(0);
    // Spent from leases: far fewer log entries than verifications.
    expect((await status(node!)).commitIndex - indexBefore).toBeLessThan(60);
    // A graceful stop settles its leases with the exact spends.
    await kill(node!, "SIGTERM");
    await start();
    expect(await getRemaining(node!, keyId)).toBe(150);
    const second = await verifyMany([node!], key, 100, 10);
    expect(second.admitted).toBe(100);
    // kill -9: the restarted holder settles with what it journaled (at least what it answered).
    await kill(node!, "SIGKILL");
    await start();
    let left = -1;
    await eventually(
      async () => {
        left = (await getRemaining(node!, keyId)) ?? -1;
        const ledgerSettled = left <= 50;
        return ledgerSettled;
      },
      15_000,
      "the old lease settled after the restart",
    );
    expect(left).toBeGreaterThanOrEqual(50 - crashForfeitMax);
    const third = await verifyMany([node!], key, 80, 10);
    expect(third.admitted).toBe(left);
    expect(first.admitted + second.admitted + third.admitted).toBeLessThanOrEqual(400);
    await eventually(async () => (await getRemaining(node!, keyId)) === 0, 15_000, "0 left");
    await kill(node!, "SIGTERM");
  }, 60_000);
});
