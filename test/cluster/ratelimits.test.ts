// Rate limits across three real keyraft processes (needs `tsc -b`; docs/counters.md, rate limits): an
// `async: false` limit hit concurrently on every node admits exactly its limit in total; after
// kill -9 of its owner the successor takes over and the total still never exceeds the limit; an
// `async: true` limit overshoots by no more than its stated bound.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { asyncOvershootBound, rankNodes } from "@keyraft/core";
import {
  call,
  eventually,
  kill,
  killAllMembers,
  leaderOf,
  peersOf,
  planMembers,
  rootKey,
  sleep,
  spawnMember,
  untilEveryMemberHasApi,
  waitLive,
  type ClusterMember,
} from "./cluster-harness.js";

const reconcileMs = 50;
let root = "";
let members: ClusterMember[] = [];
let apiId = "";

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "keyraft-ratelimits-"));
  members = await planMembers(["n1", "n2", "n3"], (id) => join(root, id));
  for (const member of members)
    spawnMember(member, peersOf(members), {
      KEYRAFT_LOG_LEVEL: "warn",
      KEYRAFT_RATELIMIT_RECONCILE_MS: String(reconcileMs),
    });
  await Promise.all(members.map((member) => waitLive(member)));
  const leader = await leaderOf(members);
  const created = await call(leader, "/v1/apis.createApi", { name: "ratelimits-test" });
  expect(created.status).toBe(200);
  apiId = created.body.apiId as string;
  // Keys are created through any member, each checked against its own replica first.
  await untilEveryMemberHasApi(members, apiId);
}, 60_000);

afterAll(async () => {
  killAllMembers();
  await rm(root, { recursive: true, force: true });
});

/** A key with a `default` limit of `limit` per `durationMs`, visible on every live member. */
async function keyWithLimit(
  limit: number,
  durationMs: number,
  on: readonly ClusterMember[],
): Promise<{ key: string; keyId: string }> {
  const created = await call(on[0]!, "/v1/keys.createKey", { apiId, ratelimit: { limit, duration: durationMs } });
  expect(created.status, JSON.stringify(created.body)).toBe(200);
  const { key, keyId } = created.body as { key: string; keyId: string };
  // Read (not verify: that would count) until every node has the key.
  const hasKey = async (member: ClusterMember) => {
    const response = await fetch(`${member.baseUrl}/v1/keys.getKey?keyId=${keyId}`, {
      headers: { authorization: `Bearer ${rootKey}` },
    });
    await response.arrayBuffer();
    return response.status === 200;
  };
  for (const member of on) await eventually(() => hasKey(member), 10_000, `${member.id} has the key`);
  return { key, keyId };
}

interface Tally {
  admitted: number;
  limited: number;
  unavailable: number;
  other: number;
}

/** `perNode` verifications on each member, all at once; counts the outcomes. */
async function verifyBurst(on: readonly ClusterMember[], key: string, perNode: number): Promise<Tally> {
  const tally: Tally = { admitted: 0, limited: 0, unavailable: 0, other: 0 };
  await Promise.all(
    on.flatMap((member) =>
      Array.from({ length: perNode }, async () => {
        const answer = await call(member, "/v1/keys.verifyKey", { key }, false).catch(() => ({
          status: 0,
          body: null,
        }));
        if (answer.status === 200 && answer.body.valid === true) tally.admitted++;
        else if (answer.status === 200 && answer.body.code === "RATE_LIMITED") tally.limited++;
        else if (answer.status === 503) tally.unavailable++;
        else tally.other++;
      }),
    ),
  );
  return tally;
}

