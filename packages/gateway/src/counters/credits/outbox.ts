// Lease requests on their way to the log: queued once their journal records are durable, then
// proposed as creditBatch commands (one log entry per batch, a few batches in flight). A request
// that is dropped (full queue, a failed proposal) is like a lost message: the holder times out
// grants and resends settles, so nothing here needs to be reliable for safety.
import {
  creditBatchCommandsMax,
  type CommandOutcome,
  type CreditBatchItem,
  type HolderRequest,
  type KeyCommand,
} from "@keyraft/core";

export interface OutboxOptions {
  propose(command: KeyCommand): Promise<CommandOutcome>;
  /** The voter set as this node sees it (carried in grants). */
  voters(): string[];
  /** Called when a proposal fails (logged by the caller; the holder recovers by its timers). */
  onError(error: unknown): void;
}

/** Requests waiting to be proposed; past it new ones are dropped. */
export const outboxQueuedMax = 100_000;
/** creditBatch proposals in flight at once. */
export const outboxInFlightMax = 4;

export class LeaseOutbox {
  private queue: CreditBatchItem[] = [];
  private inFlight = 0;
  private dropped = 0;
  private flushScheduled = false;

  constructor(private readonly options: OutboxOptions) {}

  push(requests: readonly HolderRequest[]): void {
    if (requests.length === 0) return;
    let voters: string[] | null = null;
    for (const request of requests) {
      if (this.queue.length >= outboxQueuedMax) {
        this.dropped++;
        continue;
      }
      if (request.type === "grantCreditLease") {
        voters ??= [...this.options.voters()].sort();
        this.queue.push({ ...request, voters });
      } else this.queue.push(request);
    }
    this.schedule();
  }

  private schedule(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    // Requests queued in the same turn share a batch.
    queueMicrotask(() => {
      this.flushScheduled = false;
      this.flush();
    });
  }

  private flush(): void {
    while (this.queue.length > 0 && this.inFlight < outboxInFlightMax) {
      const commands = this.queue.splice(0, creditBatchCommandsMax);
      this.inFlight++;
      this.options
        .propose({ type: "creditBatch", commands })
        .catch((error: unknown) => this.options.onError(error))
        .finally(() => {
          this.inFlight--;
          this.flush();
        });
    }
  }

  stats(): { queued: number; inFlight: number; dropped: number } {
    return { queued: this.queue.length, inFlight: this.inFlight, dropped: this.dropped };
  }
}
