// Group commit: many logical writes share one fsynced LevelDB batch. While one batch is being
// written, new items queue; the next batch takes every queued item up to the batch bounds.
// Writes never overlap (abstract-level defines no order between concurrent writes), so batches
// reach the disk in the order their items were queued.
import { assert } from "@keyraft/core";
import type { StoreOp, SyncedBatchWrite } from "./level-db.js";
import { failedError } from "./errors.js";

export interface GroupCommitLimits {
  /** Most items in one batch (at least 1). */
  batchEntriesMax: number;
  /** Soft bound on the bytes of one batch: a batch stops taking items once it is reached (a single larger item is still written alone). */
  batchBytesMax: number;
}

interface QueuedItem {
  ops: readonly StoreOp[];
  bytes: number;
  resolve: () => void;
  reject: (error: unknown) => void;
}

export interface GroupCommitStats {
  /** Batches written (each one fsync). */
  batchesWritten: number;
  /** Items written across all batches. */
  itemsWritten: number;
}

export class GroupCommitWriter {
  private readonly queue: Array<QueuedItem | undefined> = [];
  private queueHead = 0;
  private writing = false;
  private scheduled = false;
  private failure: Error | null = null;
  private idleWaiters: Array<() => void> = [];
  private readonly stats: GroupCommitStats = { batchesWritten: 0, itemsWritten: 0 };
  /** Items queued or being written: not yet durable. */
  private pending = 0;

  constructor(
    private readonly what: string,
    private readonly write: SyncedBatchWrite,
    private readonly limits: GroupCommitLimits,
    /** Called once, with the failure, when a batch write fails: the caller must stop the process. */
    private readonly onFatal: (error: Error) => void,
  ) {
    if (!(limits.batchEntriesMax >= 1 && limits.batchBytesMax >= 1)) {
      throw new RangeError(`${what}: batch limits must be at least 1`);
    }
  }

  /** Items queued or in flight, not yet durable. */
  pendingItems(): number {
    return this.pending;
  }

  failed(): Error | null {
    return this.failure;
  }

  statistics(): GroupCommitStats {
    return { ...this.stats };
  }

  /**
   * Queues `ops` to be written atomically (within one batch) after everything queued before.
   * Resolves once they are fsynced; rejects when a write failed (now or before).
   */
  enqueue(ops: readonly StoreOp[], bytes: number): Promise<void> {
    if (this.failure !== null) return Promise.reject(this.failure);
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ ops, bytes, resolve, reject });
      this.pending += 1;
      this.schedule();
    });
  }

  /** Resolves once nothing is queued or being written (at once when idle). */
  idle(): Promise<void> {
    if (!this.writing && !this.scheduled && this.queued() === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private queued(): number {
    return this.queue.length - this.queueHead;
  }

  // Deferred to a microtask so that the items queued in the same run of the event loop share
  // the first batch, rather than the first item taking a batch of its own.
  private schedule(): void {
    if (this.writing || this.scheduled) return;
    this.scheduled = true;
    queueMicrotask(() => {
      this.scheduled = false;
      void this.writeLoop();
    });
  }

  private async writeLoop(): Promise<void> {
    if (this.writing) return;
    this.writing = true;
    while (this.queued() > 0 && this.failure === null) {
      const batch = this.takeBatch();
      try {
        await this.write(batch.flatMap((item) => item.ops));
      } catch (error) {
        this.fail(error, batch);
        break;
      }
      this.stats.batchesWritten += 1;
      this.stats.itemsWritten += batch.length;
      this.pending -= batch.length;
      assert(this.pending >= this.queued(), "group commit: pending counts every queued item");
      for (const item of batch) item.resolve();
    }
    this.writing = false;
    this.notifyIdle();
  }

  private takeBatch(): QueuedItem[] {
    const batch: QueuedItem[] = [];
    let bytes = 0;
    while (this.queued() > 0 && batch.length < this.limits.batchEntriesMax) {
      const item = this.queue[this.queueHead];
      if (item === undefined) break;
      if (batch.length > 0 && bytes + item.bytes > this.limits.batchBytesMax) break;
      batch.push(item);
      bytes += item.bytes;
      this.queue[this.queueHead] = undefined; // let the item be collected
      this.queueHead += 1;
    }
    // Compact the array once the consumed prefix dominates, so the queue never grows unbounded.
    if (this.queued() === 0) {
      this.queue.length = 0;
      this.queueHead = 0;
    } else if (this.queueHead > 1024 && this.queueHead * 2 > this.queue.length) {
      this.queue.splice(0, this.queueHead);
      this.queueHead = 0;
    }
    assert(
      batch.length >= 1 && batch.length <= this.limits.batchEntriesMax,
      "group commit: a batch holds 1..batchEntriesMax items",
    );
    return batch;
  }

  private fail(cause: unknown, batch: QueuedItem[]): void {
    const error = failedError(this.what, cause);
    this.failure = error;
    const rest = this.queue.slice(this.queueHead);
    this.queue.length = 0;
    this.queueHead = 0;
    this.pending = 0;
    for (const item of [...batch, ...rest]) item?.reject(error);
    this.onFatal(error);
  }

  private notifyIdle(): void {
    if (this.scheduled || this.queued() > 0) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const resolve of waiters) resolve();
  }
}
