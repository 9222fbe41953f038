// UTC time buckets of the analytics.

export const hourMs = 3_600_000;
export const dayMs = 86_400_000;

export function hourStartMs(timeMs: number): number {
  return Math.floor(timeMs / hourMs) * hourMs;
}

export function dayStartMs(timeMs: number): number {
  return Math.floor(timeMs / dayMs) * dayMs;
}

export function monthStartMs(timeMs: number): number {
  const at = new Date(timeMs);
  return Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), 1);
}
