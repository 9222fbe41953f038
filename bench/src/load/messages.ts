// Messages between the load-generator worker and the main thread.
import type { LoadPlan } from "./plan.js";

export interface WorkerInput {
  plan: LoadPlan;
  /** Connections of this worker (a share of plan.connections). */
  connections: number;
  seed: number;
}

/** Sent once per second while measuring (and during warm-up, with warmup true). */
export interface TickMessage {
  type: "tick";
  warmup: boolean;
  /** Index of the second since measuring started (0-based); -1 during warm-up. */
  second: number;
  intervalMs: number;
  completed: number;
  errors: number;
  /** Latencies of this interval, encoded HDR histogram (µs). */
  histogram: string;
}

export interface DoneMessage {
  type: "done";
  measuredMs: number;
  completed: number;
  errors: number;
  marked: number;
  /** Per request name: encoded HDR histogram (µs) and counts. */
  perRequest: Record<string, { histogram: string; completed: number; errors: number; marked: number }>;
  statuses: Record<string, number>;
  errorSamples: string[];
}

export type WorkerMessage = TickMessage | DoneMessage;
