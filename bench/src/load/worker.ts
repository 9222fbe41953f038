// Load-generator worker thread: closed-loop HTTP/1.1 keep-alive load with undici. Each of its
// connections keeps exactly one request in flight; a new request starts when the previous answer
// has been read completely. Runs in its own thread so the main thread can report progress.
import { parentPort, workerData } from "node:worker_threads";
import { performance } from "node:perf_hooks";
import { Pool } from "undici";
import { encodeHistogram, newHistogram, recordUs, type Histogram } from "../hdr.js";
import { limits } from "../limits.js";
import { seededRandom, type Random } from "../prng.js";
import { indexSampler, type IndexSampler } from "../zipf.js";
import type { DoneMessage, TickMessage, WorkerInput } from "./messages.js";
import { compileTemplate, splitEvenly, type BodyBuilder, type RequestSpec } from "./plan.js";

interface SpecState {
  spec: RequestSpec;
  build: BodyBuilder;
  sample: IndexSampler;
  histogram: Histogram;
  completed: number;
  errors: number;
  marked: number;
}

/** undici's classic dispatch handler: lower overhead than request() (no body stream per request). */
interface ClassicHandler {
  onConnect(abort: (err?: Error) => void): void;
  onHeaders(statusCode: number): boolean;
  onData(chunk: Buffer): boolean;
  onComplete(): void;
  onError(error: Error): void;
}

const input = workerData as WorkerInput;
const port = parentPort ?? failOutsideWorker();

function failOutsideWorker(): never {
  throw new Error("load worker must run in a worker thread");
}

run(input).then(
  (done) => port.postMessage(done),
  (error: unknown) => { throw error; },
);

