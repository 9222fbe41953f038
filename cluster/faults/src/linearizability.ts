// A linearizability checker in the manner of Porcupine / Knossos: the Wing-Gong search with
// Lowe's memoization (a cache of (linearized set, state) pairs) over each key's history
// separately (P-compositionality: a history is linearizable iff each key's sub-history is).
//
// An operation whose outcome is unknown (a timeout, a 503 "outcome unknown", a crash) may have
// taken effect at any point after its call, or never: its return time is +Infinity, so it never
// constrains the order, and the model must accept any output for it. Reads with unknown output
// tell nothing and should be left out by the caller.

export interface Operation<I, O> {
  /** Partition key (e.g. the register or set name). */
  key: string;
  clientId: number;
  input: I;
  /** undefined: outcome unknown. */
  output: O | undefined;
  callMs: number;
  /** +Infinity when the outcome is unknown. */
  returnMs: number;
}

export interface Model<S, I, O> {
  init(): S;
  /** Whether `input` applied to `state` may produce `output` (undefined: unknown, accept any), and the next state. */
  step(state: S, input: I, output: O | undefined): { ok: boolean; state: S };
  /** Equal states must hash equally (memoization key). */
  hash(state: S): string;
  describe?(op: Operation<I, O>): string;
}

export type CheckResult =
  | { result: "ok"; keys: number; operations: number }
  | { result: "illegal"; key: string; operations: number; longestPrefix: string[] }
  | { result: "unknown"; key: string; reason: string };

/** Search steps per key before giving up with "unknown" (a history too concurrent to decide in time). */
export const searchStepsMax = 2_000_000;
/** Operations per key checked at once (the linearized set is a bitset of this size). */
export const operationsPerKeyMax = 20_000;

interface Entry<I, O> {
  isCall: boolean;
  id: number;
  op: Operation<I, O>;
  timeMs: number;
  match: Entry<I, O> | null;
  prev: Entry<I, O> | null;
  next: Entry<I, O> | null;
}

function buildList<I, O>(ops: readonly Operation<I, O>[]): Entry<I, O> {
  const events: Entry<I, O>[] = [];
  ops.forEach((op, id) => {
    const call: Entry<I, O> = { isCall: true, id, op, timeMs: op.callMs, match: null, prev: null, next: null };
    const ret: Entry<I, O> = { isCall: false, id, op, timeMs: op.returnMs, match: null, prev: null, next: null };
    call.match = ret;
    events.push(call, ret);
  });
  // By time; at equal times calls come first (the operations overlap: the permissive reading).
  events.sort((a, b) => a.timeMs - b.timeMs || (a.isCall === b.isCall ? a.id - b.id : a.isCall ? -1 : 1));
  const head: Entry<I, O> = {
    isCall: false,
    id: -1,
    op: ops[0] as Operation<I, O>,
    timeMs: -Infinity,
    match: null,
    prev: null,
    next: null,
  };
  let last = head;
  for (const e of events) {
    last.next = e;
    e.prev = last;
    last = e;
  }
  return head;
}

function lift<I, O>(entry: Entry<I, O>): void {
  const ret = entry.match as Entry<I, O>;
  (entry.prev as Entry<I, O>).next = entry.next;
  if (entry.next !== null) entry.next.prev = entry.prev;
  (ret.prev as Entry<I, O>).next = ret.next;
  if (ret.next !== null) ret.next.prev = ret.prev;
}

function unlift<I, O>(entry: Entry<I, O>): void {
  const ret = entry.match as Entry<I, O>;
  (ret.prev as Entry<I, O>).next = ret;
  if (ret.next !== null) ret.next.prev = ret;
  (entry.prev as Entry<I, O>).next = entry;
  if (entry.next !== null) entry.next.prev = entry;
}

class Bitset {
  readonly words: Uint32Array;
  constructor(size: number) {
    this.words = new Uint32Array(Math.ceil(size / 32) + 1);
  }
  set(i: number): void {
    this.words[i >>> 5] = ((this.words[i >>> 5] ?? 0) | (1 << (i & 31))) >>> 0;
  }
  clear(i: number): void {
    this.words[i >>> 5] = ((this.words[i >>> 5] ?? 0) & ~(1 << (i & 31))) >>> 0;
  }
  key(): string {
    return this.words.join(",");
  }
}

