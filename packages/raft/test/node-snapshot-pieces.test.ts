import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Level } from "level";
import { afterEach, describe, expect, it } from "vitest";
import { LevelStorage } from "../src/storage/level-storage.js";
import {
  bytes,
  connect,
  leaderOf,
  RecordingMachine,
  startCluster,
  startMember,
  until,
  type Member,
} from "./fixtures/in-process-cluster.js";

let running: Member[] = [];
const paths: string[] = [];

afterEach(async () => {
  await Promise.all(running.map((m) => m.node.stop()));
  running = [];
  await Promise.all(paths.splice(0).map((path) => rm(path, { recursive: true, force: true })));
});

describe("RaftNode on LevelStorage: a received snapshot larger than a piece", () => {
  it("is installed, stored in pieces, and read back the same whole and by range after a restart", async () => {
    const members = await startCluster(["n1", "n2", "n3"], { snapshotEntries: 10 });
    running.push(...members);
    const leader = await leaderOf(members);
    for (let i = 0; i < 25; i++) await leader.node.propose(bytes(`command-${i}`)); // compacted: n4 needs the snapshot

    const path = await mkdtemp(join(tmpdir(), "keyraft-pieces-"));
    paths.push(path);
    const pieceBytes = 32;
    const storage = await LevelStorage.open({ path, snapshotPieceBytes: pieceBytes });
    const machine = new RecordingMachine();
    const joiner = await startMember("n4", [], { machine, storage, snapshotEntries: 0 });
    running.push(joiner);
    connect([...members, joiner]);
    await leader.node.addLearner("n4");
    await until(() => machine.snapshotsInstalled === 1, 10_000, "n4 installs the leader's snapshot");
    await until(() => machine.commands.includes("command-24"), 10_000, "n4 applies the tail");
    expect(machine.commands).toEqual(leader.machine.commands);

    const held = storage.snapshot();
    expect(held.data.byteLength).toBeGreaterThan(pieceBytes); // so it was written in pieces
    await joiner.node.stop();
    running = running.filter((m) => m !== joiner);

    const db = new Level<string, Uint8Array>(path, { keyEncoding: "utf8", valueEncoding: "view" });
    const pieceKeys: string[] = [];
    for await (const key of db.sublevel("snap", { keyEncoding: "utf8" }).keys({ gte: "piece!", lt: "piece!~" }))
      pieceKeys.push(key);
    await db.close();
    expect(pieceKeys).toHaveLength(Math.ceil(held.data.byteLength / pieceBytes));

    const reopened = await LevelStorage.open({ path });
    try {
      expect(reopened.snapshot()).toEqual(held);
      const { index } = held.metadata;
      const total = held.data.byteLength;
      for (const [offset, length] of [
        [0, total],
        [pieceBytes - 1, 2],
        [5, total - 5],
      ] as const)
        expect(await reopened.readSnapshotData(index, offset, length)).toEqual(
          held.data.subarray(offset, offset + length),
        );
      const commands = JSON.parse(new TextDecoder().decode(held.data)) as string[];
      expect(commands).toEqual(leader.machine.commands.slice(0, commands.length));
    } finally {
      await reopened.close();
    }
  });
});
