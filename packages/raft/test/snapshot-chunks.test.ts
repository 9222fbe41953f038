// The driver's snapshot chunk filler (driver/snapshot-chunks.ts): chunks the core names without
// bytes are read from storage and sent per peer in the order named; a failed read fails that
// peer's transfer; a rewind supersedes what is queued; clear() sends nothing more.
import { describe, expect, it } from "vitest";
import type { SnapshotChunkMessage, SnapshotChunkRef } from "../src/core/messages.js";
import type { SnapshotDataReader } from "../src/core/types.js";
import { SnapshotChunkFiller, snapshotChunksQueuedMax } from "../src/driver/snapshot-chunks.js";
import { StorageError } from "../src/errors.js";

const metadata = { index: 40, term: 3, conf: { voters: ["n1", "n2", "n3"], learners: [] } };
const totalBytes = 100;
const data = Uint8Array.from({ length: totalBytes }, (_, i) => i);

function ref(to: string, offset: number, length = 10, index = metadata.index): SnapshotChunkRef {
  return { type: "snapRef", from: "n1", to, term: 3, metadata: { ...metadata, index }, offset, totalBytes, length };
}

/** A reader whose reads finish only when the test says, in any order it likes. */
class ManualReader implements SnapshotDataReader {
  readonly pending: Array<{ index: number; offset: number; length: number; finish: (fail?: boolean) => void }> = [];
  readSnapshotData(index: number, offset: number, length: number): Promise<Uint8Array> {
    return new Promise((resolve, reject) =>
      this.pending.push({
        index,
        offset,
        length,
        finish: (fail = false) =>
          fail
            ? reject(new StorageError("RAFT_ERR_SNAPSHOT_OUT_OF_DATE", `snapshot at ${index} replaced`))
            : resolve(data.slice(offset, offset + length)),
      }),
    );
  }
  /** Finishes the read at position `at` among those under way (oldest first), then lets its continuation run. */
  async finish(at = 0, fail = false): Promise<void> {
    const [read] = this.pending.splice(at, 1);
    expect(read).toBeDefined();
    read?.finish(fail);
    for (let i = 0; i < 5; i++) await Promise.resolve();
  }
}

function setup() {
  const reader = new ManualReader();
  const sent: SnapshotChunkMessage[] = [];
  const failed: Array<{ to: string; offset: number }> = [];
  const filler = new SnapshotChunkFiller(
    reader,
    (chunk) => sent.push(chunk),
    (chunk) => failed.push({ to: chunk.to, offset: chunk.offset }),
  );
  return { reader, sent, failed, filler };
}

describe("SnapshotChunkFiller", () => {
  it("reads one chunk at a time per peer and sends each with its bytes, in the order named", async () => {
    const { reader, sent, filler } = setup();
    for (const offset of [0, 10, 20]) filler.push(ref("n2", offset));
    filler.push(ref("n3", 0));
    // One read under way per peer: n2's first chunk and n3's.
    expect(reader.pending.map((read) => read.offset)).toEqual([0, 0]);
    await reader.finish(1); // n3's read finishes first: it does not wait for n2's
    expect(sent.map((m) => [m.to, m.offset])).toEqual([["n3", 0]]);
    await reader.finish(0);
    await reader.finish(0);
    await reader.finish(0);
    expect(sent.map((m) => [m.to, m.offset])).toEqual([
      ["n3", 0],
      ["n2", 0],
      ["n2", 10],
      ["n2", 20],
    ]);
    for (const message of sent) {
      expect(message).toMatchObject({ type: "snap", from: "n1", term: 3, metadata, totalBytes });
      expect(message.data).toEqual(data.subarray(message.offset, message.offset + 10));
    }
    expect(reader.pending).toEqual([]);
  });

  it("a failed read fails that peer's transfer once and drops what was queued for it, not another peer's", async () => {
    const { reader, sent, failed, filler } = setup();
    for (const offset of [0, 10, 20]) filler.push(ref("n2", offset));
    filler.push(ref("n3", 0));
    await reader.finish(0, true); // n2 at 0
    expect(failed).toEqual([{ to: "n2", offset: 0 }]);
    expect(filler.queued("n2")).toBe(0);
    await reader.finish(0); // n3 at 0
    expect(sent.map((m) => [m.to, m.offset])).toEqual([["n3", 0]]);
    expect(reader.pending).toEqual([]);
    // The core starts the transfer again: it is read and sent as usual.
    filler.push(ref("n2", 0));
    await reader.finish(0);
    expect(sent.map((m) => [m.to, m.offset])).toEqual([
      ["n3", 0],
      ["n2", 0],
    ]);
  });

  it("a chunk that does not follow the last one queued (the core went back, or sends a newer snapshot) supersedes the queue", async () => {
    const { reader, sent, filler } = setup();
    for (const offset of [0, 10, 20, 30]) filler.push(ref("n2", offset));
    filler.push(ref("n2", 10)); // resent from the acknowledged offset
    expect(filler.queued("n2")).toBe(1);
    filler.push(ref("n2", 20));
    filler.push(ref("n2", 0, 10, 50)); // a newer snapshot
    expect(filler.queued("n2")).toBe(1);
    await reader.finish(0); // the read under way (offset 0 of the first transfer) is still sent
    await reader.finish(0);
    expect(sent.map((m) => [m.metadata.index, m.offset])).toEqual([
      [40, 0],
      [50, 0],
    ]);
  });

  it("after clear() a read under way is not sent, and chunks pushed later are", async () => {
    const { reader, sent, failed, filler } = setup();
    filler.push(ref("n2", 0));
    filler.push(ref("n2", 10));
    filler.clear();
    filler.push(ref("n2", 0, 10, 50));
    expect(reader.pending).toHaveLength(2); // the old read, and the new generation's
    await reader.finish(0, true); // the old read fails: nobody is told, it was cleared
    expect(failed).toEqual([]);
    await reader.finish(0);
    expect(sent.map((m) => [m.metadata.index, m.offset])).toEqual([[50, 0]]);
    expect(filler.queued("n2")).toBe(0);
  });

  it(`more than snapshotChunksQueuedMax (${snapshotChunksQueuedMax}) chunks queued for a peer fails its transfer`, () => {
    const { reader, failed, filler } = setup();
    for (let n = 0; n <= snapshotChunksQueuedMax; n++) filler.push(ref("n2", n, 1));
    expect(failed).toEqual([]); // one is being read, snapshotChunksQueuedMax wait
    expect(filler.queued("n2")).toBe(snapshotChunksQueuedMax);
    filler.push(ref("n2", snapshotChunksQueuedMax + 1, 1));
    expect(failed).toEqual([{ to: "n2", offset: snapshotChunksQueuedMax + 1 }]);
    expect(filler.queued("n2")).toBe(0);
    expect(reader.pending).toHaveLength(1);
  });
});
