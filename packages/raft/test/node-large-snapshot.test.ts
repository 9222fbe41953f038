// End to end over real WebSockets with the default transport limits (a 64 MiB per-peer queue that
// drops its oldest message): a learner joining a cluster whose snapshot is larger than that queue
// receives and installs it while writes go on, and the leader keeps its term meanwhile. Before snapshot flow control
// was bounded in bytes, the first ~64 MiB of chunks evicted the chunk the learner needed, forever.
import { afterEach, describe, expect, it } from "vitest";
import type { Snapshot } from "../src/core/types.js";
import {
  bytes,
  connect,
  leaderOf,
  RecordingMachine,
  startMember,
  until,
  type Member,
} from "./fixtures/in-process-cluster.js";

const MiB = 1 << 20;
const snapshotBytes = Number(process.env["RAFT_E2E_SNAPSHOT_MIB"] ?? 80) * MiB;

/** A state machine whose snapshot carries `snapshotBytes` of padding after its JSON commands. */
class PaddedMachine extends RecordingMachine {
  installedBytes = 0;

  override takeSnapshot(): Uint8Array {
    const json = new TextEncoder().encode(JSON.stringify(this.commands));
    const data = new Uint8Array(4 + json.byteLength + snapshotBytes);
    new DataView(data.buffer).setUint32(0, json.byteLength);
    data.set(json, 4);
    for (let i = 4 + json.byteLength; i < data.length; i += 4096) data[i] = i & 0xff; // not all zeros
    return data;
  }

  override installSnapshot(snapshot: Snapshot): void {
    const length = new DataView(snapshot.data.buffer, snapshot.data.byteOffset).getUint32(0);
    this.commands = JSON.parse(new TextDecoder().decode(snapshot.data.subarray(4, 4 + length))) as string[];
    this.lastIndex = snapshot.metadata.index;
    this.snapshotsInstalled++;
    this.installedBytes = snapshot.data.byteLength;
  }
}

let running: Member[] = [];

afterEach(async () => {
  await Promise.all(running.map((m) => m.node.stop()));
  running = [];
});

describe("RaftNode: a snapshot larger than the transport's per-peer queue", () => {
  it(
    `a learner installs a ${snapshotBytes / MiB} MiB snapshot over loopback while writes go on; the leader keeps its term`,
    { timeout: 120_000 },
    async () => {
      const ids = ["n1", "n2", "n3"];
      const members = await Promise.all(
        ids.map((id) =>
          startMember(id, ids, { snapshotEntries: 5, machine: new PaddedMachine(), requestTimeoutMs: 20_000 }),
        ),
      );
      running.push(...members);
      connect(members);
      const leader = await leaderOf(members);
      for (let i = 0; i < 8; i++) await leader.node.propose(bytes(`cmd-${i}`));
      await until(() => leader.node.status().snapshotIndex > 0, 30_000, "a snapshot on the leader");
      const term = leader.node.status().term;

      const machine = new PaddedMachine();
      const learner = await startMember("n4", [], { machine, snapshotEntries: 0 });
      running.push(learner);
      connect([...members, learner]);
      // Writes go on through the transfer and the install: each one is committed, none fails.
      let writing = true;
      let writes = 0;
      const writeFailures: string[] = [];
      const writer = (async () => {
        for (let n = 0; writing; n++) {
          await leader.node.propose(bytes(`during-${n}`)).then(
            () => void writes++,
            (error: unknown) => void writeFailures.push(String(error)),
          );
        }
      })();
      await leader.node.addLearner("n4");
      await until(() => machine.snapshotsInstalled > 0, 90_000, "the learner installed the snapshot");
      writing = false;
      await writer;
      console.log(
        `${snapshotBytes / MiB} MiB snapshot: ${writes} writes committed during the transfer and install; ` +
          `longest Ready turn: leader ${leader.node.metrics().readyMsMax.toFixed(0)} ms, ` +
          `learner ${learner.node.metrics().readyMsMax.toFixed(0)} ms`,
      );
      expect(writeFailures).toEqual([]);
      expect(writes).toBeGreaterThan(0);
      await leader.node.propose(bytes("after the snapshot"));
      await until(() => machine.commands.includes("after the snapshot"), 30_000, "the learner caught up");
      expect(machine.installedBytes).toBeGreaterThan(snapshotBytes);
      expect(machine.commands).toEqual(leader.machine.commands);
      expect(leader.node.status()).toMatchObject({ role: "leader", term });
      expect(leader.node.transportStats().peers["n4"]?.droppedQueueFull).toBe(0);
    },
  );
});
