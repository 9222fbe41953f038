// The subject of a rate-limit check: the unit placed on one owner node. All limits of one
// verification share a subject (the key's identity id when it has one, else the key id), so one
// owner judges them together, atomically; a ratelimits.limit call's subject is its namespace and
// identifier (every limit and duration of that identifier lands on the same owner).
import { keyDerived, type KeyState } from "@keyraft/core";

export function verifySubject(limitOwnerId: string): string {
  return `v:${limitOwnerId}`;
}

export function limitSubject(namespaceId: string, identifier: string): string {
  return `r:${namespaceId}:${identifier}`;
}

/**
 * The subject of a limiter key, or null for a key of another form. Limiter keys are
 * `v:<ownerId>:<name>` (core verifyLimitKey; ids hold no ':') and
 * `r:<namespaceId>:<limit>:<durationMs>:<identifier>` (counters/ratelimit/namespace-check.ts namespaceLimitKey).
 */
export function subjectOfLimiterKey(key: string): string | null {
  if (key.startsWith("v:")) {
    const end = key.indexOf(":", 2);
    return end < 0 ? null : key.slice(0, end);
  }
  if (key.startsWith("r:")) {
    const parts = key.split(":");
    if (parts.length < 5) return null;
    return `r:${parts[1]}:${parts.slice(4).join(":")}`;
  }
  return null;
}

/**
 * The subject of a verification when it will apply at least one rate limit, else null (nothing
 * to place: the verification is answered where it arrives). Unknown keys have no subject.
 */
export function subjectOfVerification(state: KeyState, hash: string, requestsLimits: boolean): string | null {
  const key = state.keys.getByHash(hash);
  if (key === undefined) return null;
  if (!requestsLimits && keyDerived(state, key).autoLimits.length === 0) return null;
  return verifySubject(key.identityId ?? key.id);
}

/** Reservations carry the window length in their key, so a successor can restore the bucket as the limiter had it. */
export function reservationKey(durationMs: number, limiterKey: string): string {
  return `${durationMs}|${limiterKey}`;
}

export function parseReservationKey(key: string): { durationMs: number; limiterKey: string } | null {
  const bar = key.indexOf("|");
  if (bar <= 0) return null;
  const durationMs = Number(key.slice(0, bar));
  if (!Number.isSafeInteger(durationMs) || durationMs < 1) return null;
  return { durationMs, limiterKey: key.slice(bar + 1) };
}
