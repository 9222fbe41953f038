import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { evaluatePermissionQuery, type PermissionQuery } from "../src/rbac/query.js";
import { parsePermissionQuery } from "../src/rbac/query.js";
import { permissionQueryDepthMax, permissionQueryNodesMax } from "../src/limits.js";

function evaluate(query: PermissionQuery, held: readonly string[]) {
  const set = new Set(held);
  return evaluatePermissionQuery(query, (p) => set.has(p), held);
}

function nest(depth: number): unknown {
  let query: unknown = "p";
  for (let i = 1; i < depth; i++) query = { and: [query] };
  return query;
}

// Reference semantics, written independently: a query is true iff the boolean formula holds.
function holds(query: PermissionQuery, held: ReadonlySet<string>): boolean {
  if (typeof query === "string") return held.has(query);
  if ("and" in query) return query.and.every((q) => holds(q, held));
  return query.or.some((q) => holds(q, held));
}

const permission = fc.constantFrom("a", "b", "c", "api.*.read", "*", "A");
const query: fc.Arbitrary<PermissionQuery> = fc.letrec<{ q: PermissionQuery }>((tie) => ({
  q: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    permission,
    fc.record({ and: fc.array(tie("q"), { minLength: 1, maxLength: 4 }) }),
    fc.record({ or: fc.array(tie("q"), { minLength: 1, maxLength: 4 }) }),
  ),
})).q;

describe("parsePermissionQuery", () => {
  it("accepts strings and non-empty and/or arrays of queries", () => {
    expect(parsePermissionQuery("a")).toEqual({ ok: true, query: "a" });
    expect(parsePermissionQuery({ and: ["a", { or: ["b", "c"] }] })).toEqual({
      ok: true,
      query: { and: ["a", { or: ["b", "c"] }] },
    });
  });

  it("rejects what upstream rejects", () => {
    for (const bad of [
      {},
      { and: [] },
      { or: [] },
      5,
      null,
      [],
      ["a"],
      { and: ["p1", {}] },
      { and: "a" },
      true,
      { x: ["a"] },
    ]) {
      expect(parsePermissionQuery(bad), JSON.stringify(bad)).toEqual({ ok: false });
    }
  });

  it("parses an object with both keys as and, falling back to or when and is invalid, and strips extra keys", () => {
    expect(parsePermissionQuery({ and: ["a"], or: ["b"] })).toEqual({ ok: true, query: { and: ["a"] } });
    expect(parsePermissionQuery({ and: [], or: ["b"] })).toEqual({ ok: true, query: { or: ["b"] } });
    expect(parsePermissionQuery({ and: ["a"], extra: 1 })).toEqual({ ok: true, query: { and: ["a"] } });
  });

  it("accepts depth permissionQueryDepthMax and rejects one more", () => {
    expect(parsePermissionQuery(nest(permissionQueryDepthMax)).ok).toBe(true);
    expect(parsePermissionQuery(nest(permissionQueryDepthMax + 1)).ok).toBe(false);
  });

  it("accepts permissionQueryNodesMax nodes and rejects one more", () => {
    const atMax = { or: new Array<string>(permissionQueryNodesMax - 1).fill("a") };
    expect(parsePermissionQuery(atMax).ok).toBe(true);
    const pastMax = { or: new Array<string>(permissionQueryNodesMax).fill("a") };
    expect(parsePermissionQuery(pastMax).ok).toBe(false);
  });

  it("stays bounded on inputs that would make a naive union parse exponential", () => {
    // Every level has an `and` branch that fails deep down and an `or` branch with the same child.
    let input: unknown = { and: [{}] };
    for (let i = 0; i < 30; i++) input = { and: [input, {}], or: [input] };
    // 2^30 branch attempts without the shared node budget; with it the parse stops early.
    expect(parsePermissionQuery(input)).toEqual({ ok: false });
  });

  it("round-trips any generated query and returns a fresh value", () => {
    fc.assert(
      fc.property(query, (q) => {
        const parsed = parsePermissionQuery(JSON.parse(JSON.stringify(q)));
        expect(parsed).toEqual({ ok: true, query: q });
      }),
    );
  });

  it("never throws on arbitrary JSON", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const parsed = parsePermissionQuery(value);
        expect(typeof parsed.ok).toBe("boolean");
      }),
    );
  });
});

describe("evaluatePermissionQuery", () => {
  it("uses upstream's messages", () => {
    expect(evaluate("a", ["b"])).toEqual({ valid: false, message: "Missing permission: 'a'" });
    expect(evaluate({ or: ["a", "b"] }, ["x", "y"])).toEqual({
      valid: false,
      message: `Missing one of these permissions: ['"a"', '"b"'], have: ['x', 'y']`,
    });
    expect(evaluate({ and: ["x", "c", "d"] }, ["x"])).toEqual({ valid: false, message: "Missing permission: 'c'" });
    expect(evaluate({ or: [{ and: ["a", "b"] }, "c"] }, [])).toEqual({
      valid: false,
      message: `Missing one of these permissions: ['{"and":["a","b"]}', '"c"'], have: []`,
    });
  });

  it("matches exactly and case-sensitively, with no globs", () => {
    expect(evaluate("api.*.read", ["api.123.read"]).valid).toBe(false);
    expect(evaluate("*", ["api.123.read"]).valid).toBe(false);
    expect(evaluate("*", ["*"]).valid).toBe(true);
    expect(evaluate("A", ["a"]).valid).toBe(false);
  });

  it("agrees with the boolean formula for any query and permission set", () => {
    fc.assert(
      fc.property(query, fc.uniqueArray(permission), (q, held) => {
        const result = evaluate(q, held);
        expect(result.valid).toBe(holds(q, new Set(held)));
        if (!result.valid) expect(result.message).toMatch(/^Missing (permission: '|one of these permissions: \[)/);
      }),
    );
  });

  it("builds the held list only when an or fails", () => {
    let calls = 0;
    const held = () => {
      calls++;
      return ["a"];
    };
    expect(evaluatePermissionQuery({ or: ["a", "b"] }, (p) => p === "a", held).valid).toBe(true);
    expect(calls).toBe(0);
    expect(evaluatePermissionQuery({ or: ["b"] }, (p) => p === "a", held)).toEqual({
      valid: false,
      message: `Missing one of these permissions: ['"b"'], have: ['a']`,
    });
    expect(calls).toBe(1);
  });
});
