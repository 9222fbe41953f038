import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { matchOverride, type OverrideLike } from "../src/overrides/match.js";
import { WildcardOverrideIndex } from "../src/overrides/wildcard-index.js";

const glob = fc
  .string({ unit: fc.constantFrom("a", "b", "*", "-"), maxLength: 7 })
  .map((p) => (p.includes("*") ? p : `${p}*`));
const id = fc.string({ unit: fc.constantFrom("0", "1", "2", "3"), minLength: 1, maxLength: 2 });
const text = fc.string({ unit: fc.constantFrom("a", "b", "-"), maxLength: 9 });

describe("WildcardOverrideIndex", () => {
  it("answers like matchOverride over the same wildcard overrides, through any sets and deletes", () => {
    const op = fc.oneof(
      fc.record({ kind: fc.constant("set" as const), id, identifier: glob }),
      fc.record({ kind: fc.constant("delete" as const), id }),
      fc.record({ kind: fc.constant("match" as const), identifier: text }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 60, size: "max" }), (ops) => {
        const index = new WildcardOverrideIndex<OverrideLike>();
        const live = new Map<string, OverrideLike>();
        for (const o of ops) {
          if (o.kind === "set") {
            const override = { id: o.id, identifier: o.identifier };
            index.set(override);
            live.set(o.id, override);
          } else if (o.kind === "delete") {
            expect(index.delete(o.id)).toBe(live.delete(o.id));
          } else {
            expect(index.match(o.identifier)).toBe(matchOverride(live.values(), o.identifier));
          }
          expect(index.size()).toBe(live.size);
        }
      }),
      { numRuns: 500 },
    );
  });

  it("refuses an identifier without *: exact identifiers belong in a map", () => {
    expect(() => new WildcardOverrideIndex().set({ id: "x", identifier: "exact" })).toThrow();
  });
});
