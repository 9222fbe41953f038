// The v2 API on three real keyraft processes (needs `tsc -b`): every node answers v2 as it answers
// v1. A key-level limit hit through v2 on every node admits exactly its limit in total (the
// forwarded verification carries the checked limits back); a rerolled key's old secret verifies
// on every node until its grace period ends and is EXPIRED on every node after; a migrated key
// completed by a verification on one node verifies on the others without its migrationId.
import { createHash } from "node:crypto";
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
  spawnMember,
  untilEveryMemberHasApi,
  waitLive,
  type ClusterMember,
} from "./cluster-harness.js";

let root = "";
let members: ClusterMember[] = [];
let leader: ClusterMember;
let apiId = "";

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "keyraft-v2-"));
  members = await planMembers(["n1", "n2", "n3"], (id) => join(root, id));
  for (const member of members) {
    spawnMember(member, peersOf(members), {
      KEYRAFT_LOG_LEVEL: "warn",
      KEYRAFT_KEY_MIGRATIONS: JSON.stringify({ mig_seam: "github.com/seamapi/prefixed-api-key" }),
    });
  }
  await Promise.all(members.map((member) => waitLive(member)));
  leader = await leaderOf(members);
  const created = await call(leader, "/v2/apis.createApi", { name: "v2-cluster" });
  expect(created.status, JSON.stringify(created.body)).toBe(200);
  apiId = created.body.data.apiId as string;
  // Keys are created through followers, each checked against its own replica first.
  await untilEveryMemberHasApi(members, apiId);
}, 60_000);

afterAll(async () => {
  killAllMembers();
  await rm(root, { recursive: true, force: true });
});

const v2 = (member: ClusterMember, route: string, body: unknown) => call(member, `/v2/${route}`, body);
const verify = async (member: ClusterMember, body: Record<string, unknown>) => {
  const response = await v2(member, "keys.verifyKey", body);
  expect(response.status, JSON.stringify(response.body)).toBe(200);
  return response.body.data as { code: string; ratelimits?: { name: string; remaining: number }[] };
};
/** Until every member has the key (getKey reads, never counts). */
const onEveryMember = (keyId: string) =>
  eventually(
    async () =>
      (await Promise.all(members.map((member) => v2(member, "keys.getKey", { keyId })))).every((r) => r.status === 200),
    10_000,
    `key ${keyId} on every member`,
  );

describe("v2 on a three-node cluster", () => {
  it("a key limit hit through v2 on every node admits exactly its limit; every answer lists the limit", async () => {
    const created = await v2(leader, "keys.createKey", {
      apiId,
      ratelimits: [{ name: "calls", limit: 7, duration: 600_000, autoApply: true }],
    });
    expect(created.status).toBe(200);
    const { key, keyId } = created.body.data as { key: string; keyId: string };
    await onEveryMember(keyId);
    const answers = await Promise.all(
      Array.from({ length: 21 }, (_, i) => verify(members[i % members.length]!, { key })),
    );
    expect(answers.filter((answer) => answer.code === "VALID")).toHaveLength(7);
    expect(answers.filter((answer) => answer.code === "RATE_LIMITED")).toHaveLength(14);
    for (const answer of answers) expect(answer.ratelimits?.[0]?.name).toBe("calls");
  }, 30_000);

  it("a key with limits verifies on the node that wrote it at once, wherever its limit is judged (read-your-writes across the forward)", async () => {
    // The verification goes to the node serving the limit's subject, which may not have applied
    // the write yet: it waits for the writing node's applied index before judging.
    const writers = members.filter((member) => member.id !== leader.id);
    const codes: string[] = [];
    for (let i = 0; i < 30; i++) {
      const writer = writers[i % writers.length]!;
      const created = await v2(writer, "keys.createKey", {
        apiId,
        ratelimits: [{ name: "ryw", limit: 5, duration: 60_000, autoApply: true }],
      });
      expect(created.status, JSON.stringify(created.body)).toBe(200);
      const { key } = created.body.data as { key: string };
      codes.push((await verify(writer, { key })).code);
      const rerolled = await v2(writer, "keys.rerollKey", { keyId: created.body.data.keyId, expiration: 60_000 });
      expect(rerolled.status, JSON.stringify(rerolled.body)).toBe(200);
      codes.push((await verify(writer, { key: rerolled.body.data.key as string })).code);
    }
    expect(codes.filter((code) => code !== "VALID")).toEqual([]);
  }, 60_000);

  it("a rerolled key's old secret verifies on every node through its grace period, then is EXPIRED everywhere", async () => {
    const created = await v2(leader, "keys.createKey", { apiId, prefix: "rr" });
    const old = created.body.data as { key: string; keyId: string };
    await onEveryMember(old.keyId);
    const long = await v2(members[1]!, "keys.rerollKey", { keyId: old.keyId, expiration: 600_000 });
    expect(long.status, JSON.stringify(long.body)).toBe(200);
    const rerolled = long.body.data as { key: string; keyId: string };
    await onEveryMember(rerolled.keyId);
    for (const member of members) {
      expect((await verify(member, { key: old.key })).code).toBe("VALID");
      expect((await verify(member, { key: rerolled.key })).code).toBe("VALID");
    }
    // Rerolling the new key with expiration 0 ends its grace at once: EXPIRED on every node.
    const now = await v2(members[2]!, "keys.rerollKey", { keyId: rerolled.keyId, expiration: 0 });
    expect(now.status).toBe(200);
    const latest = now.body.data as { keyId: string };
    await onEveryMember(latest.keyId);
    for (const member of members) {
      await eventually(async () => (await verify(member, { key: rerolled.key })).code === "EXPIRED", 5000, "EXPIRED");
    }
  }, 30_000);

  it("a seam key migrated through v2 completes on a follower and then verifies everywhere without migrationId", async () => {
    const secret = "resend_abcd1234_clusterlongsecret0123456789";
    const hash = createHash("sha256").update(secret.split("_").at(-1)!).digest("hex");
    const migrated = await v2(leader, "keys.migrateKeys", { migrationId: "mig_seam", apiId, keys: [{ hash }] });
    expect(migrated.status, JSON.stringify(migrated.body)).toBe(200);
    const keyId = migrated.body.data.migrated[0].keyId as string;
    await onEveryMember(keyId);
    const follower = members.find((member) => member.id !== leader.id)!;
    expect((await verify(follower, { key: secret })).code).toBe("NOT_FOUND");
    expect((await verify(follower, { key: secret, migrationId: "mig_seam" })).code).toBe("VALID");
    for (const member of members) {
      await eventually(async () => (await verify(member, { key: secret })).code === "VALID", 5000, "migrated");
    }
  }, 30_000);
});