/** Checks one key's operations. */
export function checkSingle<S, I, O>(model: Model<S, I, O>, ops: readonly Operation<I, O>[], key: string): CheckResult {
  if (ops.length === 0) return { result: "ok", keys: 1, operations: 0 };
  if (ops.length > operationsPerKeyMax)
    return { result: "unknown", key, reason: `more than ${operationsPerKeyMax} operations` };
  const head = buildList(ops);
  const linearized = new Bitset(ops.length);
  const cache = new Set<string>();
  const calls: { entry: Entry<I, O>; state: S }[] = [];
  let state = model.init();
  let entry = head.next;
  let longest: Entry<I, O>[] = [];
  let steps = 0;
  while (head.next !== null) {
    if (++steps > searchStepsMax) return { result: "unknown", key, reason: `search exceeded ${searchStepsMax} steps` };
    if (entry === null) return { result: "unknown", key, reason: "internal: ran off the list" };
    if (entry.isCall) {
      const ret = entry.match as Entry<I, O>;
      const next = model.step(state, entry.op.input, ret.op.output);
      if (next.ok) {
        linearized.set(entry.id);
        const cacheKey = `${linearized.key()}|${model.hash(next.state)}`;
        if (!cache.has(cacheKey)) {
          cache.add(cacheKey);
          calls.push({ entry, state });
          if (calls.length > longest.length) longest = calls.map((c) => c.entry);
          state = next.state;
          lift(entry);
          entry = head.next;
          continue;
        }
        linearized.clear(entry.id);
      }
      entry = entry.next;
    } else {
      // A return with its call not linearized yet: backtrack.
      const top = calls.pop();
      if (top === undefined) {
        const describe =
          model.describe ?? ((op: Operation<I, O>) => JSON.stringify({ input: op.input, output: op.output }));
        return { result: "illegal", key, operations: ops.length, longestPrefix: longest.map((e) => describe(e.op)) };
      }
      state = top.state;
      linearized.clear(top.entry.id);
      unlift(top.entry);
      entry = top.entry.next;
    }
  }
  return { result: "ok", keys: 1, operations: ops.length };
}

/** Checks a whole history, key by key. The first non-ok key decides. */
export function checkLinearizable<S, I, O>(model: Model<S, I, O>, history: readonly Operation<I, O>[]): CheckResult {
  const byKey = new Map<string, Operation<I, O>[]>();
  for (const op of history) {
    const list = byKey.get(op.key) ?? [];
    list.push(op);
    byKey.set(op.key, list);
  }
  for (const [key, ops] of byKey) {
    const result = checkSingle(model, ops, key);
    if (result.result !== "ok") return result;
  }
  return { result: "ok", keys: byKey.size, operations: history.length };
}

// Models of the admin workloads.

export type RegisterInput = { op: "write"; value: string } | { op: "read" };
export type RegisterOutput = { value: string | null } | { ok: true };

/** A register (e.g. a key's `name`, written by keys.updateKey, read by keys.getKey), initially `initial`. */
export function registerModel(initial: string | null = null): Model<string | null, RegisterInput, RegisterOutput> {
  return {
    init: () => initial,
    step(state, input, output) {
      if (input.op === "write") return { ok: true, state: input.value };
      if (output === undefined) return { ok: true, state };
      return { ok: "value" in output && output.value === state, state };
    },
    hash: (state) => (state === null ? "\u0000null" : state),
    describe: (op) => (op.input.op === "write" ? `write(${op.input.value})` : `read()->${JSON.stringify(op.output)}`),
  };
}

export type SetInput = { op: "add"; value: string } | { op: "read" };
export type SetOutput = { values: readonly string[] } | { ok: true };

/** A grow-only set (e.g. a key's permissions, added by keys.addPermissions, read by keys.getKey). */
export function setModel(): Model<readonly string[], SetInput, SetOutput> {
  return {
    init: () => [],
    step(state, input, output) {
      if (input.op === "add")
        return { ok: true, state: state.includes(input.value) ? state : [...state, input.value].sort() };
      if (output === undefined) return { ok: true, state };
      if (!("values" in output)) return { ok: false, state };
      const seen = [...output.values].sort();
      return { ok: seen.length === state.length && seen.every((v, i) => v === state[i]), state };
    },
    hash: (state) => state.join("\u0000"),
    describe: (op) => (op.input.op === "add" ? `add(${op.input.value})` : `read()->${JSON.stringify(op.output)}`),
  };
}

/**
 * Bounds writes whose outcome is unknown, which otherwise may be placed anywhere after their call
 * and make the search exponential. A write of a unique value that some read returned took effect
 * before that read returned: its return time becomes the earliest such read's return. A write that
 * no read ever returned can be dropped: in any linearization it is followed by another write
 * before any read (or by none), so the history without it is linearizable iff the history with it
 * is. Sound for unique written values and a history that ends with reads on every key.
 */
export function resolveUnknownWrites<I extends { op: string; value?: string }, O>(
  history: readonly Operation<I, O>[],
  isWrite: (input: I) => boolean,
  shows: (value: string, output: O) => boolean,
): Operation<I, O>[] {
  const out: Operation<I, O>[] = [];
  for (const op of history) {
    if (Number.isFinite(op.returnMs) || !isWrite(op.input) || op.input.value === undefined) {
      out.push(op);
      continue;
    }
    const value = op.input.value;
    let seenAtMs = Infinity;
    for (const read of history) {
      if (read.key !== op.key || isWrite(read.input) || read.output === undefined || read.returnMs < op.callMs)
        continue;
      if (shows(value, read.output)) seenAtMs = Math.min(seenAtMs, read.returnMs);
    }
    if (Number.isFinite(seenAtMs)) out.push({ ...op, returnMs: seenAtMs });
  }
  return out;
}
