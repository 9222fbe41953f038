import { assert } from "./assert.js";
import type { SnapshotChunkMessage } from "./messages.js";
import type { NodeId, Snapshot } from "./types.js";

/**
 * Largest snapshot a follower reassembles: the largest byte array the runtime allocates (4 GiB in
 * Node 20). The snapshot is held in memory whole here, until it is installed (the leader reads each
 * chunk from disk).
 */
export const snapshotBytesMax = 2 ** 32;

/**
 * Follower side of chunked InstallSnapshot: reassembles chunks that arrive in order. Each chunk is
 * copied into place as it arrives (the buffer is allocated once, from the announced size), so
 * completing a snapshot costs no pass over all of it and holds one copy, not two.
 */
export class SnapshotReceiver {
  private key = "";
  /** Sender, term and snapshot index of the transfer in progress (key spelled out). */
  private from = "";
  private term = 0;
  private index = 0;
  private whole: Uint8Array | null = null;
  private received = 0;

  /**
   * Accepts one chunk. Returns the complete snapshot when this was the last chunk, otherwise the next
   * byte offset the follower expects (the leader resends from there); "tooLarge" when it can never fit.
   */
  accept(message: SnapshotChunkMessage): Snapshot | number | "tooLarge" {
    const { metadata, offset, totalBytes, data } = message;
    if (totalBytes > snapshotBytesMax) return "tooLarge";
    if (offset + data.byteLength > totalBytes) return 0;
    const key = `${message.from}/${message.term}/${metadata.index}/${metadata.term}/${totalBytes}`;
    if (key !== this.key) {
      if (offset !== 0) return 0; // a new snapshot must start at the beginning
      // A delayed chunk of an older transfer from the same leader must not wipe the newer one.
      if (message.from === this.from && message.term === this.term && metadata.index < this.index) return 0;
      this.reset();
      this.key = key;
      this.from = message.from;
      this.term = message.term;
      this.index = metadata.index;
      this.whole = new Uint8Array(totalBytes);
    }
    if (offset !== this.received) return this.received; // duplicate or gap: tell the leader where we are
    const whole = this.whole;
    assert(whole !== null && whole.byteLength === totalBytes, "snapshot receiver: buffer of another size");
    whole.set(data, offset);
    this.received += data.byteLength;
    if (this.received < totalBytes) return this.received;
    assert(this.received === totalBytes, "snapshot reassembly size mismatch");
    this.reset();
    return { metadata, data: whole };
  }

  reset(): void {
    this.key = "";
    this.from = "";
    this.term = 0;
    this.index = 0;
    this.whole = null;
    this.received = 0;
  }

  /** Drops a transfer from another leader (called when the leader changes). */
  resetUnless(leader: NodeId): void {
    if (!this.key.startsWith(`${leader}/`)) this.reset();
  }
}
