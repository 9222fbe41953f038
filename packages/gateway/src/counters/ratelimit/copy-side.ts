// A successor serving its owner's subjects after a takeover keeps a second durable copy of what it
// admits (docs/counters.md §2). An owner's admissions are held by two nodes (its own disk, and the
// reservation its successor acknowledged); a serving successor's would otherwise be held by it
// alone, and a membership change that removes it (its process stopped, as an operator does) would
// take them along: the subjects' next owner, collecting from the nodes up, would serve them from
// nothing (the fault campaign with membership changes and power cuts found windows of up to 30
// for a limit of 20). So before it answers, the serving successor has the node ranked after it
// keep a copy (successor-side.ts `keepCopies`), which gives it to whoever collects or is handed
// back those subjects. Copies only ever add counts: no generation is needed.
import { nextReservation, type BucketCount } from "@keyraft/core";
import { limitUnavailable, withTimeout } from "./errors.js";
import type { PeerLiveness } from "./liveness.js";
import { reservationKey } from "./subject.js";
import type { CounterTransport, WireBucket } from "./wire.js";

/** Buckets whose copied count is remembered per target; past it the memory starts over (copies are asked again). */
export const copyAckedBucketsMax = 100_000;

interface Target {
  /** Highest count the target confirmed keeping, per bucket id. */
  acked: Map<string, number>;
  /** Copies in flight, per bucket id. */
  inFlight: Map<string, { count: number; done: Promise<void> }>;
}

export interface CopySideOptions {
  transport: CounterTransport;
  liveness: PeerLiveness;
  timeoutMs: number;
  nowMs(): number;
}

function bucketId(key: string, bucketStartMs: number): string {
  return `${key}\u0000${bucketStartMs}`;
}

export class CopySide {
  private readonly targets = new Map<string, Target>();
  copiesSent = 0;

  constructor(private readonly options: CopySideOptions) {}

  /**
   * The copy of an admission just judged while serving after a takeover: null when the target
   * keeps it already (or there is no node to copy to: two voters), else a promise that resolves
   * once it does, and rejects (answer 503) when it cannot. `candidates`: the nodes ranked after
   * this one, in rank order; the first one up is the target.
   */
  cover(candidates: readonly string[], touched: readonly BucketCount[]): Promise<void> | null {
    if (candidates.length === 0) return null;
    const { liveness, nowMs } = this.options;
    const now = nowMs();
    const targetId = candidates.find((id) => liveness.isUp(id, now)) ?? candidates[0]!;
    const target = this.target(targetId);
    const send: WireBucket[] = [];
    const waits: Promise<void>[] = [];
    for (const bucket of touched) {
      const key = reservationKey(bucket.durationMs, bucket.key);
      const id = bucketId(key, bucket.bucketStartMs);
      if ((target.acked.get(id) ?? 0) >= bucket.count) continue;
      const flying = target.inFlight.get(id);
      if (flying !== undefined && flying.count >= bucket.count) {
        waits.push(flying.done);
        continue;
      }
      // A chunk ahead, as reservations are: the next admissions of the bucket find their copy kept.
      const count = nextReservation(bucket.count, bucket.limit);
      send.push({ key, limit: bucket.limit, bucketStartMs: bucket.bucketStartMs, count });
    }
    if (send.length > 0) waits.push(this.send(targetId, target, send));
    if (waits.length === 0) return null;
    return waits.length === 1 ? waits[0]! : Promise.all(waits).then(() => undefined);
  }

  private target(id: string): Target {
    let target = this.targets.get(id);
    if (target === undefined) {
      target = { acked: new Map(), inFlight: new Map() };
      this.targets.set(id, target);
    }
    return target;
  }

  private send(targetId: string, target: Target, buckets: WireBucket[]): Promise<void> {
    const { transport, liveness, timeoutMs, nowMs } = this.options;
    this.copiesSent += buckets.length;
    const voters = [...transport.voters()];
    const done = withTimeout(transport.call(targetId, { t: "copy", buckets, voters }), timeoutMs, () =>
      limitUnavailable(`no copy kept by ${targetId} in time`),
    )
      .then((reply) => {
        if (reply === "notSent") {
          liveness.lost(targetId);
          throw limitUnavailable(`no connection to ${targetId}, which must keep a copy of this limit's counts`);
        }
        if (reply.t !== "copy" || reply.counts.length !== buckets.length)
          throw limitUnavailable(
            `${targetId} did not keep a copy (${reply.t === "refused" ? reply.message : reply.t})`,
          );
        liveness.heard(targetId, nowMs());
        if (target.acked.size >= copyAckedBucketsMax) target.acked.clear();
        buckets.forEach((bucket, i) => {
          const id = bucketId(bucket.key, bucket.bucketStartMs);
          target.acked.set(id, Math.max(target.acked.get(id) ?? 0, reply.counts[i]!));
        });
      })
      .finally(() => {
        for (const bucket of buckets) {
          const id = bucketId(bucket.key, bucket.bucketStartMs);
          if (target.inFlight.get(id)?.done === done) target.inFlight.delete(id);
        }
      });
    for (const bucket of buckets)
      target.inFlight.set(bucketId(bucket.key, bucket.bucketStartMs), { count: bucket.count, done });
    return done;
  }

  /** Drops what it remembers of buckets that started before `beforeMs`. */
  prune(beforeMs: number): void {
    for (const target of this.targets.values())
      for (const id of target.acked.keys())
        if (Number(id.slice(id.lastIndexOf("\u0000") + 1)) < beforeMs) target.acked.delete(id);
  }
}
