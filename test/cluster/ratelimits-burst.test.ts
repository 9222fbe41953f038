// `async: true` limits under bursts, across three real keyraft processes (needs `tsc -b`;
// docs/counters.md, Theorem 6): each burst of `ratelimits.limit` calls (several sizes, spread over
// 0 to 500 ms, split over the nodes evenly or all on one) on a fresh identifier with a limit of 50
// per minute admits at most limit + asyncOvershootMax(50, 3) = 55 (10% over at most); and once the
// counts have been exchanged the limit is reached (the shares only delay).
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { asyncOvershootMax } from "@keyraft/core";
import {
  call,
  killAllMembers,
  leaderOf,
  peersOf,
  planMembers,
  sleep,
  spawnMember,
  waitLive,
  type ClusterMember,
} from "./cluster-harness.js";

const limit = 50;
let root = "";
let members: ClusterMember[] = [];

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "keyraft-burst-"));
  members = await planMembers(["b1", "b2", "b3"], (id) => join(root, id));
  for (const member of members)
    spawnMember(member, peersOf(members), { KEYRAFT_LOG_LEVEL: "warn", KEYRAFT_RATELIMIT_RECONCILE_MS: "50" });
  await Promise.all(members.map((member) => waitLive(member)));
  await leaderOf(members);
}, 60_000);

afterAll(async () => {
  killAllMembers();
  await rm(root, { recursive: true, force: true });
});

/** `size` calls spread evenly over `spreadMs`, on the nodes chosen by `nodeOf`; the number admitted. */
async function burst(
  identifier: string,
  size: number,
  spreadMs: number,
  nodeOf: (i: number) => ClusterMember,
): Promise<number> {
  const startMs = Date.now();
  const answers = await Promise.all(
    Array.from({ length: size }, async (_, i) => {
      const atMs = startMs + (spreadMs * i) / size;
      const waitMs = atMs - Date.now();
      if (waitMs > 0) await sleep(waitMs);
      const answer = await call(nodeOf(i), "/v1/ratelimits.limit", {
        namespace: "burst",
        identifier,
        limit,
        duration: 60_000,
        async: true,
      });
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      return answer.body.success === true;
    }),
  );
  return answers.filter(Boolean).length;
}

describe("async: true limits under bursts over three nodes", () => {
  const bound = limit + Math.floor(asyncOvershootMax(limit, 3));
  const shapes = [
    { size: 200, spreadMs: 125, spread: "even" },
    { size: 60, spreadMs: 0, spread: "even" },
    { size: 400, spreadMs: 500, spread: "even" },
    { size: 200, spreadMs: 125, spread: "one node" },
    { size: 300, spreadMs: 50, spread: "two nodes" },
  ] as const;
  for (const [index, shape] of shapes.entries()) {
    it(`${shape.size} calls over ${shape.spreadMs} ms (${shape.spread}): at most ${bound} admitted`, async () => {
      const identifier = `burst-${index}`;
      const nodeOf = (i: number): ClusterMember =>
        shape.spread === "even" ? members[i % 3]! : shape.spread === "one node" ? members[0]! : members[i % 2]!;
      const admitted = await burst(identifier, shape.size, shape.spreadMs, nodeOf);
      console.log(`burst ${shape.size} calls / ${shape.spreadMs} ms / ${shape.spread}: ${admitted} admitted`);
      expect(admitted).toBeLessThanOrEqual(bound);
      // The shares only delay admissions: later calls in the window reach the limit.
      let total = admitted;
      for (let round = 0; round < 40 && total < limit; round++) {
        total += await burst(identifier, 10, 20, (i) => members[i % 3]!);
        await sleep(60);
      }
      expect(total).toBeGreaterThanOrEqual(limit);
      expect(total).toBeLessThanOrEqual(bound);
    }, 60_000);
  }
});
