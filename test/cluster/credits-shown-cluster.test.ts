// What `remaining` shows on a three-node cluster (needs `tsc -b`; docs/counters.md, "What
// `remaining` shows"): with small leases, verifications spread over the nodes, and keys.getKey
// asked of every node after each one:
//   - read-your-writes: the node that answered shows at most its answer at once;
//   - any node shows at least the true balance and at most it plus the bound
//     (voters - 1) * 2 * KEYRAFT_CREDIT_LEASE_CREDITS_MAX, plus the log spends of the others this
//     replica has not applied yet (at most one per verification in flight: here 1);
//   - no node shows a value above one it showed before (no credits were added).
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  call,
  eventually,
  killAllMembers,
  leaderOf,
  peersOf,
  planMembers,
  rootKey,
  spawnMember,
  untilEveryMemberHasApi,
  waitLive,
  type ClusterMember,
} from "./cluster-harness.js";

const leaseCredits = 8;
const leaseEnv = {
  KEYRAFT_LOG_LEVEL: "warn",
  KEYRAFT_CREDIT_LEASE_TTL_MS: "200",
  KEYRAFT_CREDIT_LEASE_CREDITS: String(leaseCredits),
  KEYRAFT_CREDIT_LEASE_CREDITS_MAX: String(leaseCredits),
};
/** The documented bound on what a node shows above the true balance (docs/counters.md). */
const shownAboveMax = (3 - 1) * 2 * leaseCredits + 1;

let root = "";
let members: ClusterMember[] = [];
let apiId = "";

async function getRemaining(member: ClusterMember, keyId: string): Promise<number | undefined> {
  const response = await fetch(`${member.baseUrl}/v1/keys.getKey?keyId=${keyId}`, {
    headers: { authorization: `Bearer ${rootKey}` },
  });
  if (response.status !== 200) return undefined;
  return ((await response.json()) as { remaining?: number }).remaining;
}

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "keyraft-shown-cluster-"));
  members = await planMembers(["s1", "s2", "s3"], (id) => join(root, id));
  for (const member of members) spawnMember(member, peersOf(members), leaseEnv);
  await Promise.all(members.map((member) => waitLive(member)));
  const leader = await leaderOf(members);
  const created = await call(leader, "/v1/apis.createApi", { name: "shown-cluster" });
  expect(created.status).toBe(200);
  apiId = created.body.apiId as string;
  // Keys are then created through every member.
  await untilEveryMemberHasApi(members, apiId, 10_000);
}, 60_000);

afterAll(async () => {
  killAllMembers();
  await rm(root, { recursive: true, force: true });
});

describe("credits shown on a three-node cluster", () => {
  it("read-your-writes on the answering node, within the bound everywhere, never rising", async () => {
    const credits = 150;
    const created = await call(members[0]!, "/v1/keys.createKey", { apiId, remaining: credits });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const { key, keyId } = created.body as { key: string; keyId: string };
    for (const member of members)
      await eventually(async () => (await getRemaining(member, keyId)) === credits, 10_000, `${member.id} has the key`);
    const lastShown = new Map<string, number>(members.map((m) => [m.id, credits]));
    const see = (member: ClusterMember, value: number, what: string) => {
      expect(value, `${what}: ${member.id} rose`).toBeLessThanOrEqual(lastShown.get(member.id)!);
      lastShown.set(member.id, value);
    };
    let admitted = 0;
    // A pattern that changes which node spends (runs of 1 to 5 on one node).
    const runs = [1, 3, 5, 2, 4, 1, 1, 5];
    let run = 0;
    let nodeAt = 0;
    for (let i = 0; admitted < credits; i++) {
      const answering = members[nodeAt % 3]!;
      if (i % runs[run % runs.length]! === 0) {
        nodeAt++;
        run++;
      }
      const answer = await call(answering, "/v1/keys.verifyKey", { key }, false);
      expect(answer.status).toBe(200);
      if (answer.body.valid !== true) {
        // Near the very end another node's lease may still hold the last credits (documented).
        expect(answer.body.code).toBe("USAGE_EXCEEDED");
        expect(credits - admitted).toBeLessThanOrEqual(shownAboveMax);
        see(answering, answer.body.remaining as number, `refusal ${i}`);
        continue;
      }
      admitted++;
      const balance = credits - admitted;
      const shownByAnswer = answer.body.remaining as number;
      expect(shownByAnswer, `answer ${i}`).toBeGreaterThanOrEqual(balance);
      expect(shownByAnswer, `answer ${i}`).toBeLessThanOrEqual(balance + shownAboveMax);
      see(answering, shownByAnswer, `answer ${i}`);
      for (const member of members) {
        const value = (await getRemaining(member, keyId))!;
        if (member === answering) expect(value, `read-your-writes at ${i}`).toBeLessThanOrEqual(shownByAnswer);
        expect(value, `${member.id} at ${i}`).toBeGreaterThanOrEqual(balance);
        expect(value, `${member.id} at ${i}`).toBeLessThanOrEqual(balance + shownAboveMax);
        see(member, value, `getKey ${i}`);
      }
      if (i > 10 * credits) throw new Error("the credits were not spent");
    }
    // Once every lease is settled, every node shows the true balance: 0.
    for (const member of members)
      await eventually(async () => (await getRemaining(member, keyId)) === 0, 15_000, `${member.id} shows 0`);
  }, 120_000);
});
