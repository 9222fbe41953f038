// The contract between the CLI and a scenario: check (fail fast), prepare (start and seed what is
// measured, and say which load phases to run), then the CLI runs those phases together with the
// baselines' (in interleaved rounds), finish turns the results into figures, close tears down.
import type { BenchOptions } from "../args.js";
import type { PhaseResult } from "../load/run-load.js";
import type { RequestSpec } from "../load/plan.js";

export interface PhaseDefinition {
  /** Unique within a run: results are keyed by it. */
  label: string;
  targets: readonly string[];
  requests: readonly RequestSpec[];
  /** CPU seconds used so far by the processes under test; null when not local. */
  cpuSeconds: () => number | null;
  /** Called right before and right after each run of the phase (e.g. to read the targets' counters). */
  around?: { before(): Promise<void>; after(): Promise<void> };
}

export interface ScenarioContext {
  options: BenchOptions;
  /** A line on stderr (never stdout: its last line is the JSON summary). */
  log: (line: string) => void;
  /** A status line on stderr, overwritten in place on a terminal. */
  progress: (line: string) => void;
}

/** A figure of the summary: a number, a word, unknown (null), or a group of them (e.g. per phase). */
export type FigureValue = number | string | null | { [name: string]: FigureValue };

export interface ScenarioOutcome {
  /** The scenario's own figures, in the order they appear in the summary line. */
  figures: Record<string, FigureValue>;
  /** The throughput the baseline ratios are computed from; null: no ratio. */
  throughputRps: number | null;
  /** CPU cores the processes under test used while producing throughputRps; null when unknown. */
  throughputCpuCores: number | null;
  phases: PhaseResult[];
  /** Remarks for the report (skipped parts, unknowns). */
  notes: string[];
}

export interface PreparedScenario {
  /** Load phases to run (none for a scenario that measures by itself, like raft). */
  phases: PhaseDefinition[];
  /** Figures from the phases' results, plus anything measured in process. */
  finish(results: ReadonlyMap<string, PhaseResult>): Promise<ScenarioOutcome>;
  close(): Promise<void>;
}

export interface Scenario {
  /** One line for --help and the report. */
  description: string;
  /** Cheap checks run before anything starts (so a run that cannot work fails at once). */
  check(context: ScenarioContext): Promise<void>;
  prepare(context: ScenarioContext): Promise<PreparedScenario>;
}
