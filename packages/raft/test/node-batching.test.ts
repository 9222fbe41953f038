// Group commit and write batching in RaftNode: proposals that arrive while a write is in flight all
// go into the next write (one append, one sync), and a follower persists what it received in one write.
import { afterEach, describe, expect, it } from "vitest";
import type { Entry, HardState } from "../src/core/types.js";
import { RaftNode } from "../src/node.js";
import { MemoryStorage } from "../src/storage/memory-storage.js";
import { bytes, clusterSecret, RecordingMachine, until } from "./fixtures/in-process-cluster.js";

/** MemoryStorage that records every append and can hold appends until released (a slow fsync, controlled). */
class GatedStorage extends MemoryStorage {
  readonly appends: { entries: number; sync: boolean }[] = [];
  private gate: Promise<void> | null = null;
  private release: (() => void) | null = null;
  held = 0;

  override close(): Promise<void> {
    this.open(); // never strand a write on stop
    return super.close();
  }

  hold(): void {
    this.gate = new Promise((resolve) => (this.release = resolve));
  }

  open(): void {
    this.release?.();
    this.gate = null;
    this.release = null;
  }

  override async append(entries: readonly Entry[], hardState: HardState | null, sync: boolean): Promise<void> {
    this.appends.push({ entries: entries.length, sync });
    if (this.gate !== null) {
      this.held++;
      await this.gate;
    }
    return super.append(entries, hardState, sync);
  }
}

interface Member {
  id: string;
  node: RaftNode;
  storage: GatedStorage;
}

let members: Member[] = [];

afterEach(async () => {
  await Promise.all(members.map((m) => m.node.stop()));
  members = [];
});

async function startCluster(ids: string[]): Promise<Member[]> {
  const started = await Promise.all(
    ids.map(async (id) => {
      const storage = new GatedStorage();
      const node = new RaftNode({
        id,
        voters: ids,
        storage,
        stateMachine: new RecordingMachine(),
        transport: { secret: clusterSecret, peers: {}, limits: { backoffBaseMs: 10, backoffMaxMs: 100 } },
        tickMs: 10,
        electionTicks: 10,
        heartbeatTicks: 2,
        requestTimeoutMs: 5000,
      });
      await node.start();
      return { id, node, storage };
    }),
  );
  for (const a of started)
    for (const b of started) if (a !== b) a.node.setPeerAddress(b.id, `ws://127.0.0.1:${b.node.port}`);
  members = started;
  return started;
}

describe("RaftNode batching", () => {
  it("proposals arriving during a write go into the next write together; followers persist each batch in one write", async () => {
    const all = await startCluster(["n1", "n2", "n3"]);
    await until(
      () =>
        all.filter((m) => m.node.status().role === "leader").length === 1 &&
        all.every((m) => m.node.status().leader !== ""),
    );
    const leader = all.find((m) => m.node.status().role === "leader");
    if (leader === undefined) throw new Error("no leader");
    await leader.node.propose(bytes("warm-up")); // the leader's no-op and first entry are out of the way
    await until(() => all.every((m) => m.node.status().applied === leader.node.status().commit));
    for (const m of all) m.storage.appends.length = 0;

    leader.storage.hold();
    const first = leader.node.propose(bytes("first"));
    await until(() => leader.storage.held === 1, 5000, "the first write in flight");
    const rest = Array.from({ length: 49 }, (_, i) => leader.node.propose(bytes(`p${i}`)));
    await new Promise((resolve) => setTimeout(resolve, 50)); // the 49 wait in the inbox meanwhile
    expect(leader.storage.appends).toEqual([{ entries: 1, sync: true }]); // nothing else started while the write is held
    leader.storage.open();
    await Promise.all([first, ...rest]);

    const withEntries = (m: Member) => m.storage.appends.filter((a) => a.entries > 0);
    expect(withEntries(leader)).toEqual([
      { entries: 1, sync: true },
      { entries: 49, sync: true },
    ]);
    await until(() => all.every((m) => m.node.status().applied === leader.node.status().commit));
    for (const follower of all.filter((m) => m !== leader)) {
      const writes = withEntries(follower);
      expect(writes.reduce((sum, a) => sum + a.entries, 0)).toBe(50);
      expect(writes.length).toBeLessThanOrEqual(2); // one write per batch it received (or one for both)
      expect(writes.every((a) => a.sync)).toBe(true);
    }
  });
});
