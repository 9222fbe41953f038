// Checks over what the clients saw (pure, unit-tested): credits never overspent, rate limits
// within their bound.

export interface CreditObservation {
  keyId: string;
  /** Credits given to the key (initial + sets + increments). */
  supplied: number;
  /** Costs of the verifications answered VALID. */
  admittedCost: number;
  /** The replicated remaining read after healing (getKey). */
  finalRemaining: number | null;
}

export function creditViolations(observations: readonly CreditObservation[]): string[] {
  const out: string[] = [];
  for (const o of observations) {
    if (o.admittedCost > o.supplied) out.push(`${o.keyId}: admitted ${o.admittedCost} > supplied ${o.supplied}`);
    if (o.finalRemaining !== null && o.admittedCost + o.finalRemaining > o.supplied) {
      out.push(`${o.keyId}: admitted ${o.admittedCost} + remaining ${o.finalRemaining} > supplied ${o.supplied}`);
    }
  }
  return out;
}

export interface Admission {
  callMs: number;
  returnMs: number;
}

/**
 * The largest number of admissions that certainly fell inside one window of `durationMs`: each
 * was decided at some instant of [callMs, returnMs]; a set whose earliest call and latest return
 * are less than `durationMs` apart certainly shares a window. Never over-reports.
 */
export function certainWindowMax(admissions: readonly Admission[], durationMs: number): number {
  return certainWindowPeak(admissions, durationMs).count;
}

/** certainWindowMax, and the earliest call time of a window that reaches it (null when none). */
export function certainWindowPeak(
  admissions: readonly Admission[],
  durationMs: number,
): { count: number; fromMs: number | null } {
  const sorted = [...admissions].sort((a, b) => a.callMs - b.callMs);
  let best = 0;
  let fromMs: number | null = null;
  for (let i = 0; i < sorted.length; i++) {
    const start = sorted[i]?.callMs ?? 0;
    let count = 0;
    for (let j = i; j < sorted.length; j++) {
      const a = sorted[j];
      if (a === undefined || a.callMs >= start + durationMs) break;
      if (a.returnMs < start + durationMs) count++;
    }
    if (count > best) {
      best = count;
      fromMs = start;
    }
  }
  return { count: best, fromMs };
}
