// Knobs of the cluster rate limits, from the environment (docs/counters.md §2).
export interface RateLimitClusterConfig {
  /** Beat period R: liveness and async-limit counts go to every peer this often (KEYRAFT_RATELIMIT_RECONCILE_MS). */
  reconcileMs: number;
  /** A peer not heard for this long is taken for down: its limits move to its successor (KEYRAFT_RATELIMIT_SUSPECT_MS). */
  suspectAfterMs: number;
  /** Most a check waits for its owner, a reservation or a hand-back before a 503 (KEYRAFT_RATELIMIT_TIMEOUT_MS). */
  timeoutMs: number;
  /** Forwarded checks wait this long to travel in a bigger batch; 0: the end of the event-loop turn (KEYRAFT_RATELIMIT_FORWARD_DELAY_MS). */
  forwardDelayMs: number;
}

export const rateLimitClusterDefaults: RateLimitClusterConfig = {
  reconcileMs: 50,
  suspectAfterMs: 1000,
  timeoutMs: 1000,
  forwardDelayMs: 0,
};

const variables = {
  reconcileMs: { name: "KEYRAFT_RATELIMIT_RECONCILE_MS", min: 5, max: 10_000 },
  suspectAfterMs: { name: "KEYRAFT_RATELIMIT_SUSPECT_MS", min: 50, max: 600_000 },
  timeoutMs: { name: "KEYRAFT_RATELIMIT_TIMEOUT_MS", min: 50, max: 600_000 },
  forwardDelayMs: { name: "KEYRAFT_RATELIMIT_FORWARD_DELAY_MS", min: 0, max: 100 },
} as const;

/** Reads the knobs; each invalid one is added to `errors` by name (and its default kept). */
export function parseRateLimitClusterConfig(
  env: Readonly<Record<string, string | undefined>>,
  errors: string[],
): RateLimitClusterConfig {
  const config = { ...rateLimitClusterDefaults };
  for (const field of Object.keys(variables) as (keyof RateLimitClusterConfig)[]) {
    const { name, min, max } = variables[field];
    const raw = env[name];
    if (raw === undefined || raw === "") continue;
    const value = Number(raw);
    if (!Number.isSafeInteger(value) || value < min || value > max)
      errors.push(`${name} must be an integer in ${min}..${max}, got ${JSON.stringify(raw)}`);
    else config[field] = value;
  }
  if (config.suspectAfterMs <= 2 * config.reconcileMs)
    errors.push(
      `KEYRAFT_RATELIMIT_SUSPECT_MS (${config.suspectAfterMs}) must exceed twice KEYRAFT_RATELIMIT_RECONCILE_MS (${config.reconcileMs})`,
    );
  return config;
}
