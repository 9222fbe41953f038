// Contexts of ReadIndex requests. A context names one read to this node only, but it travels to
// the leader and back, and late answers arrive: to a restarted process, or after the leader
// changed. So a context must never be reused, across nodes or restarts: node id, a random nonce
// drawn once per process (injected, so the driver stays testable), and a counter.

import { assert } from "../core/assert.js";
import type { NodeId } from "../core/types.js";

/** Bytes of the per-process nonce. 8 random bytes: two processes collide with probability 2^-64. */
export const readContextNonceBytes = 8;

export class ReadContexts {
  private readonly prefix: Uint8Array;
  private counter = 0n;

  constructor(id: NodeId, nonce: Uint8Array) {
    assert(
      nonce.byteLength === readContextNonceBytes,
      `read contexts: the nonce must be ${readContextNonceBytes} bytes`,
    );
    const idBytes = new TextEncoder().encode(id);
    this.prefix = new Uint8Array(idBytes.byteLength + 1 + nonce.byteLength);
    this.prefix.set(idBytes, 0);
    this.prefix[idBytes.byteLength] = 0; // ids are printable: the separator keeps "n1"+nonce apart from "n1x"+...
    this.prefix.set(nonce, idBytes.byteLength + 1);
  }

  /** A context no other call, process or node produces: id | 0 | nonce | counter (8 bytes, big-endian). */
  next(): Uint8Array {
    this.counter++;
    const context = new Uint8Array(this.prefix.byteLength + 8);
    context.set(this.prefix, 0);
    new DataView(context.buffer).setBigUint64(this.prefix.byteLength, this.counter);
    return context;
  }
}