async function run({ plan, connections, seed }: WorkerInput): Promise<DoneMessage> {
  const random = seededRandom(seed);
  const states = plan.requests.map((spec): SpecState => ({
    spec,
    build: compileTemplate(spec.bodyTemplate),
    sample: indexSampler(spec.pool.length, spec.distribution, random, spec.zipfExponent),
    histogram: newHistogram(),
    completed: 0, errors: 0, marked: 0,
  }));
  const chooseState = weightedChooser(states, random);
  const perTarget = splitEvenly(connections, plan.targets.length);
  const pools = plan.targets.map((target, i) => new Pool(target, {
    connections: Math.max(1, perTarget[i] as number),
    pipelining: 1,
    keepAliveTimeout: 60_000,
    keepAliveMaxTimeout: 600_000,
    headersTimeout: limits.requestTimeoutMs,
    bodyTimeout: limits.requestTimeoutMs,
  }));

  const statuses: Record<string, number> = {};
  const errorSamples: string[] = [];
  let interval = newHistogram();
  let intervalCompleted = 0, intervalErrors = 0;
  let seq = 0;
  const startMs = performance.now();
  const measureStartMs = startMs + plan.warmupMs;
  const endMs = measureStartMs + plan.durationMs;
  let lastTickMs = startMs;
  let second = 0;
  let measuredTicksSent = 0;

  const tick = (warmup: boolean): void => {
    const nowMs = performance.now();
    const message: TickMessage = {
      type: "tick", warmup, second: warmup ? -1 : second, intervalMs: nowMs - lastTickMs,
      completed: intervalCompleted, errors: intervalErrors, histogram: encodeHistogram(interval),
    };
    port.postMessage(message);
    if (!warmup) second++;
    if (!warmup) measuredTicksSent++;
    lastTickMs = nowMs;
    interval = newHistogram();
    intervalCompleted = 0; intervalErrors = 0;
  };
  // Ticks every second of warm-up, then every second of measuring, aligned to the measure start.
  const timers: NodeJS.Timeout[] = [];
  const warmupTicks = Math.floor(plan.warmupMs / 1000);
  const schedule = (atMs: number, warmup: boolean): void => {
    timers.push(setTimeout(() => tick(warmup), Math.max(0, atMs - performance.now())));
  };
  for (let i = 1; i <= warmupTicks; i++) schedule(startMs + i * 1000, true);
  // The last warm-up interval ends exactly at the measure start, even for a fractional warm-up.
  if (plan.warmupMs % 1000 !== 0) schedule(measureStartMs, true);
  const measuredTicks = Math.ceil(plan.durationMs / 1000);
  for (let i = 1; i <= measuredTicks; i++) schedule(Math.min(endMs, measureStartMs + i * 1000), false);

  const noteError = (message: string): void => {
    if (errorSamples.length < limits.errorSamplesMax && !errorSamples.includes(message)) errorSamples.push(message);
  };
  const noteStatus = (status: number): void => {
    const key = String(status);
    const count = statuses[key];
    if (count !== undefined) statuses[key] = count + 1;
    else if (Object.keys(statuses).length < limits.statusesMax) statuses[key] = 1;
  };

  const slot = (pool: Pool): Promise<void> => new Promise((resolve) => {
    const issue = (): void => {
      const sentMs = performance.now();
      if (sentMs >= endMs) { resolve(); return; }
      const state = chooseState();
      const spec = state.spec;
      const body = spec.method === "GET" ? null : state.build(spec.pool[state.sample()] as string, seq++);
      let status = 0;
      let marked = spec.okMarker === null;
      const finish = (error: Error | null): void => {
        const doneMs = performance.now();
        const measured = sentMs >= measureStartMs && doneMs <= endMs;
        const failed = error !== null || status < 200 || status >= 300;
        if (error !== null) noteError(error.message);
        else { noteStatus(status); if (failed) noteError(`HTTP ${status} from ${spec.name}`); }
        if (measured || doneMs < measureStartMs) {
          // Warm-up answers go to the interval histogram only (for the progress line).
          const latencyUs = (doneMs - sentMs) * 1000;
          if (error === null) recordUs(interval, latencyUs);
          intervalCompleted++;
          if (failed) intervalErrors++;
          if (measured) {
            if (error === null) recordUs(state.histogram, latencyUs);
            state.completed++;
            if (failed) state.errors++;
            else if (marked && spec.okMarker !== null) state.marked++;
          }
        }
        // After a transport error, pause briefly instead of spinning against a dead target.
        if (error !== null) setTimeout(issue, 10); else issue();
      };
      const handler: ClassicHandler = {
        onConnect: () => {},
        onHeaders: (statusCode) => { status = statusCode; return true; },
        onData: (chunk) => {
          if (!marked && spec.okMarker !== null && chunk.includes(spec.okMarker)) marked = true;
          return true;
        },
        onComplete: () => finish(null),
        onError: (error) => finish(error),
      };
      pool.dispatch(
        { path: spec.path, method: spec.method, headers: spec.headers as Record<string, string>, body },
        handler as unknown as Parameters<Pool["dispatch"]>[1],
      );
    };
    issue();
  });

  const slots: Array<Promise<void>> = [];
  for (let i = 0; i < connections; i++) slots.push(slot(pools[i % pools.length] as Pool));
  await Promise.all(slots);
  const measuredMs = Math.min(performance.now(), endMs) - measureStartMs;
  for (const timer of timers) clearTimeout(timer);
  // Timers due at the very end may not have run yet: send the missing last interval(s) now.
  while (measuredTicksSent < measuredTicks) tick(false);
  await Promise.all(pools.map((pool) => pool.close()));

  const perRequest: DoneMessage["perRequest"] = {};
  let completed = 0, errors = 0, marked = 0;
  for (const state of states) {
    const previous = perRequest[state.spec.name];
    if (previous !== undefined) throw new Error(`request name ${state.spec.name} used twice in one plan`);
    perRequest[state.spec.name] = {
      histogram: encodeHistogram(state.histogram), completed: state.completed, errors: state.errors, marked: state.marked,
    };
    completed += state.completed; errors += state.errors; marked += state.marked;
  }
  return { type: "done", measuredMs, completed, errors, marked, perRequest, statuses, errorSamples };
}

function weightedChooser(states: readonly SpecState[], random: Random): () => SpecState {
  if (states.length === 0) throw new Error("a load plan needs at least one request kind");
  if (states.length === 1) { const only = states[0] as SpecState; return () => only; }
  const cumulative: number[] = [];
  let total = 0;
  for (const state of states) {
    if (!(state.spec.weight > 0)) throw new Error(`weight of ${state.spec.name} must be positive`);
    total += state.spec.weight;
    cumulative.push(total);
  }
  return () => {
    const u = random() * total;
    for (let i = 0; i < cumulative.length; i++) if (u < (cumulative[i] as number)) return states[i] as SpecState;
    return states[states.length - 1] as SpecState;
  };
}
