// A fresh three-node cluster without KEYRAFT_ROOT_KEY (needs `tsc -b`): exactly one member
// generates the root key (printed once, valid on every node); verification analytics are kept
// per node and a query on any node merges every member's series; a member that does not answer
// is left out (the counts are partial, never more than happened) and a warning says so.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  eventually,
  kill,
  killAllMembers,
  peersOf,
  planMembers,
  spawnMember,
  status,
  verify,
  waitLive,
  type ClusterMember,
} from "./cluster-harness.js";

const rootKeyLine = /root key \(shown once, store it now\): (\S+)/;

let root = "";
let members: ClusterMember[] = [];
let rootKey = "";

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "keyraft-cluster-analytics-"));
  members = await planMembers(["n1", "n2", "n3"], (id) => join(root, id));
  for (const member of members) spawnMember(member, peersOf(members), { KEYRAFT_ROOT_KEY: undefined });
  await Promise.all(members.map((member) => waitLive(member)));
}, 60_000);

afterAll(async () => {
  killAllMembers();
  await rm(root, { recursive: true, force: true });
});

async function request(
  member: ClusterMember,
  method: "GET" | "POST",
  path: string,
  body?: unknown,
): Promise<{ status: number; body: any }> {
  const response = await fetch(`${member.baseUrl}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${rootKey}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, body: await response.json() };
}

async function successes(member: ClusterMember, keyId: string): Promise<number> {
  const answer = await request(member, "GET", `/v1/keys.getVerifications?keyId=${keyId}`);
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  return (answer.body.verifications as { success: number }[]).reduce((sum, day) => sum + day.success, 0);
}

describe("a new cluster without KEYRAFT_ROOT_KEY", () => {
  it("generates exactly one root key, printed by one member, valid on every member", async () => {
    await eventually(
      async () => members.some((member) => rootKeyLine.test(member.output())),
      15_000,
      "a root key line",
    );
    await new Promise((resolve) => setTimeout(resolve, 1500)); // a second generator (the race) would have printed by now
    const printed = members.flatMap((member) =>
      [...member.output().matchAll(new RegExp(rootKeyLine, "g"))].map((match) => match[1] as string),
    );
    expect(printed).toHaveLength(1);
    rootKey = printed[0] as string;
    for (const member of members) {
      await eventually(
        async () =>
          (await request(member, "POST", "/v1/apis.createApi", { name: `probe-${member.id}` })).status === 200,
        10_000,
        `${member.id} accepts the root key`,
      );
    }
  }, 30_000);
});

describe("verification analytics across the cluster", () => {
  it("a query on any node sums the verifications made on every node; a member that does not answer is left out", async () => {
    expect(rootKey).not.toBe("");
    const [a, b, c] = members as [ClusterMember, ClusterMember, ClusterMember];
    const apiId = (await request(a, "POST", "/v1/apis.createApi", { name: "analytics" })).body.apiId as string;
    const created = await request(a, "POST", "/v1/keys.createKey", { apiId });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const { key, keyId } = created.body as { key: string; keyId: string };
    const appliedOnA = (await status(a, rootKey)).appliedIndex;
    for (const member of members)
      await eventually(
        async () => (await status(member, rootKey)).appliedIndex >= appliedOnA,
        10_000,
        `${member.id} applied the key`,
      );

    for (let i = 0; i < 2; i++) expect((await verify(a, key)).body.valid).toBe(true);
    for (let i = 0; i < 3; i++) expect((await verify(b, key)).body.valid).toBe(true);

    // C verified nothing itself: its answer is the others' series merged.
    expect(await successes(c, keyId)).toBe(5);
    expect(await successes(a, keyId)).toBe(5);
    const rows = await request(c, "GET", `/v1/analytics.getVerifications?apiId=${apiId}&keyId=${keyId}&groupBy=key`);
    expect(rows.status, JSON.stringify(rows.body)).toBe(200);
    expect(rows.body).toEqual([expect.objectContaining({ keyId, valid: 5, total: 5 })]);

    // B is gone: C's answer counts A's verifications only, and says so in its log.
    await kill(b);
    expect(await successes(c, keyId)).toBe(2);
    // The line is written before the answer, but the pipe may deliver it to this process after the HTTP response.
    const partialWarning = () =>
      c
        .output()
        .split("\n")
        .find((line) => line.includes("analytics: partial answer"));
    await eventually(async () => partialWarning() !== undefined, 10_000, "the partial-answer warning in C's log");
    const warning = partialWarning();
    expect(warning).toContain(`"nodeId":"${b.id}"`);
  }, 40_000);
});
