// Main-thread side of a load phase: starts the worker threads, merges their histograms, prints a
// progress line to stderr once per second, and measures how much CPU the generator itself used
// (a generator near one full core means the numbers are the generator's limit, not the target's).
import { Worker } from "node:worker_threads";
import { performance } from "node:perf_hooks";
import { assert } from "../assert.js";
import { decodeHistogram, newHistogram, summarize, type Histogram, type LatencySummary } from "../hdr.js";
import type { DoneMessage, TickMessage, WorkerInput, WorkerMessage } from "./messages.js";
import { splitEvenly, type LoadPlan } from "./plan.js";
import { limits } from "../limits.js";

export interface TimelinePoint {
  /** Seconds since measuring started, at the end of the interval. */
  atS: number;
  rps: number;
  p99Ms: number;
  errors: number;
}

export interface RequestResult {
  completed: number;
  errors: number;
  /** Answers that contained the request's okMarker; null when it has none. */
  marked: number | null;
  rps: number;
  latency: LatencySummary;
}

export interface PhaseResult {
  label: string;
  measuredS: number;
  completed: number;
  errors: number;
  rps: number;
  latency: LatencySummary;
  perRequest: Record<string, RequestResult>;
  timeline: TimelinePoint[];
  /**
   * Second-to-second variation of throughput: standard deviation of the per-second rps as a
   * percentage of their mean. High values mean the machine was noisy during the phase.
   */
  rpsVariationPct: number;
  statuses: Record<string, number>;
  errorSamples: string[];
  /** CPU cores used by the generator's process over the phase (main thread + workers). */
  generatorCpuCores: number;
  /** CPU cores used by the processes under test, when they run on this machine; null otherwise. */
  targetCpuCores: number | null;
}

export interface LoadHooks {
  /** Called with a one-line status once per second. */
  progress: (line: string) => void;
  /** CPU seconds used so far by the processes under test, if they are local. */
  targetCpuSeconds?: () => number | null;
}

const workerUrl = new URL("./worker.js", import.meta.url);

interface CpuSample {
  generator: NodeJS.CpuUsage;
  target: number | null;
  atMs: number;
}

interface SecondCounts {
  intervalMs: number;
  completed: number;
  errors: number;
  histogram: Histogram;
}

/** Raw measurements of one run of a plan, kept so that several runs (rounds) merge exactly. */
export interface LoadRun {
  plan: LoadPlan;
  measuredMs: number;
  perRequest: Map<string, { histogram: Histogram; completed: number; errors: number; marked: number }>;
  /** Per measured second, in order. */
  seconds: SecondCounts[];
  statuses: Record<string, number>;
  errorSamples: string[];
  wallS: number;
  generatorCpuS: number;
  targetCpuS: number | null;
}

/** Runs a plan once and returns it as a phase result. */
export async function runLoad(plan: LoadPlan, workerCount: number, hooks: LoadHooks): Promise<PhaseResult> {
  return phaseResult(plan.label, [await runLoadOnce(plan, workerCount, hooks)]);
}

