import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  checkLinearizable,
  registerModel,
  resolveUnknownWrites,
  setModel,
  type Operation,
  type RegisterInput,
  type RegisterOutput,
  type SetInput,
  type SetOutput,
} from "../../cluster/faults/src/linearizability.js";

type RegOp = Operation<RegisterInput, RegisterOutput>;
const w = (clientId: number, value: string, callMs: number, returnMs: number): RegOp => ({
  key: "r",
  clientId,
  input: { op: "write", value },
  output: Number.isFinite(returnMs) ? { ok: true } : undefined,
  callMs,
  returnMs,
});
const r = (clientId: number, value: string | null, callMs: number, returnMs: number): RegOp => ({
  key: "r",
  clientId,
  input: { op: "read" },
  output: { value },
  callMs,
  returnMs,
});

describe("register linearizability", () => {
  it("accepts a sequential history and a read concurrent with a write seeing either value", () => {
    expect(
      checkLinearizable(registerModel(), [
        w(1, "a", 0, 10),
        r(2, "a", 11, 12),
        w(1, "b", 13, 20),
        r(2, "a", 14, 15),
        r(2, "b", 21, 22),
      ]).result,
    ).toBe("ok");
  });

  it("rejects a stale read after a completed write", () => {
    const result = checkLinearizable(registerModel(), [w(1, "a", 0, 10), w(1, "b", 11, 20), r(2, "a", 21, 22)]);
    expect(result.result).toBe("illegal");
  });

  it("rejects a value going back (read new, then read old, both after the write started)", () => {
    const history = [w(1, "a", 0, 5), w(1, "b", 6, 100), r(2, "b", 10, 11), r(3, "a", 12, 13)];
    expect(checkLinearizable(registerModel(), history).result).toBe("illegal");
  });

  it("rejects a read of a value never written", () => {
    expect(checkLinearizable(registerModel(), [w(1, "a", 0, 10), r(2, "z", 0, 20)]).result).toBe("illegal");
  });

  it("an unknown-outcome write may take effect late, but then stays", () => {
    expect(
      checkLinearizable(registerModel(), [
        w(1, "a", 0, 1),
        w(1, "b", 2, Infinity),
        r(2, "a", 10, 11),
        r(2, "b", 50, 51),
      ]).result,
    ).toBe("ok");
    expect(
      checkLinearizable(registerModel(), [w(1, "a", 0, 1), w(1, "b", 2, Infinity), r(2, "a", 10, 11)]).result,
    ).toBe("ok");
    expect(
      checkLinearizable(registerModel(), [
        w(1, "a", 0, 1),
        w(1, "b", 2, Infinity),
        r(2, "b", 10, 11),
        r(2, "a", 50, 51),
      ]).result,
    ).toBe("illegal");
  });

  it("checks keys independently", () => {
    const other = (op: RegOp): RegOp => ({ ...op, key: "s" });
    expect(
      checkLinearizable(registerModel(), [
        w(1, "a", 0, 1),
        other(w(1, "x", 0, 1)),
        r(2, "a", 2, 3),
        other(r(2, "x", 2, 3)),
      ]).result,
    ).toBe("ok");
    expect(
      checkLinearizable(registerModel(), [
        w(1, "a", 0, 1),
        other(w(1, "x", 0, 1)),
        r(2, "a", 2, 3),
        other(r(2, "a", 2, 3)),
      ]),
    ).toMatchObject({ result: "illegal", key: "s" });
  });

  // Histories produced by a real atomic register (each op takes effect at a random instant within
  // its interval) are linearizable; changing one read to a value never written makes them illegal.
  it("property: histories of an atomic register pass; a read of a value never written fails", () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            write: fc.boolean(),
            start: fc.integer({ min: 0, max: 200 }),
            length: fc.integer({ min: 0, max: 30 }),
            at: fc.double({ min: 0, max: 1, noNaN: true }),
          }),
          { minLength: 1, maxLength: 14 },
        ),
        fc.nat(),
        (specs, pick) => {
          const ops = specs.map((s, i) => ({ ...s, id: i, effectMs: s.start + s.at * s.length, value: `v${i}` }));
          const byEffect = [...ops].sort((a, b) => a.effectMs - b.effectMs || a.id - b.id);
          let current: string | null = null;
          const history: RegOp[] = [];
          for (const op of byEffect) {
            if (op.write) {
              current = op.value;
              history.push(w(op.id, op.value, op.start, op.start + op.length));
            } else history.push(r(op.id, current, op.start, op.start + op.length));
          }
          expect(checkLinearizable(registerModel(), history).result).toBe("ok");
          const reads = history.filter((h) => h.input.op === "read");
          const target = reads[pick % Math.max(1, reads.length)];
          if (target === undefined) return;
          const corrupted = "never-written";
          const bad = history.map((h) => (h === target ? { ...h, output: { value: corrupted } } : h));
          expect(checkLinearizable(registerModel(), bad).result).toBe("illegal");
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe("set linearizability", () => {
  type SOp = Operation<SetInput, SetOutput>;
  const add = (value: string, callMs: number, returnMs: number): SOp => ({
    key: "s",
    clientId: 1,
    input: { op: "add", value },
    output: { ok: true },
    callMs,
    returnMs,
  });
  const read = (values: string[], callMs: number, returnMs: number): SOp => ({
    key: "s",
    clientId: 2,
    input: { op: "read" },
    output: { values },
    callMs,
    returnMs,
  });

  it("accepts concurrent adds seen in either order", () => {
    expect(
      checkLinearizable(setModel(), [add("a", 0, 10), add("b", 0, 10), read(["b"], 5, 6), read(["a", "b"], 11, 12)])
        .result,
    ).toBe("ok");
  });

  it("rejects a lost acknowledged add and an element that disappears", () => {
    expect(checkLinearizable(setModel(), [add("a", 0, 10), read([], 11, 12)]).result).toBe("illegal");
    expect(
      checkLinearizable(setModel(), [add("a", 0, 10), add("b", 0, 10), read(["a"], 5, 6), read(["b"], 7, 8)]).result,
    ).toBe("illegal");
  });
});

describe("resolveUnknownWrites", () => {
  it("bounds an unknown write by the first read that shows it, and drops one never seen", () => {
    const history = [w(1, "a", 0, Infinity), w(1, "b", 5, Infinity), r(2, "a", 10, 20), r(2, "a", 30, 40)];
    const resolved = resolveUnknownWrites(
      history,
      (input) => input.op === "write",
      (value, output) => "value" in output && output.value === value,
    );
    expect(resolved.map((op) => [op.input.op === "write" ? op.input.value : "read", op.returnMs])).toEqual([
      ["a", 20],
      ["read", 20],
      ["read", 40],
    ]);
    expect(checkLinearizable(registerModel(), resolved).result).toBe("ok");
    // Still catches a value that goes back after being seen.
    const bad = [w(1, "a", 0, Infinity), w(1, "b", 1, 2), r(2, "a", 10, 20), r(2, "b", 30, 40), r(2, "a", 50, 60)];
    expect(
      checkLinearizable(
        registerModel(),
        resolveUnknownWrites(
          bad,
          (i) => i.op === "write",
          (v, o) => "value" in o && o.value === v,
        ),
      ).result,
    ).toBe("illegal");
  });

  it("keeps a set history with many unknown adds decidable (within the search bound)", () => {
    type SOp = Operation<SetInput, SetOutput>;
    const history: SOp[] = [];
    const seen: string[] = [];
    for (let i = 0; i < 60; i++) {
      history.push({
        key: "s",
        clientId: 1,
        input: { op: "add", value: `e${i}` },
        output: undefined,
        callMs: i * 10,
        returnMs: Infinity,
      });
      if (i % 2 === 0) seen.push(`e${i}`);
      history.push({
        key: "s",
        clientId: 2,
        input: { op: "read" },
        output: { values: [...seen] },
        callMs: i * 10 + 5,
        returnMs: i * 10 + 6,
      });
    }
    const result = checkLinearizable(
      setModel(),
      resolveUnknownWrites(
        history,
        (input) => input.op === "add",
        (value, output) => "values" in output && output.values.includes(value),
      ),
    );
    expect(result.result).toBe("ok");
  });
});
