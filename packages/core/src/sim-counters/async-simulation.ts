// The `async: true` rate-limit simulation: N nodes, each with the real AsyncLimits, one limit, a
// millisecond clock per node (its own offset), beats every R ms over a network that delays (up to
// several windows), reorders and drops beats and their replies, and traffic in phases of random
// shapes: idle, one hot node that moves, uniform, skewed, and bursts of up to 4 x the limit over
// 0-200 ms on one node or all. Every node takes every other for up (Theorem 6's assumption: the
// peers taken for up are the ones that admit). Checked at the end: no interval of
// `durationMs - clock spread` admits more than limit + asyncOvershootMax(limit, nodes).
import { assert } from "../assert.js";
import { AsyncLimits, type AsyncLimitsMutations, type AsyncReport } from "../placement/async-limits.js";
import { asyncOvershootMax } from "../placement/async-shares.js";
import { SimRandom } from "./prng.js";

export interface AsyncSimOptions {
  seed: number;
  /** Simulated milliseconds. */
  durationMs?: number;
  /** Mutation checks: break the shares on purpose. */
  mutations?: AsyncLimitsMutations;
  /** Every node admits only by the estimate (no shares at all): the mutation the shares exist for. */
  noShares?: boolean;
  trace?: (line: string) => void;
}

export interface AsyncSimStats {
  nodes: number;
  limit: number;
  windowMs: number;
  requests: number;
  admitted: number;
  admittedBeyondFloor: number;
  refusedByShare: number;
  /** The most admitted in one checked interval, and the bound it is checked against. */
  worstWindow: number;
  /** limit + overshootMax. */
  bound: number;
  overshootMax: number;
}

export interface AsyncSimResult {
  ok: boolean;
  failure?: string;
  stats: AsyncSimStats;
}

/** Messages due at a millisecond; past it the run is cut short (a bug in the model). */
const eventsMax = 5_000_000;

type Shape =
  | { k: "idle" }
  | { k: "hot"; node: number; perMs: number }
  | { k: "uniform"; perMs: number }
  | { k: "skewed"; perMs: number[] }
  | { k: "burst"; node: number | "all"; size: number; spreadMs: number };