/** Runs a plan once: starts the workers, shows progress, merges what they measured. */
export async function runLoadOnce(plan: LoadPlan, workerCount: number, hooks: LoadHooks): Promise<LoadRun> {
  assert(plan.connections >= workerCount, "every worker needs at least one connection");
  assert(plan.targets.length > 0, "a load phase needs a target");
  const shares = splitEvenly(plan.connections, workerCount);
  const seconds = new Map<number, SecondCounts>();
  const progress = { completed: 0, errors: 0, measuredMs: 0, histogram: newHistogram() };
  // Without a warm-up, CPU is measured from the start; else from the last warm-up tick.
  let cpuStart: CpuSample | null = plan.warmupMs === 0 ? sampleCpu(hooks) : null;

  const onTick = (tick: TickMessage): void => {
    const histogram = decodeHistogram(tick.histogram);
    if (tick.warmup) {
      if (progress.measuredMs === 0) cpuStart = sampleCpu(hooks);
      hooks.progress(
        formatProgress(plan.label, "warm-up", tick.completed / (tick.intervalMs / 1000), histogram, tick.errors),
      );
      return;
    }
    if (cpuStart === null) cpuStart = sampleCpu(hooks);
    const entry = seconds.get(tick.second) ?? { intervalMs: 0, completed: 0, errors: 0, histogram: newHistogram() };
    entry.intervalMs = Math.max(entry.intervalMs, tick.intervalMs);
    entry.completed += tick.completed;
    entry.errors += tick.errors;
    entry.histogram.add(histogram);
    seconds.set(tick.second, entry);
    progress.completed += tick.completed;
    progress.errors += tick.errors;
    progress.histogram.add(histogram);
    progress.measuredMs = Math.max(progress.measuredMs, (tick.second + 1) * 1000);
    const elapsedS = Math.min(progress.measuredMs, plan.durationMs) / 1000;
    hooks.progress(
      formatProgress(
        plan.label,
        `${elapsedS.toFixed(0)}/${(plan.durationMs / 1000).toFixed(0)}s`,
        progress.completed / elapsedS,
        progress.histogram,
        progress.errors,
      ),
    );
  };

  const dones = await Promise.all(
    shares.map((connections, i) => runWorker({ plan, connections, seed: (plan.seed + i * 7919) >>> 0 }, onTick)),
  );
  const cpuEnd = sampleCpu(hooks);
  return loadRun(plan, dones, seconds, cpuStart ?? cpuEnd, cpuEnd);
}

function runWorker(input: WorkerInput, onTick: (tick: TickMessage) => void): Promise<DoneMessage> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(workerUrl, { workerData: input });
    let done: DoneMessage | null = null;
    worker.on("message", (message: WorkerMessage) => {
      if (message.type === "tick") onTick(message);
      else done = message;
    });
    worker.on("error", reject);
    worker.on("exit", (code) => {
      if (done !== null) resolve(done);
      else reject(new Error(`load worker exited with code ${code} before finishing`));
    });
  });
}

function sampleCpu(hooks: LoadHooks): CpuSample {
  return { generator: process.cpuUsage(), target: hooks.targetCpuSeconds?.() ?? null, atMs: performance.now() };
}

function loadRun(
  plan: LoadPlan,
  dones: readonly DoneMessage[],
  seconds: Map<number, SecondCounts>,
  cpuStart: CpuSample,
  cpuEnd: CpuSample,
): LoadRun {
  const perRequest: LoadRun["perRequest"] = new Map();
  const statuses: Record<string, number> = {};
  const errorSamples: string[] = [];
  for (const done of dones) {
    for (const [name, part] of Object.entries(done.perRequest)) {
      const entry = perRequest.get(name) ?? { histogram: newHistogram(), completed: 0, errors: 0, marked: 0 };
      entry.histogram.add(decodeHistogram(part.histogram));
      entry.completed += part.completed;
      entry.errors += part.errors;
      entry.marked += part.marked;
      perRequest.set(name, entry);
    }
    for (const [status, count] of Object.entries(done.statuses)) statuses[status] = (statuses[status] ?? 0) + count;
    for (const sample of done.errorSamples) if (!errorSamples.includes(sample)) errorSamples.push(sample);
  }
  return {
    plan,
    measuredMs: Math.max(...dones.map((done) => done.measuredMs)),
    perRequest,
    seconds: [...seconds.entries()].sort(([a], [b]) => a - b).map(([, entry]) => entry),
    statuses,
    errorSamples: errorSamples.slice(0, limits.errorSamplesMax),
    wallS: (cpuEnd.atMs - cpuStart.atMs) / 1000,
    generatorCpuS:
      (cpuEnd.generator.user - cpuStart.generator.user + cpuEnd.generator.system - cpuStart.generator.system) / 1e6,
    targetCpuS: cpuEnd.target === null || cpuStart.target === null ? null : cpuEnd.target - cpuStart.target,
  };
}

