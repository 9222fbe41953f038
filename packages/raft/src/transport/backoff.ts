// Reconnection delays: exponential, capped, with jitter so that peers that lost each other at the
// same moment do not redial in lockstep. Pure: the random number comes in.

import { assert } from "../core/assert.js";

export interface BackoffConfig {
  /** Delay before the first retry, in ms. */
  baseMs: number;
  /** Upper bound of any delay, in ms. */
  maxMs: number;
}

/** Delay before retry number `attempt` (0-based): uniform in [d/2, d] where d = min(maxMs, baseMs * 2^attempt). */
export function backoffDelayMs(config: BackoffConfig, attempt: number, random01: number): number {
  assert(config.baseMs > 0 && config.maxMs >= config.baseMs, "backoff: need 0 < baseMs <= maxMs");
  assert(attempt >= 0 && random01 >= 0 && random01 < 1, "backoff: attempt >= 0 and random in [0, 1)");
  const ceilingMs = Math.min(config.maxMs, config.baseMs * 2 ** Math.min(attempt, 30));
  return Math.round(ceilingMs / 2 + (ceilingMs / 2) * random01);
}
