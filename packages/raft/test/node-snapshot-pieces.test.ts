import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { StorageError } from "../src/errors.js";
import { LevelStorage } from "../src/storage/level-storage.js";
import { pieceDirName } from "../src/storage/piece-files.js";
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
import { heldSnapshot } from "./storage-conformance.js";

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

    const held = await heldSnapshot(storage);
    expect(held.data.byteLength).toBeGreaterThan(pieceBytes); // so it was written in pieces
    await joiner.node.stop();
    running = running.filter((m) => m !== joiner);

    const pieceFiles = await readdir(join(path, pieceDirName));
    expect(pieceFiles).toHaveLength(Math.ceil(held.data.byteLength / pieceBytes));

    const reopened = await LevelStorage.open({ path });
    try {
      expect(reopened.snapshot()).toStrictEqual({ metadata: held.metadata, totalBytes: held.data.byteLength });
      expect(await heldSnapshot(reopened)).toEqual(held);
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

describe("RaftNode on LevelStorage: the leader's snapshot chunks", () => {
  it("are read from disk chunk by chunk (the storage holds no snapshot bytes), and a failed read restarts the transfer", async () => {
    const ids = ["n1", "n2", "n3"];
    const pieceBytes = 48;
    const chunkBytes = 20; // chunks that straddle pieces
    const reads: Array<{ index: number; offset: number; length: number }> = [];
    let failReads = 2;
    const members = await Promise.all(
      ids.map(async (id) => {
        const path = await mkdtemp(join(tmpdir(), "keyraft-leader-pieces-"));
        paths.push(path);
        const storage = await LevelStorage.open({ path, snapshotPieceBytes: pieceBytes, keepEntries: 2 });
        const read = storage.readSnapshotData.bind(storage);
        storage.readSnapshotData = async (index, offset, length) => {
          reads.push({ index, offset, length });
          if (offset > 0 && failReads > 0) {
            failReads--;
            throw new StorageError("RAFT_ERR_STORAGE_CORRUPT", "injected: a chunk's bytes could not be read");
          }
          return read(index, offset, length);
        };
        return startMember(id, ids, { storage, snapshotEntries: 10, raft: { maxSnapshotChunkBytes: chunkBytes } });
      }),
    );
    running.push(...members);
    connect(members);
    const leader = await leaderOf(members);
    for (let i = 0; i < 25; i++) await leader.node.propose(bytes(`command-${i}`)); // compacted: n4 needs the snapshot
    // The first snapshot (at 10 entries) may be smaller than a piece: wait for one in pieces.
    await until(() => leader.storage.snapshot().totalBytes > 2 * pieceBytes, 10_000, "a snapshot of 3 pieces or more");
    const held = leader.storage.snapshot();
    expect(held).not.toHaveProperty("data");
    expect(held.totalBytes).toBeGreaterThan(2 * pieceBytes);

    const machine = new RecordingMachine();
    const joiner = await startMember("n4", [], { machine, snapshotEntries: 0 });
    running.push(joiner);
    connect([...members, joiner]);
    reads.length = 0;
    await leader.node.addLearner("n4");
    await until(() => machine.snapshotsInstalled >= 1, 15_000, "n4 installs the leader's snapshot");
    await until(() => machine.commands.includes("command-24"), 10_000, "n4 applies the tail");
    expect(machine.commands).toEqual(leader.machine.commands);
    expect(failReads).toBe(0); // both injected failures happened, and the transfer still finished
    // Every chunk the leader sent was read from its storage, none larger than a chunk.
    const installed = reads.filter((read) => read.index === leader.storage.snapshot().metadata.index);
    expect(installed.length).toBeGreaterThanOrEqual(Math.ceil(held.totalBytes / chunkBytes));
    expect(installed.every((read) => read.length <= chunkBytes)).toBe(true);
  });
});