/** One phase result from one or more runs of the same requests (rounds): counts and histograms add up. */
export function phaseResult(label: string, runs: readonly LoadRun[]): PhaseResult {
  assert(runs.length > 0, "a phase result needs at least one run");
  const measuredS = runs.reduce((sum, run) => sum + run.measuredMs, 0) / 1000;
  const total = newHistogram();
  const perRequest: Record<string, RequestResult> = {};
  const merged = new Map<string, { histogram: Histogram; completed: number; errors: number; marked: number }>();
  const statuses: Record<string, number> = {};
  const errorSamples: string[] = [];
  for (const run of runs) {
    for (const [name, part] of run.perRequest) {
      const entry = merged.get(name) ?? { histogram: newHistogram(), completed: 0, errors: 0, marked: 0 };
      entry.histogram.add(part.histogram);
      total.add(part.histogram);
      entry.completed += part.completed;
      entry.errors += part.errors;
      entry.marked += part.marked;
      merged.set(name, entry);
    }
    for (const [status, count] of Object.entries(run.statuses)) statuses[status] = (statuses[status] ?? 0) + count;
    for (const sample of run.errorSamples)
      if (errorSamples.length < limits.errorSamplesMax && !errorSamples.includes(sample)) errorSamples.push(sample);
  }
  const requests = runs[0]?.plan.requests ?? [];
  let completed = 0,
    errors = 0;
  for (const [name, entry] of merged) {
    const spec = requests.find((request) => request.name === name);
    perRequest[name] = {
      completed: entry.completed,
      errors: entry.errors,
      marked: spec === undefined || spec.okMarker === null ? null : entry.marked,
      rps: round(entry.completed / measuredS),
      latency: summarize(entry.histogram),
    };
    completed += entry.completed;
    errors += entry.errors;
  }
  const timeline = timelineOf(runs);
  const wallS = runs.reduce((sum, run) => sum + run.wallS, 0);
  const generatorCpuS = runs.reduce((sum, run) => sum + run.generatorCpuS, 0);
  const targetCpuS = runs.some((run) => run.targetCpuS === null)
    ? null
    : runs.reduce((sum, run) => sum + (run.targetCpuS ?? 0), 0);
  assert(
    completed === Object.values(perRequest).reduce((sum, request) => sum + request.completed, 0),
    "phase totals add up",
  );
  return {
    label,
    measuredS: round(measuredS),
    completed,
    errors,
    rps: round(completed / measuredS),
    latency: summarize(total),
    perRequest,
    timeline,
    rpsVariationPct: variationPct(timeline.map((point) => point.rps)),
    statuses,
    errorSamples,
    generatorCpuCores: wallS > 0 ? round(generatorCpuS / wallS) : 0,
    targetCpuCores: targetCpuS === null || wallS <= 0 ? null : round(targetCpuS / wallS),
  };
}

/** Per-second points of all runs, one after the other (rounds are laid end to end). */
function timelineOf(runs: readonly LoadRun[]): TimelinePoint[] {
  const points: TimelinePoint[] = [];
  let offsetS = 0;
  for (const run of runs) {
    run.seconds.forEach((entry, second) => {
      points.push({
        atS: round(offsetS + Math.min(second + 1, run.plan.durationMs / 1000)),
        rps: round(entry.completed / (entry.intervalMs / 1000)),
        p99Ms: summarize(entry.histogram).p99Ms,
        errors: entry.errors,
      });
    });
    offsetS += run.plan.durationMs / 1000;
  }
  return points;
}

/** Standard deviation as a percentage of the mean (0 for fewer than two values or a zero mean). */
export function variationPct(values: readonly number[]): number {
  if (values.length < 2) return 0;
  const mean = values.reduce((sum, value) => sum + value, 0) / values.length;
  if (mean === 0) return 0;
  const variance = values.reduce((sum, value) => sum + (value - mean) ** 2, 0) / (values.length - 1);
  return round((Math.sqrt(variance) / mean) * 100);
}

function formatProgress(label: string, when: string, rps: number, histogram: Histogram, errors: number): string {
  const p99Ms = histogram.totalCount === 0 ? 0 : histogram.getValueAtPercentile(99) / 1000;
  return `[${label}] ${when}  rps ${Math.round(rps)}  p99 ${p99Ms.toFixed(2)} ms  errors ${errors}`;
}

function round(value: number): number {
  return Math.round(value * 100) / 100;
}
