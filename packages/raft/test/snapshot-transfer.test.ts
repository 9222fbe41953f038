// Snapshot transfer through a link shaped like the real transport: a per-peer queue bounded in
// bytes that drops the oldest message when full (transport/send-queue.ts), drained at a fixed rate.
// Before flow control was bounded in bytes, one Ready queued the whole window (256 chunks of
// 1 MiB) into a 64 MiB queue: past ~63 MiB a snapshot never installed, and every heartbeat
// response re-queued the window. RAFT_LARGE_SNAPSHOT=1 (npm run test:large-snapshot) adds 1 GiB.
import { describe, expect, it } from "vitest";
import type { RaftConfig } from "../src/core/config.js";
import type { Message } from "../src/core/messages.js";
import { SimLink } from "../src/sim/link.js";
import type { SimStorage } from "../src/sim/sim-storage.js";
import { resolveSnapshotFlow } from "../src/driver/options.js";
import { defaultTransportLimits } from "../src/transport/ws-transport.js";
import { electLeader, newCluster } from "./scenario-helpers.js";

const MiB = 1 << 20;

interface TransferOptions {
  snapshotBytes: number;
  linkBytesPerStep: number;
  /** The per-peer queue bound (the transport's sendQueueBytesMax). Default 64 MiB. */
  queueBytesMax?: number;
  config?: Partial<RaftConfig>;
  /** Loses the n-th chunk sent to the follower (counting from 1), for each n given. */
  loseChunks?: number[];
  stepsMax: number;
}

interface TransferResult {
  steps: number;
  installed: boolean;
  sameBytes: boolean;
  droppedByQueue: number;
  queuedBytesPeak: number;
  chunkBytesSent: number;
  leaderTermChanged: boolean;
}

/** The bytes of the snapshot `storage` holds (it keeps them apart from the snapshot's metadata and size). */
function heldBytes(storage: SimStorage): Uint8Array {
  const { metadata, totalBytes } = storage.snapshot();
  return storage.snapshotData(metadata.index, 0, totalBytes);
}

/** n3 is cut off while n1 compacts its log behind a snapshot, then rejoins through a slow link n1 <-> n3. */
function transferSnapshot(options: TransferOptions): TransferResult {
  const env = newCluster(["n1", "n2", "n3"], options.config ?? {});
  electLeader(env, "n1");
  env.isolated.add("n3");
  env.raw("n1").propose(new Uint8Array([1]));
  env.stabilize(["n1", "n2"]);
  const n1 = env.node("n1");
  n1.storage.createSnapshotSync(n1.app.appliedIndex, env.raw("n1").confState(), n1.app.encode(options.snapshotBytes));
  env.raw("n1").propose(new Uint8Array([2]));
  env.stabilize(["n1", "n2"]);
  env.isolated.clear();
  env.takeOutput();
  const term = env.raw("n1").status().term;
  const queueBytesMax = options.queueBytesMax ?? 64 * MiB;
  const toFollower = new SimLink(queueBytesMax, options.linkBytesPerStep);
  const fromFollower = new SimLink(queueBytesMax, options.linkBytesPerStep);
  const lose = new Set(options.loseChunks ?? []);
  let chunksSent = 0;
  let chunkBytesSent = 0;
  for (let step = 1; step <= options.stepsMax; step++) {
    for (const id of ["n1", "n2", "n3"]) env.tick(id, 1);
    for (let turn = 0; turn < 4; turn++) for (const id of ["n1", "n2", "n3"]) env.processReady(id);
    const direct: Message[] = [];
    for (const message of env.queue) {
      if (message.from === "n1" && message.to === "n3") {
        if (message.type === "snap") {
          chunksSent++;
          chunkBytesSent += message.data.byteLength;
          if (lose.has(chunksSent)) continue;
        }
        toFollower.push(message);
      } else if (message.from === "n3" && message.to === "n1") fromFollower.push(message);
      else direct.push(message);
    }
    env.queue = [...direct, ...toFollower.drain(), ...fromFollower.drain()];
    env.deliver();
    env.takeOutput();
    const follower = env.raw("n3").status();
    if (follower.applied >= env.raw("n1").status().applied && env.node("n3").app.digest === n1.app.digest) {
      const received = heldBytes(env.node("n3").storage);
      return {
        steps: step,
        installed: true,
        sameBytes: Buffer.compare(received, heldBytes(n1.storage)) === 0,
        droppedByQueue: toFollower.dropped,
        queuedBytesPeak: toFollower.queuedBytesPeak,
        chunkBytesSent,
        leaderTermChanged: env.raw("n1").status().term !== term || env.raw("n1").status().role !== "leader",
      };
    }
  }
  return {
    steps: options.stepsMax,
    installed: false,
    sameBytes: false,
    droppedByQueue: toFollower.dropped,
    queuedBytesPeak: toFollower.queuedBytesPeak,
    chunkBytesSent,
    leaderTermChanged: env.raw("n1").status().term !== term,
  };
}

