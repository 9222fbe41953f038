import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { globMatches, matchOverride, type OverrideLike } from "../src/overrides/match.js";

// Reference glob: dynamic programming over (pattern prefix, text prefix), obviously correct.
function referenceGlob(pattern: string, text: string): boolean {
  let row = new Array<boolean>(text.length + 1).fill(false);
  row[0] = true;
  for (const char of pattern) {
    const next = new Array<boolean>(text.length + 1).fill(false);
    if (char === "*") {
      for (let j = 0; j <= text.length; j++) next[j] = row[j]! || (j > 0 && next[j - 1]!);
    } else {
      for (let j = 1; j <= text.length; j++) next[j] = row[j - 1]! && text[j - 1] === char;
    }
    row = next;
  }
  return row[text.length]!;
}

// Reference precedence: sort every matching override by (exact first, literal count desc, id asc).
function referenceMatch(overrides: readonly OverrideLike[], identifier: string): OverrideLike | undefined {
  const literal = (p: string) => [...p].filter((c) => c !== "*").length;
  const candidates = overrides.filter(
    (o) => o.identifier === identifier || (o.identifier.includes("*") && referenceGlob(o.identifier, identifier)),
  );
  candidates.sort((a, b) => {
    const exact = Number(b.identifier === identifier) - Number(a.identifier === identifier);
    if (exact !== 0) return exact;
    const literals = literal(b.identifier) - literal(a.identifier);
    if (literals !== 0) return literals;
    return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
  });
  return candidates[0];
}

const alphabet = fc.constantFrom("a", "b", "*", "-");
const glob = fc.string({ unit: alphabet, maxLength: 8 });
const text = fc.string({ unit: fc.constantFrom("a", "b", "-", "*"), maxLength: 10 });

describe("globMatches", () => {
  it("treats * as any sequence and everything else literally, anchored", () => {
    expect(globMatches("user_*", "user_123")).toBe(true);
    expect(globMatches("user_*", "user_")).toBe(true);
    expect(globMatches("user_*", "xuser_1")).toBe(false);
    expect(globMatches("*_admin", "bob_admin")).toBe(true);
    expect(globMatches("a*b*c", "abc")).toBe(true);
    expect(globMatches("a*b*c", "acb")).toBe(false);
    expect(globMatches("a*a", "a")).toBe(false);
    expect(globMatches("user.?", "user.x")).toBe(false);
    expect(globMatches("user.[a]", "user.[a]")).toBe(true);
    expect(globMatches("*", "")).toBe(true);
  });

  it("agrees with a dynamic-programming reference", () => {
    fc.assert(
      fc.property(glob, text, (p, t) => {
        expect(globMatches(p, t)).toBe(referenceGlob(p, t));
      }),
      { numRuns: 5000 },
    );
  });

  it("finishes on patterns that make backtracking matchers explode", () => {
    const pattern = `${"a*".repeat(500)}b`;
    const input = "a".repeat(10_000);
    expect(globMatches(pattern, input)).toBe(false);
    expect(globMatches(pattern, `${input}b`)).toBe(true);
  });
});

describe("matchOverride", () => {
  it("prefers exact, then the most literal characters, then the lowest id", () => {
    const overrides = [
      { id: "rlor_3", identifier: "*" },
      { id: "rlor_2", identifier: "user_*" },
      { id: "rlor_1", identifier: "*er_42" },
      { id: "rlor_4", identifier: "user_42" },
      { id: "rlor_0", identifier: "u*" },
    ];
    expect(matchOverride(overrides, "user_42")?.id).toBe("rlor_4");
    expect(matchOverride(overrides, "user_7")?.id).toBe("rlor_2");
    expect(matchOverride(overrides, "peter_42")?.id).toBe("rlor_1");
    expect(matchOverride(overrides, "bob_42")?.id).toBe("rlor_3");
    expect(matchOverride(overrides, "x")?.id).toBe("rlor_3");
    expect(matchOverride(overrides.slice(1, 3), "user_42")?.id).toBe("rlor_1"); // 5 literals each: lower id
    expect(matchOverride([], "x")).toBeUndefined();
    expect(matchOverride([{ id: "a", identifier: "b" }], "x")).toBeUndefined();
  });

  it("equals the reference and does not depend on the order of the overrides", () => {
    const overrides = fc.uniqueArray(
      fc.record({
        id: fc.string({ unit: fc.constantFrom("0", "1", "2"), minLength: 1, maxLength: 3 }),
        identifier: glob,
      }),
      { selector: (o) => o.id, maxLength: 12 },
    );
    fc.assert(
      fc.property(overrides, text, fc.nat(), (list, identifier, seed) => {
        const expected = referenceMatch(list, identifier);
        expect(matchOverride(list, identifier)).toBe(expected);
        const rotated = [
          ...list.slice(seed % (list.length || 1)),
          ...list.slice(0, seed % (list.length || 1)),
        ].reverse();
        expect(matchOverride(rotated, identifier)).toBe(expected);
      }),
      { numRuns: 3000 },
    );
  });
});
