// A leader's snapshot chunks, filled from storage on their way out. The core names each chunk
// (SnapshotChunkRef: the snapshot's index, an offset, a length) and holds no snapshot bytes; this
// reads each chunk's bytes from storage, one read at a time per peer and in the order the core
// named them, and hands the filled chunk to `send`. The core's window bounds what is named and not
// yet acknowledged, so what waits here is bounded by it too (and by snapshotChunksQueuedMax).
// A failed read (the snapshot was replaced meanwhile, or its bytes are missing) drops what is
// queued for that peer and calls `failed`: the driver reports the snapshot failed for that peer,
// and the core starts again from a probe with the snapshot then held.

import { fillSnapshotChunk, type SnapshotChunkMessage, type SnapshotChunkRef } from "../core/messages.js";
import type { NodeId, SnapshotDataReader } from "../core/types.js";

/** Chunks queued for one peer; past it the transfer is failed and begins again. */
export const snapshotChunksQueuedMax = 1_024;

export class SnapshotChunkFiller {
  private readonly queues = new Map<NodeId, SnapshotChunkRef[]>();
  /** The generation of the read loop running for each peer (clear() starts a new generation). */
  private readonly draining = new Map<NodeId, number>();
  private generation = 0;

  constructor(
    private readonly reader: SnapshotDataReader,
    private readonly send: (chunk: SnapshotChunkMessage) => void,
    private readonly failed: (ref: SnapshotChunkRef, error: unknown) => void,
  ) {}

  /** Queues a chunk to fill and send after those queued before it for the same peer. */
  push(ref: SnapshotChunkRef): void {
    let queue = this.queues.get(ref.to);
    if (queue === undefined) {
      queue = [];
      this.queues.set(ref.to, queue);
    }
    // The core went back in the transfer (a lost chunk, its idle timer) or began another one: the
    // chunks still queued are superseded by the ones it names now.
    const last = queue[queue.length - 1];
    if (last !== undefined && !follows(last, ref)) queue.length = 0;
    if (queue.length >= snapshotChunksQueuedMax) {
      queue.length = 0;
      this.failed(ref, new Error(`more than ${snapshotChunksQueuedMax} snapshot chunks queued for ${ref.to}`));
      return;
    }
    queue.push(ref);
    if (this.draining.get(ref.to) !== this.generation) void this.drain(ref.to, this.generation);
  }

  /** Chunks waiting for a read (for tests and status). */
  queued(to: NodeId): number {
    return this.queues.get(to)?.length ?? 0;
  }

  /** Drops every queued chunk (this node stopped leading, or stops): a read under way is not sent. */
  clear(): void {
    this.generation++;
    this.queues.clear();
  }

  private async drain(to: NodeId, generation: number): Promise<void> {
    this.draining.set(to, generation);
    try {
      for (;;) {
        const ref = this.queues.get(to)?.shift();
        if (ref === undefined) return;
        let data: Uint8Array;
        try {
          data = await this.reader.readSnapshotData(ref.metadata.index, ref.offset, ref.length);
        } catch (error) {
          if (generation !== this.generation) return;
          this.queues.delete(to);
          this.failed(ref, error);
          return;
        }
        if (generation !== this.generation) return;
        this.send(fillSnapshotChunk(ref, data));
      }
    } finally {
      if (this.draining.get(to) === generation) this.draining.delete(to);
    }
  }
}

/** `next` continues the transfer `last` belongs to, right after it. */
function follows(last: SnapshotChunkRef, next: SnapshotChunkRef): boolean {
  return (
    next.term === last.term && next.metadata.index === last.metadata.index && next.offset === last.offset + last.length
  );
}
