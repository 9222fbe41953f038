import { assert } from "../core/assert.js";
import type { Entry } from "../core/types.js";

/**
 * The simulated application: a state machine whose whole state is a digest of every command applied
 * (in order) and the applied index. Two nodes that applied different entries end with different digests.
 */
export class SimApp {
  appliedIndex = 0;
  digest = 0x811c9dc5;

  apply(entry: Entry): void {
    assert(entry.index === this.appliedIndex + 1, `app: applied ${entry.index} after ${this.appliedIndex}`);
    this.appliedIndex = entry.index;
    this.digest = fold(this.digest, entry.type === "conf" ? 1 : 0);
    for (const byte of entry.data) this.digest = fold(this.digest, byte);
  }

  /** Snapshot bytes: index and digest, padded so the snapshot needs several chunks. */
  encode(paddingBytes: number): Uint8Array {
    const data = new Uint8Array(8 + paddingBytes);
    const view = new DataView(data.buffer);
    view.setUint32(0, this.appliedIndex);
    view.setUint32(4, this.digest);
    for (let i = 8; i < data.length; i++) data[i] = (i * 31 + this.digest) & 0xff;
    assert(SimApp.decode(data).digest === this.digest, "app snapshot must round-trip");
    return data;
  }

  static decode(data: Uint8Array): { appliedIndex: number; digest: number } {
    assert(data.byteLength >= 8, "app snapshot too short");
    const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
    return { appliedIndex: view.getUint32(0), digest: view.getUint32(4) };
  }

  restore(data: Uint8Array, index: number): void {
    const decoded = SimApp.decode(data);
    assert(decoded.appliedIndex === index, `app snapshot index ${decoded.appliedIndex} != metadata ${index}`);
    this.appliedIndex = decoded.appliedIndex;
    this.digest = decoded.digest;
  }
}

function fold(hash: number, byte: number): number {
  return Math.imul(hash ^ byte, 0x01000193) >>> 0;
}
