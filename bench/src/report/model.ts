// The whole report of one invocation, as written to bench/reports/<scenario>-<timestamp>.json.
import type { PhaseResult } from "../load/run-load.js";
import type { Summary } from "./summary.js";

export interface MachineInfo {
  cpus: number;
  cpuModel: string;
  memoryGiB: number;
  platform: string;
  node: string;
  /** 1-minute load average when the run started: a hint of how noisy the machine was. */
  loadAverage1m: number;
}

export interface Report {
  summary: Summary;
  startedAt: string;
  finishedAt: string;
  /** Flags of the run (the root key is never written). */
  options: Record<string, unknown>;
  machine: MachineInfo;
  /** Where the generator, the targets and the baselines ran. */
  placement: string;
  /** Baselines first, then the scenario's phases. */
  phases: PhaseResult[];
  notes: string[];
}
