// Deterministic simulation of `async: false` rate limits owned by one node (docs/counters.md):
// N nodes with real SlidingWindowLimiters; each limiter key is served by its owner (rendezvous
// rank 0), which answers an admission only once its successor (rank 1) acknowledged a reservation
// covering it, in the current generation. The successor takes over when it loses the owner (or
// on a false suspicion), and hands back when the owner asks. Crashes lose the owner's memory (its
// limiter, acknowledgements, waiting answers); the successor's reservations and served counts are
// durable. The network drops, delays and partitions. Checked: no window of durationMs ever holds
// more than `limit` answered admissions of a key (at the instants the limiters judged them), and
// after healing every key is served again.
//
// With `clockOffsets`, every node's clock reads real time plus its own offset, drawn below the
// smallest bucket width (the clocks the protocol assumes: any two apart by less than a bucket),
// and now and then steps to a new offset in that range (forward or back). Counts moved between
// nodes (a takeover, a hand-back) are restored one bucket later, never after the restorer's
// current bucket (movedBuckets, added to what the bucket holds). Windows are then checked in real
// time over durationMs less the most any clock moved forward, since a clock stepped forward by s
// ages its buckets s early.
//
// With `removals`, a successor serving after a takeover may leave a key's ranking for good (the
// node removed from the voters and stopped, its counts gone with it): the key's third node becomes
// its successor. The serving successor keeps a copy of every admission, and of the counts it
// restored at the takeover, at the third node before it answers (the gateway's copy-side.ts); the
// new successor hands those back to the owner, and serves from them if it takes over in turn. A
// key left with two nodes has no third: its successor no longer takes over (503 instead).
import {
  OwnerReservations,
  SuccessorReservations,
  type HandBack,
  type ReservationAsk,
  type ReservationBucket,
} from "../placement/reservations.js";
import { rankNodes } from "../placement/rendezvous.js";
import { movedBuckets, SlidingWindowLimiter } from "../ratelimit/sliding-window.js";
import { SimRandom } from "./prng.js";

export interface RateLimitSimOptions {
  seed: number;
  steps: number;
  trace?: (line: string) => void;
  /** Per-node clock offsets below one bucket width, with steps (default false: one clock). */
  clockOffsets?: boolean;
  /** Mutation check only: restore moved counts where they were filed, keeping the higher count (as before movedBuckets). */
  unmovedRestores?: boolean;
  /** A serving successor may leave a key's ranking for good (see the header). */
  removals?: boolean;
  /** Mutation check only (with `removals`): a serving successor keeps no copy at the third node. */
  noCopies?: boolean;
}

export interface RateLimitSimStats {
  nodes: number;
  keys: number;
  requests: number;
  admitted: number;
  refusedUnavailable: number;
  takeovers: number;
  handBacks: number;
  crashes: number;
  partitions: number;
  /** Serving successors that left a key's ranking for good (`removals`). */
  removals: number;
}

export interface RateLimitSimResult {
  seed: number;
  ok: boolean;
  failure?: string;
  stats: RateLimitSimStats;
}

const stepMs = 10;
/** Steps after healing in which every key must admit again. */
const recoverySteps = 400;

type Message =
  | { type: "reserve"; key: string; ask: ReservationAsk }
  | { type: "ack"; key: string; ask: ReservationAsk; ack: ReservationAsk | null }
  | { type: "handBackRequest"; key: string }
  | { type: "handBack"; key: string; handBack: HandBack };

interface Envelope {
  from: string;
  to: string;
  deliverAt: number;
  message: Message;
}

interface KeySpec {
  key: string;
  limit: number;
  durationMs: number;
  owner: string;
  successor: string;
  /** Rank 2, which keeps copies of a serving successor's admissions; null once the key has two nodes. */
  third: string | null;
}

interface OwnerSide {
  reservations: OwnerReservations | null; // null: must get a hand-back before serving
  waiting: { bucketStartMs: number; count: number; decidedAtMs: number; expiresAtStep: number }[];
  lastHandBackRequestStep: number;
}

interface SuccessorSide {
  // Durable (survive a crash):
  reservations: SuccessorReservations;
  serving: boolean;
  served: Map<number, ReservationBucket>;
  /** Copies kept here of a serving successor's admissions (per bucket start, the highest count). */
  copies: Map<number, ReservationBucket>;
  // Memory:
  lostOwnerSteps: number;
}

interface NodeState {
  id: string;
  up: boolean;
  limiter: SlidingWindowLimiter;
  owned: Map<string, OwnerSide>;
  succeeding: Map<string, SuccessorSide>;
}

class Failure extends Error {}

