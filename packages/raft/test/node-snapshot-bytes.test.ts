// The snapshot policy by bytes: a few large entries (a bulk import) trigger a snapshot long before
// snapshotEntries would, so they are neither held in memory nor replayed on restart.
import { afterEach, describe, expect, it } from "vitest";
import { resolveNodeOptions, type RaftNodeOptions } from "../src/driver/options.js";
import { leaderOf, startCluster, until, type Member } from "./fixtures/in-process-cluster.js";
import { heldSnapshot } from "./storage-conformance.js";

let running: Member[] = [];

afterEach(async () => {
  await Promise.all(running.map((m) => m.node.stop()));
  running = [];
});

const payload = (tag: string, byteLength: number): Uint8Array => new TextEncoder().encode(tag.padEnd(byteLength, "."));

describe("RaftNode: snapshot by bytes", () => {
  it("snapshots at the entry that brings the bytes since the last snapshot to snapshotBytes", async () => {
    running = await startCluster(["n1"], { snapshotEntries: 10_000, snapshotBytes: 1000 });
    const leader = await leaderOf(running);
    // One proposal at a time: each is applied in a Ready of its own, so the snapshot's index
    // tells which entry crossed the budget (the bootstrap and no-op entries carry a few bytes).
    await leader.node.propose(payload("a", 400));
    await leader.node.propose(payload("b", 400));
    const third = await leader.node.propose(payload("c", 400));
    await until(() => leader.node.status().snapshotIndex > 0, 5_000, "a snapshot");
    expect(leader.node.status().snapshotIndex).toBe(third.index);
    const snapshotted = JSON.parse(new TextDecoder().decode((await heldSnapshot(leader.storage)).data)) as string[];
    expect(snapshotted.map((command) => command[0])).toEqual(["a", "b", "c"]);
    // The count starts again after the snapshot: two more entries of 400 bytes take none.
    await leader.node.propose(payload("d", 400));
    await leader.node.propose(payload("e", 400));
    const sixth = await leader.node.propose(payload("f", 400));
    await until(() => leader.node.status().snapshotIndex > third.index, 5_000, "a second snapshot");
    expect(leader.node.status().snapshotIndex).toBe(sixth.index);
    expect(leader.storage.snapshot().metadata.index).toBe(sixth.index);
  });

  it("takes 0 as never, like snapshotEntries, and refuses a negative budget", () => {
    // resolveNodeOptions reads only the numeric options; the rest is never touched.
    const options = (snapshotBytes?: number) =>
      ({ id: "n1", voters: ["n1"], ...(snapshotBytes === undefined ? {} : { snapshotBytes }) }) as RaftNodeOptions;
    expect(resolveNodeOptions(options(0)).snapshotBytes).toBe(0);
    expect(resolveNodeOptions(options()).snapshotBytes).toBe(64 * 1024 * 1024);
    expect(() => resolveNodeOptions(options(-1))).toThrow(/snapshotBytes/);
  });
});
