import { assert } from "./assert.js";
import type { SnapshotChunkMessage } from "./messages.js";
import type { NodeId, Snapshot } from "./types.js";

/** Largest snapshot a follower will reassemble in memory. */
export const snapshotBytesMax = 1 << 30;

/** Follower side of chunked InstallSnapshot: reassembles chunks that arrive in order. */
export class SnapshotReceiver {
  private key = "";
  private chunks: Uint8Array[] = [];
  private received = 0;

  /**
   * Accepts one chunk. Returns the complete snapshot when this was the last chunk, otherwise the next
   * byte offset the follower expects (the leader resends from there).
   */
  accept(message: SnapshotChunkMessage): Snapshot | number {
    const { metadata, offset, totalBytes, data } = message;
    if (totalBytes > snapshotBytesMax || offset + data.byteLength > totalBytes) return 0;
    const key = `${message.from}/${message.term}/${metadata.index}/${metadata.term}/${totalBytes}`;
    if (key !== this.key) {
      if (offset !== 0) return 0; // a new snapshot must start at the beginning
      this.reset();
      this.key = key;
    }
    if (offset !== this.received) return this.received; // duplicate or gap: tell the leader where we are
    this.chunks.push(data);
    this.received += data.byteLength;
    if (this.received < totalBytes) return this.received;
    const whole = new Uint8Array(totalBytes);
    let at = 0;
    for (const chunk of this.chunks) {
      whole.set(chunk, at);
      at += chunk.byteLength;
    }
    assert(at === totalBytes, "snapshot reassembly size mismatch");
    this.reset();
    return { metadata, data: whole };
  }

  reset(): void {
    this.key = "";
    this.chunks = [];
    this.received = 0;
  }

  /** Drops a transfer from another leader (called when the leader changes). */
  resetUnless(leader: NodeId): void {
    if (!this.key.startsWith(`${leader}/`)) this.reset();
  }
}