export function runRateLimitSimulation(options: RateLimitSimOptions): RateLimitSimResult {
  const random = new SimRandom(options.seed);
  const nodeCount = 3 + random.intBelow(3);
  const ids = Array.from({ length: nodeCount }, (_, i) => `n${i + 1}`);
  const keys: KeySpec[] = Array.from({ length: 1 + random.intBelow(3) }, (_, i) => {
    const key = `ns:id${i}`;
    const [owner, successor, third] = rankNodes(key, ids);
    return {
      key,
      limit: 1 + random.intBelow(20),
      durationMs: 100 + random.intBelow(8) * 100,
      owner: owner ?? "n1",
      successor: successor ?? "n2",
      third: third ?? null,
    };
  });
  let dropRate = random.nextFloat() * 0.2;
  const delayMax = 1 + random.intBelow(4);
  const crashRate = random.nextFloat() * 0.01;
  const restartRate = 0.02 + random.nextFloat() * 0.1;
  const partitionRate = random.nextFloat() * 0.02;
  const healRate = 0.02 + random.nextFloat() * 0.05;
  const suspicionRate = random.nextFloat() * 0.005; // false suspicion: a takeover with the owner fine
  const takeoverAfterSteps = 3 + random.intBelow(10);
  const answerTimeoutSteps = 5 + random.intBelow(20);
  const requestsPerStep = 1 + random.intBelow(4);
  const trace = options.trace;
  const stats: RateLimitSimStats = {
    nodes: nodeCount,
    keys: keys.length,
    requests: 0,
    admitted: 0,
    refusedUnavailable: 0,
    takeovers: 0,
    handBacks: 0,
    crashes: 0,
    partitions: 0,
    removals: 0,
  };

  const freshNode = (id: string, durable: Map<string, SuccessorSide> | null): NodeState => {
    const node: NodeState = {
      id,
      up: true,
      limiter: new SlidingWindowLimiter(),
      owned: new Map(),
      succeeding: durable ?? new Map(),
    };
    for (const spec of keys) {
      if (spec.owner === id)
        node.owned.set(spec.key, { reservations: null, waiting: [], lastHandBackRequestStep: -1_000 });
      if (spec.successor === id && durable === null) {
        node.succeeding.set(spec.key, {
          reservations: new SuccessorReservations(),
          serving: false,
          served: new Map(),
          copies: new Map(),
          lostOwnerSteps: 0,
        });
      }
    }
    return node;
  };
  const nodes = new Map(ids.map((id) => [id, freshNode(id, null)]));
  const node = (id: string): NodeState => {
    const n = nodes.get(id);
    if (n === undefined) throw new Error(`no node ${id}`);
    return n;
  };
  let groups = new Map<string, number>();
  const connected = (a: string, b: string): boolean => (groups.get(a) ?? 0) === (groups.get(b) ?? 0);
  let network: Envelope[] = [];
  let step = 0;
  const nowMs = (): number => 1_700_000_000_000 + step * stepMs;
  // Clock offsets come from their own generator, so the seeds without them replay as before.
  const clockRandom = new SimRandom(options.seed ^ 0x5eed_c10c);
  // Removals on a stream of their own too; copies kept per node and key, durable.
  const removalRandom = new SimRandom(options.seed ^ 0x2e30_7a15);
  const removals = options.removals === true;
  const copying = removals && options.noCopies !== true;
  const kept = new Map<string, Map<string, Map<number, ReservationBucket>>>();
  const keptAt = (id: string, key: string): Map<number, ReservationBucket> => {
    let byKey = kept.get(id);
    if (byKey === undefined) {
      byKey = new Map();
      kept.set(id, byKey);
    }
    let buckets = byKey.get(key);
    if (buckets === undefined) {
      buckets = new Map();
      byKey.set(key, buckets);
    }
    return buckets;
  };
  /**
   * A serving successor's copy of its counts of `s` at the key's third node, before it answers:
   * false when the third node cannot take it (down or cut off; the admission is not answered).
   */
  const copyToThird = (n: NodeState, s: KeySpec, buckets: readonly ReservationBucket[]): boolean => {
    if (!copying) return true;
    const third = s.third;
    if (third === null || !node(third).up || !connected(n.id, third)) return false;
    const at = keptAt(third, s.key);
    for (const b of buckets)
      at.set(b.bucketStartMs, { ...b, count: Math.max(at.get(b.bucketStartMs)?.count ?? 0, b.count) });
    return true;
  };
  const countsOf = (n: NodeState, s: KeySpec): ReservationBucket[] =>
    n.limiter
      .snapshot(nodeNowMs(n))
      .filter((b) => b.key === s.key)
      .map((b) => ({ key: b.key, limit: b.limit, bucketStartMs: b.bucketStartMs, count: b.count }));
  const widthMinMs = Math.min(...keys.map((k) => Math.ceil(k.durationMs / 10)));
  const offsetMaxMs = options.clockOffsets === true ? widthMinMs - 1 : 0;
  const offsets = new Map(ids.map((id) => [id, offsetMaxMs === 0 ? 0 : clockRandom.intBelow(offsetMaxMs + 1)]));
  /**
   * How far any node's clock has moved forward from an earlier reading of its offset (the sum of
   * its steps between two instants, at most its highest offset less its lowest so far): its
   * buckets aged that much early, which the window check allows for.
   */
  let stepForwardMaxMs = 0;
  const offsetLowMs = new Map(offsets);
  const nodeNowMs = (n: NodeState): number => nowMs() + (offsets.get(n.id) ?? 0);
  const clockSteps = (): void => {
    if (offsetMaxMs === 0 || !clockRandom.chance(0.01)) return;
    const id = ids[clockRandom.intBelow(ids.length)]!;
    const next = clockRandom.intBelow(offsetMaxMs + 1);
    offsetLowMs.set(id, Math.min(offsetLowMs.get(id) ?? next, next));
    stepForwardMaxMs = Math.max(stepForwardMaxMs, next - (offsetLowMs.get(id) ?? next));
    offsets.set(id, next);
    trace?.(`step ${step}: clock of ${id} steps to offset ${next} ms`);
  };
  const admittedAt = new Map<string, number[]>(keys.map((k) => [k.key, []]));
  const spec = (key: string): KeySpec => keys.find((k) => k.key === key) as KeySpec;
  const check = (s: KeySpec) => ({ key: s.key, limit: s.limit, durationMs: s.durationMs, cost: 1 });

  const send = (from: string, to: string, message: Message): void => {
    if (random.chance(dropRate)) return;
    network.push({ from, to, message, deliverAt: step + 1 + random.intBelow(delayMax) });
  };
  const admit = (key: string, atMs: number, by = ""): void => {
    admittedAt.get(key)?.push(atMs);
    stats.admitted++;
    trace?.(`step ${step}: ${by} admits ${key} (decided at real ${atMs - 1_700_000_000_000} ms)`);
  };

  /** Counts judged on another node's clock, restored here (one bucket later, capped at now). */
  const restore = (n: NodeState, s: KeySpec, buckets: readonly ReservationBucket[]): void => {
    const widthMs = n.limiter.bucketWidthMs(s.durationMs);
    if (options.unmovedRestores === true) {
      for (const b of buckets)
        n.limiter.restoreBucket({
          key: b.key,
          limit: s.limit,
          durationMs: s.durationMs,
          bucketStartMs: b.bucketStartMs,
          count: b.count,
        });
      return;
    }
    for (const b of movedBuckets(buckets, () => widthMs, nodeNowMs(n)))
      n.limiter.restoreMovedBucket({
        key: b.key,
        limit: s.limit,
        durationMs: s.durationMs,
        bucketStartMs: b.bucketStartMs,
        count: b.count,
      });
  };

  const onMessage = (envelope: Envelope): void => {
    const to = node(envelope.to);
    const m = envelope.message;
    const s = spec(m.key);
    switch (m.type) {
      case "reserve": {
        const side = to.succeeding.get(m.key);
        if (side === undefined) return;
        send(to.id, envelope.from, { type: "ack", key: m.key, ask: m.ask, ack: side.reservations.accept(m.ask) });
        return;
      }
      case "ack": {
        const side = to.owned.get(m.key);
        const reservations = side?.reservations;
        if (
          side === undefined ||
          reservations === null ||
          reservations === undefined ||
          reservations.generation !== m.ask.generation
        )
          return;
        if (m.ack !== null) reservations.onAck(m.ack);
        else {
          // Refused: fenced or another generation. This owner was taken over: stop and ask for a hand-back.
          side.reservations = null;
          side.waiting = [];
          return;
        }
        side.waiting = side.waiting.filter((w) => {
          if (!reservations.covered(m.key, w.bucketStartMs, w.count)) return true;
          admit(m.key, w.decidedAtMs, to.id);
          return false;
        });
        return;
      }
      case "handBackRequest": {
        const side = to.succeeding.get(m.key);
        if (side === undefined) return;
        const wasServing = side.serving;
        side.serving = false; // stop serving before handing back
        // Serving, its limiter holds every count (the restored reservations and its admissions).
        const served = wasServing
          ? to.limiter
              .snapshot(nodeNowMs(to))
              .filter((b) => b.key === m.key)
              .map((b) => ({ key: b.key, limit: b.limit, bucketStartMs: b.bucketStartMs, count: b.count }))
          : [...side.served.values(), ...side.copies.values()];
        const handBack = side.reservations.handBack(served, wasServing);
        side.served.clear();
        stats.handBacks++;
        trace?.(`step ${step}: ${to.id} hands ${m.key} back (generation ${handBack.generation})`);
        send(to.id, envelope.from, { type: "handBack", key: m.key, handBack });
        return;
      }
      case "handBack": {
        const side = to.owned.get(m.key);
        if (side === undefined) return;
        if (side.reservations !== null && side.reservations.generation >= m.handBack.generation) return;
        restore(to, s, m.handBack.buckets);
        side.reservations = new OwnerReservations(m.handBack.generation);
        side.waiting = [];
        return;
      }
      default: {
        const never: never = m;
        throw new Error(`unknown message ${JSON.stringify(never)}`);
      }
    }
  };

  const serveAt = (n: NodeState, s: KeySpec): void => {
    const side = n.owned.get(s.key);
    if (side?.reservations !== null && side?.reservations !== undefined) {
      const reservations = side.reservations;
      const result = n.limiter.limit([check(s)], nodeNowMs(n));
      const touched = result.touched[0];
      if (!result.success || touched === undefined) return;
      if (reservations.covered(s.key, touched.bucketStartMs, touched.count)) admit(s.key, nowMs(), n.id);
      else {
        side.waiting.push({
          bucketStartMs: touched.bucketStartMs,
          count: touched.count,
          decidedAtMs: nowMs(),
          expiresAtStep: step + answerTimeoutSteps,
        });
        const ask = reservations.request({
          key: s.key,
          limit: s.limit,
          bucketStartMs: touched.bucketStartMs,
          count: touched.count,
        });
        if (ask !== null) send(n.id, s.successor, { type: "reserve", key: s.key, ask });
      }
      return;
    }
    const succ = n.succeeding.get(s.key);
    if (succ?.serving === true) {
      const result = n.limiter.limit([check(s)], nodeNowMs(n));
      const touched = result.touched[0];
      if (!result.success || touched === undefined) return;
      const bucket = { key: s.key, limit: s.limit, bucketStartMs: touched.bucketStartMs, count: touched.count };
      succ.served.set(touched.bucketStartMs, bucket); // durable before the answer
      if (!copyToThird(n, s, [bucket])) return; // no copy: not answered (the count stays)
      admit(s.key, nowMs(), n.id);
    }
  };

  const clientRequest = (): void => {
    const up = ids.filter((id) => node(id).up);
    const at = up[random.intBelow(Math.max(1, up.length))];
    const s = keys[random.intBelow(keys.length)];
    if (at === undefined || s === undefined) return;
    stats.requests++;
    const ownerNode = node(s.owner);
    const succNode = node(s.successor);
    if (ownerNode.up && connected(at, s.owner) && ownerNode.owned.get(s.key)?.reservations != null)
      serveAt(ownerNode, s);
    else if (succNode.up && connected(at, s.successor) && succNode.succeeding.get(s.key)?.serving === true)
      serveAt(succNode, s);
    else stats.refusedUnavailable++;
  };

  const timers = (): void => {
    for (const s of keys) {
      const o = node(s.owner);
      const side = o.owned.get(s.key);
      if (o.up && side !== undefined) {
        side.waiting = side.waiting.filter((w) => w.expiresAtStep > step); // unanswered: the client got an error
        if (side.reservations === null && step - side.lastHandBackRequestStep >= 5) {
          side.lastHandBackRequestStep = step;
          send(o.id, s.successor, { type: "handBackRequest", key: s.key });
        }
      }
      const n = node(s.successor);
      const succ = n.succeeding.get(s.key);
      if (!n.up || succ === undefined || succ.serving) continue;
      const lost = !o.up || !connected(o.id, n.id);
      succ.lostOwnerSteps = lost ? succ.lostOwnerSteps + 1 : 0;
      if (succ.lostOwnerSteps >= takeoverAfterSteps || random.chance(suspicionRate)) {
        // With removals a successor takes over only with a third node to keep its copies, reachable.
        if (removals && (s.third === null || (copying && (!node(s.third).up || !connected(n.id, s.third))))) continue;
        succ.serving = true;
        succ.lostOwnerSteps = 0;
        restore(n, s, [...succ.reservations.takeOver(), ...succ.copies.values()]);
        copyToThird(n, s, countsOf(n, s));
        stats.takeovers++;
        trace?.(`step ${step}: ${n.id} takes ${s.key} over from ${o.id}`);
      }
    }
  };

  const faults = (): void => {
    for (const n of nodes.values()) {
      if (n.up && random.chance(crashRate)) {
        n.up = false;
        stats.crashes++;
        trace?.(`step ${step}: crash ${n.id}`);
      } else if (!n.up && random.chance(restartRate)) {
        const restarted = freshNode(n.id, n.succeeding); // memory lost; successor state durable
        for (const [key, succ] of restarted.succeeding) {
          succ.lostOwnerSteps = 0;
          if (succ.serving) restore(restarted, spec(key), [...succ.reservations.takeOver(), ...succ.served.values()]);
        }
        nodes.set(n.id, restarted);
        trace?.(`step ${step}: restart ${n.id}`);
      }
    }
    if (removals) {
      for (const s of keys) {
        const succ = node(s.successor).succeeding.get(s.key);
        if (s.third === null || succ?.serving !== true || !removalRandom.chance(0.02)) continue;
        // The serving successor leaves the key's ranking for good: the third node succeeds the
        // owner, holding the copies; the owner's link starts over (a voter change), and it is
        // handed back by the new successor.
        const gone = s.successor;
        const next = s.third;
        node(gone).succeeding.delete(s.key);
        s.successor = next;
        s.third = null;
        node(next).succeeding.set(s.key, {
          reservations: new SuccessorReservations(),
          serving: false,
          served: new Map(),
          copies: new Map(keptAt(next, s.key)),
          lostOwnerSteps: 0,
        });
        const owned = node(s.owner).owned.get(s.key);
        if (owned !== undefined) {
          owned.reservations = null;
          owned.waiting = [];
        }
        stats.removals++;
        trace?.(`step ${step}: ${gone}, serving ${s.key}, leaves its ranking for good; ${next} succeeds ${s.owner}`);
      }
    }
    if (random.chance(partitionRate)) {
      groups = new Map(ids.map((id) => [id, random.intBelow(2)]));
      stats.partitions++;
    } else if (groups.size > 0 && random.chance(healRate)) groups = new Map();
  };

  const deliver = (): void => {
    const due = network.filter((e) => e.deliverAt <= step);
    network = network.filter((e) => e.deliverAt > step);
    for (const e of due) if (node(e.to).up && node(e.from).up && connected(e.from, e.to)) onMessage(e);
  };

  const checkWindows = (): void => {
    for (const s of keys) {
      const times = [...(admittedAt.get(s.key) ?? [])].sort((a, b) => a - b);
      // Real time; a clock stepped forward ages its buckets that much early.
      const windowMs = s.durationMs - stepForwardMaxMs;
      for (let i = 0, j = 0; i < times.length; i++) {
        while ((times[j] ?? 0) <= (times[i] ?? 0) - windowMs) j++;
        if (i - j + 1 > s.limit)
          throw new Failure(`${s.key}: ${i - j + 1} admissions within ${s.durationMs} ms, limit ${s.limit}`);
      }
    }
  };

  try {
    for (; step < options.steps; step++) {
      faults();
      clockSteps();
      deliver();
      timers();
      for (let i = 0; i < requestsPerStep; i++) clientRequest();
      if (step % 50 === 0) checkWindows();
    }
    checkWindows();
    // Healing: everyone up and connected, no drops; every key must admit again.
    groups = new Map();
    dropRate = 0;
    for (const n of nodes.values()) {
      if (!n.up) {
        const restarted = freshNode(n.id, n.succeeding);
        for (const [key, succ] of restarted.succeeding)
          if (succ.serving) restore(restarted, spec(key), [...succ.reservations.takeOver(), ...succ.served.values()]);
        nodes.set(n.id, restarted);
      }
    }
    const before = new Map(keys.map((s) => [s.key, admittedAt.get(s.key)?.length ?? 0]));
    const end = step + recoverySteps;
    for (; step < end; step++) {
      deliver();
      timers();
      for (let i = 0; i < requestsPerStep; i++) clientRequest();
    }
    checkWindows();
    for (const s of keys) {
      if ((admittedAt.get(s.key)?.length ?? 0) === before.get(s.key))
        throw new Failure(`liveness: ${s.key} admitted nothing in ${recoverySteps} steps after healing`);
    }
    return { seed: options.seed, ok: true, stats };
  } catch (error) {
    if (!(error instanceof Error)) throw error;
    return { seed: options.seed, ok: false, failure: `step ${step}: ${error.message}`, stats };
  }
}