describe("snapshot transfer through a byte-bounded queue and a slow link", () => {
  it("installs an 80 MiB snapshot (past the old 63 MiB ceiling) without a chunk dropped by the queue", () => {
    const snapshotBytes = 80 * MiB;
    const result = transferSnapshot({ snapshotBytes, linkBytesPerStep: 4 * MiB, stepsMax: 200 });
    expect(result.installed).toBe(true);
    expect(result.sameBytes).toBe(true);
    expect(result.droppedByQueue).toBe(0);
    expect(result.queuedBytesPeak).toBeLessThanOrEqual(9 * MiB); // the 8 MiB window, one chunk and small messages
    expect(result.chunkBytesSent).toBe(snapshotBytes + 8); // each byte once: nothing re-queued
    expect(result.leaderTermChanged).toBe(false);
  });

  it("keeps the leader and sends each byte once over a link slower than a chunk per heartbeat", () => {
    const snapshotBytes = 12 * MiB;
    // 256 KiB per step: a 1 MiB chunk takes 4 steps, the window 32 steps; heartbeats every step.
    const result = transferSnapshot({ snapshotBytes, linkBytesPerStep: 256 << 10, stepsMax: 400 });
    expect(result.installed).toBe(true);
    expect(result.sameBytes).toBe(true);
    expect(result.steps).toBeLessThanOrEqual(Math.ceil(snapshotBytes / (256 << 10)) + 20);
    expect(result.chunkBytesSent).toBe(snapshotBytes + 8);
    expect(result.droppedByQueue).toBe(0);
    expect(result.leaderTermChanged).toBe(false);
  });

  it("resends only from a lost chunk, once per gap, and finishes", () => {
    const snapshotBytes = 24 * MiB;
    const windowBytes = 8 * MiB;
    const result = transferSnapshot({
      snapshotBytes,
      linkBytesPerStep: 2 * MiB,
      loseChunks: [3, 12, 13],
      stepsMax: 400,
    });
    expect(result.installed).toBe(true);
    expect(result.sameBytes).toBe(true);
    // Each loss costs at most the window behind it, never a window per heartbeat.
    expect(result.chunkBytesSent).toBeLessThanOrEqual(snapshotBytes + 8 + 3 * windowBytes);
    expect(result.leaderTermChanged).toBe(false);
  });

  it("recovers when the last chunks and every report of the gap are lost (the idle timer resends)", () => {
    const result = transferSnapshot({
      snapshotBytes: 3 * MiB,
      linkBytesPerStep: 8 * MiB,
      loseChunks: [3, 4],
      stepsMax: 200,
    });
    expect(result.installed).toBe(true);
    expect(result.sameBytes).toBe(true);
  });

  it("small chunks and a small window (the simulator's shapes) still finish", () => {
    const result = transferSnapshot({
      snapshotBytes: 200_000,
      linkBytesPerStep: 16 << 10,
      queueBytesMax: 64 << 10,
      config: { maxSnapshotChunkBytes: 4096, maxSnapshotInflightBytes: 32 << 10 },
      loseChunks: [5, 6, 20],
      stepsMax: 400,
    });
    expect(result.installed).toBe(true);
    expect(result.sameBytes).toBe(true);
    expect(result.droppedByQueue).toBe(0);
  });

  it.runIf(process.env["RAFT_LARGE_SNAPSHOT"] === "1")(
    "installs a 1 GiB snapshot over a 64 MiB queue",
    { timeout: 600_000 },
    () => {
      const snapshotBytes = 1024 * MiB;
      const result = transferSnapshot({ snapshotBytes, linkBytesPerStep: 16 * MiB, stepsMax: 1000 });
      expect(result.installed).toBe(true);
      expect(result.sameBytes).toBe(true);
      expect(result.droppedByQueue).toBe(0);
      expect(result.chunkBytesSent).toBe(snapshotBytes + 8);
      expect(result.leaderTermChanged).toBe(false);
    },
  );
});