export function runAsyncSimulation(options: AsyncSimOptions): AsyncSimResult {
  const rnd = new SimRandom(options.seed);
  const totalMs = options.durationMs ?? 4_000;
  const n = 2 + rnd.intBelow(4);
  const limit = 1 + rnd.intBelow(rnd.chance(0.5) ? 40 : 1_000);
  const windowMs = 100 + rnd.intBelow(1_900);
  const widthMs = Math.ceil(windowMs / 10);
  const beatMs = 5 + rnd.intBelow(60);
  // Network: usually quick, sometimes slow links that hold beats for several windows.
  const delayMaxMs = [5, 40, 200, 3 * windowMs][rnd.intBelow(4)]!;
  const slowLink = (a: number, b: number): boolean => (a * 7 + b * 3 + options.seed) % 5 === 0;
  const dropP = rnd.chance(0.5) ? 0 : rnd.nextFloat() * 0.3;
  const offsets = Array.from({ length: n }, () => (rnd.chance(0.5) ? 0 : rnd.intBelow(widthMs)));
  const spreadMs = Math.max(...offsets) - Math.min(...offsets);
  const limiter = { bucketWidthMs: (d: number) => Math.ceil(d / 10) };
  const nodes = Array.from({ length: n }, () => new AsyncLimits(limiter, beatMs, options.mutations));
  const names = Array.from({ length: n }, (_, i) => `n${i}`);
  const peersOf = (i: number) => names.filter((_, j) => j !== i);
  const trace = options.trace;

  const events = new Map<number, Array<() => void>>();
  let eventCount = 0;
  const at = (ms: number, run: () => void): void => {
    assert(++eventCount <= eventsMax, "async simulation: events within eventsMax");
    const list = events.get(ms);
    if (list === undefined) events.set(ms, [run]);
    else list.push(run);
  };
  const delay = (a: number, b: number): number =>
    1 + rnd.intBelow(slowLink(a, b) ? delayMaxMs : Math.min(delayMaxMs, 20));

  const beat = (a: number, t: number): void => {
    const report: AsyncReport = nodes[a]!.report(t + offsets[a]!);
    nodes[a]!.confirmLive(peersOf(a));
    for (let b = 0; b < n; b++) {
      if (b === a || rnd.chance(dropP)) continue;
      const arrive = t + delay(a, b);
      at(arrive, () => {
        nodes[b]!.merge(names[a]!, report.reports, {
          nowMs: report.nowMs,
          unconfirmedSinceMs: report.unconfirmedSinceMs,
        });
        if (rnd.chance(dropP)) return;
        at(arrive + delay(b, a), () => {
          nodes[a]!.confirmedByPeer(names[b]!, report.round);
          nodes[a]!.confirmLive(peersOf(a));
        });
      });
    }
  };

  const pickShape = (): Shape => {
    switch (rnd.intBelow(5)) {
      case 0:
        return { k: "idle" };
      case 1:
        return { k: "hot", node: rnd.intBelow(n), perMs: 0.05 + rnd.nextFloat() * 4 };
      case 2:
        return { k: "uniform", perMs: 0.02 + rnd.nextFloat() * 2 };
      case 3:
        return { k: "skewed", perMs: Array.from({ length: n }, () => (rnd.chance(0.3) ? 0 : rnd.nextFloat() * 3)) };
      default:
        return {
          k: "burst",
          node: rnd.chance(0.5) ? "all" : rnd.intBelow(n),
          size: 1 + rnd.intBelow(4 * limit),
          spreadMs: rnd.intBelow(201),
        };
    }
  };

  const admissions: Array<[number, number]> = []; // [real ms, cost]
  let requests = 0;
  const request = (i: number, t: number): void => {
    requests++;
    const cost = rnd.chance(0.9) ? 1 : 1 + rnd.intBelow(3);
    const outcome = nodes[i]!.admit("id", limit, windowMs, cost, t + offsets[i]!, options.noShares === true ? 1 : n);
    if (outcome.success) admissions.push([t, cost]);
  };
  const arrivals = (perMs: number): number => {
    let k = Math.floor(perMs);
    if (rnd.chance(perMs - k)) k++;
    return k;
  };

  const beatPhase = Array.from({ length: n }, () => rnd.intBelow(beatMs));
  let shape: Shape = pickShape();
  let phaseStartMs = 0;
  let phaseEndMs = 50 + rnd.intBelow(1_000);
  trace?.(
    `nodes ${n} limit ${limit} window ${windowMs} beat ${beatMs} delayMax ${delayMaxMs} drop ${dropP.toFixed(2)} offsets ${offsets}`,
  );
  for (let t = 0; t < totalMs; t++) {
    const due = events.get(t);
    if (due !== undefined) {
      events.delete(t);
      for (const run of due) run();
    }
    for (let a = 0; a < n; a++) if ((t - beatPhase[a]!) % beatMs === 0) beat(a, t);
    if (t >= phaseEndMs) {
      shape = pickShape();
      phaseStartMs = t;
      phaseEndMs = t + 50 + rnd.intBelow(1_000);
      trace?.(`${t} ms: ${JSON.stringify(shape)}`);
    }
    switch (shape.k) {
      case "idle":
        break;
      case "hot":
        for (let k = arrivals(shape.perMs); k > 0; k--) request(shape.node, t);
        break;
      case "uniform":
        for (let i = 0; i < n; i++) for (let k = arrivals(shape.perMs); k > 0; k--) request(i, t);
        break;
      case "skewed":
        for (let i = 0; i < n; i++) for (let k = arrivals(shape.perMs[i]!); k > 0; k--) request(i, t);
        break;
      case "burst": {
        const elapsed = t - phaseStartMs;
        if (elapsed > shape.spreadMs) break;
        // The burst's requests spread evenly over its spread.
        const sent = Math.floor((shape.size * elapsed) / (shape.spreadMs + 1));
        const upTo = Math.floor((shape.size * (elapsed + 1)) / (shape.spreadMs + 1));
        for (let k = sent; k < upTo; k++) request(shape.node === "all" ? k % n : shape.node, t);
        break;
      }
    }
  }

  // The most admitted in any interval (t - L, t] of the real clock, L = window less the clock spread.
  const checkedMs = windowMs - spreadMs;
  let worstWindow = 0;
  let sum = 0;
  let from = 0;
  for (const [t, cost] of admissions) {
    sum += cost;
    while (admissions[from]![0] <= t - checkedMs) sum -= admissions[from++]![1];
    worstWindow = Math.max(worstWindow, sum);
  }
  const overshootMax = asyncOvershootMax(limit, n);
  const bound = limit + overshootMax;
  const stats: AsyncSimStats = {
    nodes: n,
    limit,
    windowMs,
    requests,
    admitted: admissions.reduce((s, [, c]) => s + c, 0),
    admittedBeyondFloor: nodes.reduce((s, node) => s + node.admittedBeyondFloor, 0),
    refusedByShare: nodes.reduce((s, node) => s + node.refusedUnconfirmed, 0),
    worstWindow,
    bound,
    overshootMax,
  };
  if (worstWindow > bound)
    return {
      ok: false,
      failure: `${worstWindow} admitted within ${checkedMs} ms, bound ${bound} (limit ${limit}, ${n} nodes)`,
      stats,
    };
  return { ok: true, stats };
}
