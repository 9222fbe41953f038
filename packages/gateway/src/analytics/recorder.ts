// Records verification outcomes for analytics without slowing verification: `record` only
// writes six fields into preallocated rings (O(1), no await, no allocation of a series); the
// rings are folded into the core aggregator on a timer, when full, or before a query.

import {
  VerificationAggregator,
  type AggregatorOptions,
  type VerificationFilter,
  type VerificationSeries,
  type VerifyCode,
} from "@keyraft/core";

/** Verifications buffered between two folds; a full ring is folded at once (amortized O(1)). */
export const pendingVerificationsMax = 16_384;
/** How often buffered verifications are folded into the aggregator. */
export const analyticsFlushIntervalMs = 1_000;
/** How often series past the retention are pruned. */
export const analyticsPruneIntervalMs = 3_600_000;

const noTags: readonly string[] = [];

export class VerificationRecorder {
  readonly aggregator: VerificationAggregator;
  private readonly timesMs = new Float64Array(pendingVerificationsMax);
  private readonly keyIds: string[] = new Array<string>(pendingVerificationsMax);
  private readonly apiIds: string[] = new Array<string>(pendingVerificationsMax);
  private readonly identityIds: Array<string | null> = new Array<string | null>(pendingVerificationsMax);
  private readonly externalIds: Array<string | null> = new Array<string | null>(pendingVerificationsMax);
  private readonly spentCredits = new Float64Array(pendingVerificationsMax);
  private readonly outcomes: VerifyCode[] = new Array<VerifyCode>(pendingVerificationsMax);
  private readonly tags: Array<readonly string[]> = new Array<readonly string[]>(pendingVerificationsMax);
  private pending = 0;
  private timer: NodeJS.Timeout | null = null;
  private lastPruneMs = 0;

  constructor(
    private readonly nowMs: () => number,
    options: AggregatorOptions = {},
  ) {
    this.aggregator = new VerificationAggregator(options);
  }

  /** O(1): buffers one verification of a known key (`externalId` of its identity, credits it spent). */
  record(
    timeMs: number,
    keyId: string,
    apiId: string,
    identityId: string | null,
    outcome: VerifyCode,
    tags: readonly string[] | undefined,
    externalId: string | null = null,
    spentCredits = 0,
  ): void {
    if (this.pending === pendingVerificationsMax) this.flush();
    const slot = this.pending++;
    this.timesMs[slot] = timeMs;
    this.keyIds[slot] = keyId;
    this.apiIds[slot] = apiId;
    this.identityIds[slot] = identityId;
    this.externalIds[slot] = externalId;
    this.spentCredits[slot] = spentCredits;
    this.outcomes[slot] = outcome;
    this.tags[slot] = tags ?? noTags;
  }

  /** Folds the buffered verifications into the aggregator (and prunes once an hour). */
  flush(): void {
    for (let slot = 0; slot < this.pending; slot++) {
      this.aggregator.record({
        timeMs: this.timesMs[slot]!,
        keyId: this.keyIds[slot]!,
        apiId: this.apiIds[slot]!,
        identityId: this.identityIds[slot] ?? null,
        externalId: this.externalIds[slot] ?? null,
        outcome: this.outcomes[slot]!,
        tags: this.tags[slot] ?? noTags,
        spentCredits: this.spentCredits[slot]!,
      });
      this.tags[slot] = noTags; // release the request's array
    }
    this.pending = 0;
    const nowMs = this.nowMs();
    if (nowMs - this.lastPruneMs >= analyticsPruneIntervalMs) {
      this.lastPruneMs = nowMs;
      this.aggregator.prune(nowMs);
    }
  }

  /** Starts the periodic fold (the timer does not keep the process alive). */
  start(): void {
    if (this.timer !== null) return;
    this.timer = setInterval(() => this.flush(), analyticsFlushIntervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    this.flush();
  }

  /** This node's series matching `filter` (buffered verifications included). */
  select(filter: VerificationFilter): VerificationSeries[] {
    this.flush();
    return this.aggregator.select(filter);
  }

  snapshot(): VerificationSeries[] {
    this.flush();
    return this.aggregator.snapshot();
  }

  restore(series: readonly VerificationSeries[]): void {
    this.aggregator.restore(series);
  }
}