describe("snapshot state and heartbeats", () => {
  it("a heartbeat response in snapshot state re-queues nothing", () => {
    const env = newCluster(["n1", "n2", "n3"], { maxSnapshotChunkBytes: 1024 });
    electLeader(env, "n1");
    env.isolated.add("n3");
    env.raw("n1").propose(new Uint8Array([1]));
    env.stabilize(["n1", "n2"]);
    const n1 = env.node("n1");
    n1.storage.createSnapshotSync(n1.app.appliedIndex, env.raw("n1").confState(), n1.app.encode(64 * 1024));
    env.isolated.clear();
    env.tick("n1", 1);
    for (let round = 0; round < 10 && !env.queue.some((m) => m.type === "snap"); round++) {
      for (const id of ["n1", "n2", "n3"]) env.processReady(id);
      if (!env.queue.some((m) => m.type === "snap")) env.deliver();
    }
    const firstWindow = env.queue.filter((m) => m.type === "snap").length;
    expect(firstWindow).toBeGreaterThan(1);
    env.queue = env.queue.filter((m) => m.type !== "snap"); // held in the network
    const term = env.raw("n1").status().term;
    for (let i = 0; i < 5; i++) {
      env.raw("n1").step({ type: "heartbeatResp", from: "n3", to: "n1", term, context: null });
      env.processReady("n1");
    }
    expect(env.queue.filter((m) => m.type === "snap")).toEqual([]);
    expect(env.raw("n1").status().progress["n3"]?.state).toBe("snapshot");
  });
});

describe("RaftNode's snapshot window must fit its transport", () => {
  it("derives chunk and window from the limits, accepts a window at the queue's limit, refuses one past it", () => {
    const limits = defaultTransportLimits;
    expect(resolveSnapshotFlow(undefined, limits)).toEqual({
      maxSnapshotChunkBytes: MiB,
      maxSnapshotInflightBytes: 8 * MiB,
    });
    const atLimit = limits.sendQueueBytesMax - MiB - limits.messageBytesMax;
    expect(resolveSnapshotFlow({ maxSnapshotInflightBytes: atLimit }, limits).maxSnapshotInflightBytes).toBe(atLimit);
    expect(() => resolveSnapshotFlow({ maxSnapshotInflightBytes: atLimit + 1 }, limits)).toThrow(/sendQueueBytesMax/);
    expect(() => resolveSnapshotFlow({ maxSnapshotChunkBytes: limits.messageBytesMax }, limits)).toThrow(
      /messageBytesMax/,
    );
    // A small transport gets small chunks and a window it can hold, rather than a refusal.
    const small = { ...limits, messageBytesMax: 4096, frameBytesMax: 8192, sendQueueBytesMax: 64 << 10 };
    const flow = resolveSnapshotFlow(undefined, small);
    expect(flow.maxSnapshotChunkBytes).toBe(2048);
    expect(flow.maxSnapshotInflightBytes + flow.maxSnapshotChunkBytes + small.messageBytesMax).toBeLessThanOrEqual(
      small.sendQueueBytesMax,
    );
  });
});
