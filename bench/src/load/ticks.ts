// When the worker reports an interval: every second of warm-up, then every second of measuring,
// aligned to the start of measuring; the last interval of each part may be shorter. Pure.
import type { Histogram } from "../hdr.js";
import { encodeHistogram, newHistogram, recordUs } from "../hdr.js";
import type { TickMessage } from "./messages.js";

export interface TickTime {
  /** Milliseconds after the worker started. */
  atMs: number;
  warmup: boolean;
}

export function tickSchedule(warmupMs: number, durationMs: number): TickTime[] {
  const ticks: TickTime[] = [];
  for (let at = 1000; at < warmupMs; at += 1000) ticks.push({ atMs: at, warmup: true });
  // The last warm-up interval ends exactly where measuring starts.
  if (warmupMs > 0) ticks.push({ atMs: warmupMs, warmup: true });
  for (let at = 1000; at < durationMs; at += 1000) ticks.push({ atMs: warmupMs + at, warmup: false });
  ticks.push({ atMs: warmupMs + durationMs, warmup: false });
  return ticks;
}

/** Counts of the current interval; `take` hands them over as a TickMessage and starts a new one. */
export class IntervalCounts {
  private histogram: Histogram = newHistogram();
  private completed = 0;
  private errors = 0;
  private second = 0;
  private lastMs: number;
  /** Measured intervals handed over so far. */
  measuredTaken = 0;

  constructor(startMs: number) {
    this.lastMs = startMs;
  }

  record(latencyUs: number | null, failed: boolean): void {
    if (latencyUs !== null) recordUs(this.histogram, latencyUs);
    this.completed++;
    if (failed) this.errors++;
  }

  take(warmup: boolean, nowMs: number): TickMessage {
    const message: TickMessage = {
      type: "tick",
      warmup,
      second: warmup ? -1 : this.second,
      intervalMs: nowMs - this.lastMs,
      completed: this.completed,
      errors: this.errors,
      histogram: encodeHistogram(this.histogram),
    };
    if (!warmup) {
      this.second++;
      this.measuredTaken++;
    }
    this.lastMs = nowMs;
    this.histogram = newHistogram();
    this.completed = 0;
    this.errors = 0;
    return message;
  }
}
