// Knobs of the credit leases, read from the environment with the rest of the configuration
// (config.ts): each problem names its variable and what it accepts.
import { leaseHolderDefaults, type LeaseHolderOptions } from "@keyraft/core";

export interface CreditLeaseConfig {
  /** KEYRAFT_CREDIT_LEASE_TTL_MS: how long a node spends from a lease (its clock, from the request). */
  leaseTtlMs: number;
  /** KEYRAFT_CLOCK_DRIFT_MAX: bound on the relative rate difference of any two nodes' monotonic clocks. */
  clockDriftMax: number;
  /** KEYRAFT_CREDIT_LEASE_CREDITS: credits a node asks for in a key's first lease (a costlier verification asks for its cost). */
  leaseCredits: number;
  /** KEYRAFT_CREDIT_LEASE_CREDITS_MAX: most a busy key's lease grows to (default 16 x leaseCredits). */
  leaseCreditsMax: number;
}

export const creditLeaseConfigDefaults: CreditLeaseConfig = {
  leaseTtlMs: 10_000,
  clockDriftMax: 0.01,
  leaseCredits: 100,
  leaseCreditsMax: 1600,
};
export const creditLeaseTtlMsRange = { min: 100, max: 600_000 } as const;
export const clockDriftMaxRange = { min: 0, max: 0.5 } as const;
export const leaseCreditsRange = { min: 1, max: 1_000_000 } as const;
/** Without KEYRAFT_CREDIT_LEASE_CREDITS_MAX, a busy key's leases grow up to this multiple of KEYRAFT_CREDIT_LEASE_CREDITS. */
export const leaseGrowthFactorDefault = 16;

/** Extra wait of the leader before expiring a lease: scheduling pauses between a holder's clock read and its journal write. */
export const expiryMarginMs = 250;
/** holder.poll period, and how long a verification waits for a lease its node asked for. */
export const holderPollIntervalMs = 50;
export const leaseWaitMs = 100;
/** The leader's expiry and refill timers. */
export const leaderTickMs = 100;

function parseNumber(
  env: Readonly<Record<string, string | undefined>>,
  name: string,
  range: { min: number; max: number },
  integer: boolean,
  fallback: number,
  errors: string[],
): number {
  const raw = env[name];
  if (raw === undefined) return fallback;
  const value = raw.trim() === "" ? Number.NaN : Number(raw);
  const kind = integer ? "an integer" : "a number";
  if (!Number.isFinite(value) || (integer && !Number.isSafeInteger(value)) || value < range.min || value > range.max) {
    errors.push(
      `${name}=${JSON.stringify(raw)} is invalid: expected ${kind} from ${range.min} to ${range.max} (default ${fallback})`,
    );
    return fallback;
  }
  return value;
}

export function parseCreditLeaseConfig(
  env: Readonly<Record<string, string | undefined>>,
  errors: string[],
): CreditLeaseConfig {
  const d = creditLeaseConfigDefaults;
  const config: CreditLeaseConfig = {
    leaseTtlMs: parseNumber(env, "KEYRAFT_CREDIT_LEASE_TTL_MS", creditLeaseTtlMsRange, true, d.leaseTtlMs, errors),
    clockDriftMax: parseNumber(env, "KEYRAFT_CLOCK_DRIFT_MAX", clockDriftMaxRange, false, d.clockDriftMax, errors),
    leaseCredits: parseNumber(env, "KEYRAFT_CREDIT_LEASE_CREDITS", leaseCreditsRange, true, d.leaseCredits, errors),
    leaseCreditsMax: 0,
  };
  const maxDefault = Math.min(config.leaseCredits * leaseGrowthFactorDefault, leaseCreditsRange.max);
  config.leaseCreditsMax = parseNumber(
    env,
    "KEYRAFT_CREDIT_LEASE_CREDITS_MAX",
    leaseCreditsRange,
    true,
    maxDefault,
    errors,
  );
  if (config.leaseCreditsMax < config.leaseCredits) {
    errors.push(
      `KEYRAFT_CREDIT_LEASE_CREDITS_MAX=${config.leaseCreditsMax} is invalid: expected at least KEYRAFT_CREDIT_LEASE_CREDITS (${config.leaseCredits})`,
    );
  }
  if (config.clockDriftMax >= 0.5)
    errors.push(`KEYRAFT_CLOCK_DRIFT_MAX=${config.clockDriftMax} is invalid: expected below 0.5`);
  return config;
}

/** The holder's options for a configuration: timeouts scale down with a short ttl. */
export function holderOptions(config: CreditLeaseConfig): LeaseHolderOptions {
  const requestTimeoutMs = Math.max(
    50,
    Math.min(leaseHolderDefaults.requestTimeoutMs, Math.floor(config.leaseTtlMs / 2)),
  );
  return {
    ...leaseHolderDefaults,
    ttlMs: config.leaseTtlMs,
    requestTimeoutMs,
    requestCredits: config.leaseCredits,
    requestCreditsMax: config.leaseCreditsMax,
  };
}