describe("rate limits on a three-node cluster", () => {
  it("an async: false limit hit concurrently on all three nodes admits exactly its limit", async () => {
    const limit = 40;
    const { key } = await keyWithLimit(limit, 60_000, members);
    const first = await verifyBurst(members, key, 30);
    expect(first.other, JSON.stringify(first)).toBe(0);
    expect(first.admitted + first.unavailable, JSON.stringify(first)).toBeGreaterThanOrEqual(limit);
    expect(first.admitted, JSON.stringify(first)).toBe(limit);
    const again = await verifyBurst(members, key, 10);
    expect(again.admitted, JSON.stringify(again)).toBe(0);
  }, 60_000);

  it("ratelimits.limit (async: false) admits exactly its limit across the nodes", async () => {
    const limit = 25;
    let admitted = 0;
    await Promise.all(
      members.flatMap((member) =>
        Array.from({ length: 20 }, async () => {
          const answer = await call(member, "/v1/ratelimits.limit", {
            namespace: "rl-test",
            identifier: "user-1",
            limit,
            duration: 60_000,
          });
          if (answer.status === 200 && answer.body.success === true) admitted++;
        }),
      ),
    );
    expect(admitted).toBe(limit);
  }, 60_000);

  it("an async: true limit overshoots by no more than its bound", async () => {
    const limit = 60;
    const admittedAt: number[][] = members.map(() => []);
    const deadline = Date.now() + 3000;
    await Promise.all(
      members.map(async (member, index) => {
        while (Date.now() < deadline) {
          const answer = await call(member, "/v1/ratelimits.limit", {
            namespace: "rl-async",
            identifier: "user-a",
            limit,
            duration: 60_000,
            async: true,
          });
          if (answer.status === 200 && answer.body.success === true) admittedAt[index]!.push(Date.now());
          await sleep(10);
        }
      }),
    );
    const admitted = admittedAt.reduce((sum, times) => sum + times.length, 0);
    // a: the most one node admitted within one reconcile period (client times, widened to 2R).
    let perPeriod = 0;
    for (const times of admittedAt) {
      for (let i = 0, j = 0; i < times.length; i++) {
        while (times[i]! - times[j]! > 2 * reconcileMs) j++;
        perPeriod = Math.max(perPeriod, i - j + 1);
      }
    }
    expect(admitted).toBeGreaterThanOrEqual(limit);
    expect(admitted).toBeLessThanOrEqual(limit + asyncOvershootBound(limit, members.length, perPeriod));
  }, 60_000);

  it("after kill -9 of a limit's owner, its successor takes over, hands back when the owner restarts, and the total never exceeds the limit", async () => {
    const limit = 60;
    const { key, keyId } = await keyWithLimit(limit, 60_000, members);
    const [ownerId, successorId] = rankNodes(
      `v:${keyId}`,
      members.map((member) => member.id),
    );
    const owner = members.find((member) => member.id === ownerId)!;
    const survivors = members.filter((member) => member !== owner);
    const before = await verifyBurst(members, key, 8);
    expect(before.other, JSON.stringify(before)).toBe(0);
    expect(before.admitted).toBeGreaterThan(0);
    expect(before.admitted).toBeLessThanOrEqual(limit);
    await kill(owner, "SIGKILL");
    let after = 0;
    let unavailable = 0;
    const until = Date.now() + 8000;
    // Stop once the successor admitted a good share: the restarted owner must count it (hand-back).
    while (Date.now() < until && after < 15) {
      const tally = await verifyBurst(survivors, key, 10);
      after += tally.admitted;
      unavailable += tally.unavailable;
      expect(tally.other, JSON.stringify(tally)).toBe(0);
      await sleep(100);
    }
    // The successor serves (availability) from at least every count the owner had covered (safety).
    expect(after, `successor ${successorId} admitted none (${unavailable} unavailable)`).toBeGreaterThan(0);
    expect(before.admitted + after).toBeLessThanOrEqual(limit);
    // The owner restarts (its memory lost, its disk kept) and gets the successor's counts back.
    spawnMember(owner, peersOf(members), {
      KEYRAFT_LOG_LEVEL: "warn",
      KEYRAFT_RATELIMIT_RECONCILE_MS: String(reconcileMs),
    });
    await waitLive(owner);
    let restarted = 0;
    const until2 = Date.now() + 8000;
    for (let idle = 0; Date.now() < until2 && idle < 3;) {
      const tally = await verifyBurst(members, key, 10);
      restarted += tally.admitted;
      expect(tally.other, JSON.stringify(tally)).toBe(0);
      idle = tally.admitted === 0 && tally.limited > 0 ? idle + 1 : 0;
      await sleep(100);
    }
    expect(
      before.admitted + after + restarted,
      `before ${before.admitted}, successor ${after}, after the restart ${restarted}`,
    ).toBeLessThanOrEqual(limit);
  }, 90_000);
});
