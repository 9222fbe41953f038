// Judging one ratelimits.limit check on this node: the limiter, then the coverage of what it
// admitted (the disk reservation, and in a cluster the successor's) before the answer.
import type { LimitCheck, SlidingWindowLimiter, BucketCount } from "@keyraft/core";
import type { CounterDurability } from "../../store/types.js";

export interface LimitAnswer {
  success: boolean;
  limit: number;
  remaining: number;
  reset: number;
}

/** Both coverages, or whichever is needed (null: nothing to wait for). */
export function bothCovered(a: Promise<void> | null, b: Promise<void> | null): Promise<void> | null {
  if (a === null) return b;
  if (b === null) return a;
  return Promise.all([a, b]).then(() => undefined);
}

export function judgeLimitHere(
  limiter: SlidingWindowLimiter,
  durability: CounterDurability,
  check: LimitCheck,
  nowMs: number,
  successorCover: (touched: readonly BucketCount[]) => Promise<void> | null,
): LimitAnswer | Promise<LimitAnswer> {
  const judged = limiter.limit([check], nowMs);
  if (judged.evicted.length > 0) durability.forget?.(judged.evicted);
  const outcome = judged.outcomes[0]!;
  const answer = {
    success: judged.success,
    limit: outcome.limit,
    remaining: outcome.remaining,
    reset: outcome.resetAtMs,
  };
  if (judged.touched.length === 0) return answer;
  const cover = bothCovered(durability.cover(judged.touched), successorCover(judged.touched));
  return cover === null ? answer : cover.then(() => answer);
}
