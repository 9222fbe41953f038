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
import type { DoneMessage, WorkerInput } from "./messages.js";
import { compileTemplate, splitEvenly, type BodyBuilder, type LoadPlan, type RequestSpec } from "./plan.js";
import { Tally } from "./tally.js";
import { IntervalCounts, tickSchedule } from "./ticks.js";

interface SpecState {
  spec: RequestSpec;
  build: BodyBuilder;
  sample: IndexSampler;
  histogram: Histogram;
  completed: number;
  errors: number;
  marked: number;
}

/** The phase's clock: measuring is [measureStartMs, endMs) in performance.now() time. */
interface Window {
  measureStartMs: number;
  endMs: number;
}

/** undici's classic dispatch handler: lower overhead than request() (no body stream per request). */
interface ClassicHandler {
  onConnect(abort: (err?: Error) => void): void;
  onHeaders(statusCode: number): boolean;
  onData(chunk: Buffer): boolean;
  onComplete(): void;
  onError(error: Error): void;
}

const port = parentPort ?? failOutsideWorker();

function failOutsideWorker(): never {
  throw new Error("load worker must run in a worker thread");
}

run(workerData as WorkerInput).then(
  (done) => port.postMessage(done),
  (error: unknown) => {
    throw error;
  },
);

async function run({ plan, connections, seed }: WorkerInput): Promise<DoneMessage> {
  const random = seededRandom(seed);
  const states = plan.requests.map((spec): SpecState => ({
    spec,
    build: compileTemplate(spec.bodyTemplate),
    sample: indexSampler(spec.pool.length, spec.distribution, random, spec.zipfExponent),
    histogram: newHistogram(),
    completed: 0,
    errors: 0,
    marked: 0,
  }));
  const pools = openPools(plan, connections);
  const startMs = performance.now();
  const window: Window = { measureStartMs: startMs + plan.warmupMs, endMs: startMs + plan.warmupMs + plan.durationMs };
  const interval = new IntervalCounts(startMs);
  const tally = new Tally();
  const schedule = tickSchedule(plan.warmupMs, plan.durationMs);
  const timers = schedule.map(({ atMs, warmup }) =>
    setTimeout(
      () => port.postMessage(interval.take(warmup, performance.now())),
      Math.max(0, startMs + atMs - performance.now()),
    ),
  );

  const next = requestSource(states, random);
  await Promise.all(
    Array.from({ length: connections }, (_, i) =>
      closedLoop(pools[i % pools.length] as Pool, next, window, interval, tally),
    ),
  );
  const measuredMs = Math.min(performance.now(), window.endMs) - window.measureStartMs;
  for (const timer of timers) clearTimeout(timer);
  // Timers due at the very end may not have run yet: send the missing last interval(s) now.
  const measuredTicks = schedule.filter((tick) => !tick.warmup).length;
  while (interval.measuredTaken < measuredTicks) port.postMessage(interval.take(false, performance.now()));
  await Promise.all(pools.map((pool) => pool.close()));
  return doneMessage(states, measuredMs, tally);
}

function openPools(plan: LoadPlan, connections: number): Pool[] {
  const perTarget = splitEvenly(connections, plan.targets.length);
  return plan.targets.map(
    (target, i) =>
      new Pool(target, {
        connections: Math.max(1, perTarget[i] as number),
        pipelining: 1,
        keepAliveTimeout: 60_000,
        keepAliveMaxTimeout: 600_000,
        headersTimeout: limits.requestTimeoutMs,
        bodyTimeout: limits.requestTimeoutMs,
      }),
  );
}

interface NextRequest {
  state: SpecState;
  body: string | null;
}

/** Draws the next request: its kind by weight, its pool item by the kind's distribution. */
function requestSource(states: readonly SpecState[], random: Random): () => NextRequest {
  const choose = weightedChooser(states, random);
  let seq = 0;
  return () => {
    const state = choose();
    const spec = state.spec;
    const body = spec.method === "GET" ? null : state.build(spec.pool[state.sample()] as string, seq++);
    return { state, body };
  };
}

/** One connection's loop: send, wait for the whole answer, record, repeat until the window ends. */
function closedLoop(
  pool: Pool,
  next: () => NextRequest,
  window: Window,
  interval: IntervalCounts,
  tally: Tally,
): Promise<void> {
  return new Promise((resolve) => {
    const issue = (): void => {
      const sentMs = performance.now();
      if (sentMs >= window.endMs) {
        resolve();
        return;
      }
      const { state, body } = next();
      const spec = state.spec;
      let status = 0;
      let marked = spec.okMarker === null;
      const finish = (error: Error | null): void => {
        const doneMs = performance.now();
        const failed = error !== null || status < 200 || status >= 300;
        if (error !== null) tally.error(error.message);
        else {
          tally.status(status);
          if (failed) tally.error(`HTTP ${status} from ${spec.name}`);
        }
        const measured = sentMs >= window.measureStartMs && doneMs <= window.endMs;
        const latencyUs = error === null ? (doneMs - sentMs) * 1000 : null;
        // Warm-up answers go to the interval counts only (for the progress line).
        if (measured || doneMs < window.measureStartMs) interval.record(latencyUs, failed);
        if (measured) {
          if (latencyUs !== null) recordUs(state.histogram, latencyUs);
          state.completed++;
          if (failed) state.errors++;
          else if (marked && spec.okMarker !== null) state.marked++;
        }
        // After a transport error, pause briefly instead of spinning against a dead target.
        if (error !== null) setTimeout(issue, 10);
        else issue();
      };
      const handler: ClassicHandler = {
        onConnect: () => {},
        onHeaders: (statusCode) => {
          status = statusCode;
          return true;
        },
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
}

function doneMessage(states: readonly SpecState[], measuredMs: number, tally: Tally): DoneMessage {
  const perRequest: DoneMessage["perRequest"] = {};
  let completed = 0,
    errors = 0,
    marked = 0;
  for (const state of states) {
    if (perRequest[state.spec.name] !== undefined)
      throw new Error(`request name ${state.spec.name} used twice in one plan`);
    perRequest[state.spec.name] = {
      histogram: encodeHistogram(state.histogram),
      completed: state.completed,
      errors: state.errors,
      marked: state.marked,
    };
    completed += state.completed;
    errors += state.errors;
    marked += state.marked;
  }
  return {
    type: "done",
    measuredMs,
    completed,
    errors,
    marked,
    perRequest,
    statuses: tally.statuses,
    errorSamples: tally.errorSamples,
  };
}

function weightedChooser(states: readonly SpecState[], random: Random): () => SpecState {
  if (states.length === 0) throw new Error("a load plan needs at least one request kind");
  if (states.length === 1) {
    const only = states[0] as SpecState;
    return () => only;
  }
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
