// Checks this node forwards to the node serving their subject: queued per target in a
// ForwardBatcher and sent as one "batch" call per target per event-loop turn (everything that
// arrived in the same turn travels together), each answered with the target's result. A target
// that cannot be reached, or does not answer within the timeout, fails its checks with a 503:
// nothing is admitted on its behalf.
import { ForwardBatcher } from "@keyraft/core";
import { V1Error } from "../../errors.js";
import { limitUnavailable, withTimeout } from "./errors.js";
import type { PeerLiveness } from "./liveness.js";
import type { CounterTransport, ForwardItem, ForwardResult } from "./wire.js";

interface Pending {
  item: ForwardItem;
  resolve(result: ForwardResult): void;
  reject(error: Error): void;
}

export interface ForwarderOptions {
  transport: CounterTransport;
  liveness: PeerLiveness;
  timeoutMs: number;
  /** 0: send at the end of the event-loop turn; more: wait this long to gather a bigger batch. */
  delayMs: number;
  nowMs(): number;
}

export class Forwarder {
  private readonly batcher = new ForwardBatcher<Pending>(0);
  private flushScheduled = false;
  batchesSent = 0;
  itemsSent = 0;

  constructor(private readonly options: ForwarderOptions) {}

  forward(target: string, item: ForwardItem): Promise<ForwardResult> {
    return new Promise<ForwardResult>((resolve, reject) => {
      if (!this.batcher.add(target, { item, resolve, reject }, this.options.nowMs())) {
        reject(limitUnavailable("too many checks waiting for their owners"));
        return;
      }
      if (!this.flushScheduled) {
        this.flushScheduled = true;
        if (this.options.delayMs > 0) setTimeout(() => this.flush(), this.options.delayMs);
        else setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    this.flushScheduled = false;
    for (const batch of this.batcher.due(this.options.nowMs())) this.send(batch.ownerId, batch.items);
  }

  private send(target: string, pending: readonly Pending[]): void {
    const { transport, liveness, timeoutMs } = this.options;
    this.batchesSent++;
    this.itemsSent += pending.length;
    const call = transport.call(target, { t: "batch", items: pending.map((p) => p.item) });
    withTimeout(call, timeoutMs, () =>
      limitUnavailable(`${target}, which serves this limit, did not answer within ${timeoutMs} ms`),
    ).then(
      (reply) => {
        if (reply === "notSent") {
          liveness.lost(target);
          return failAll(pending, limitUnavailable(`no connection to ${target}, which serves this limit`));
        }
        if (reply.t !== "batch" || reply.results.length !== pending.length) {
          return failAll(
            pending,
            limitUnavailable(
              `${target} did not judge the forwarded checks${reply.t === "refused" ? `: ${reply.message}` : ""}`,
            ),
          );
        }
        liveness.heard(target, this.options.nowMs());
        for (let i = 0; i < pending.length; i++) pending[i]!.resolve(reply.results[i]!);
      },
      (error: unknown) => failAll(pending, error instanceof Error ? error : limitUnavailable(String(error))),
    );
  }
}

function failAll(pending: readonly Pending[], error: Error): void {
  for (const p of pending) p.reject(error);
}

/** A forwarded check's error result, as the error the receiving node answers. */
export function errorOfResult(result: Extract<ForwardResult, { k: "error" }>): V1Error {
  return new V1Error(result.code, result.message, {
    statusCode: result.status,
    ...(result.status === 503 ? { headers: { "Retry-After": "1" } } : {}),
  });
}
