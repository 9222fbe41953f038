import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { pageById } from "../src/v2/pagination.js";
import { problemRegistry } from "../src/v2/problem.js";

describe("v2 pagination", () => {
  it("following cursors visits every item once, in id order, and the last page has no cursor", () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.string({ minLength: 1, maxLength: 6 }), { maxLength: 60 }),
        fc.integer({ min: 1, max: 100 }),
        (ids, limit) => {
          const items = [...ids].sort().map((id) => ({ id }));
          const seen: string[] = [];
          let cursor: string | undefined;
          for (let pages = 0; pages <= items.length + 1; pages++) {
            const page = pageById(items, (item) => item.id, cursor, limit);
            expect(page.items.length).toBeLessThanOrEqual(limit);
            seen.push(...page.items.map((item) => item.id));
            expect(page.pagination.hasMore).toBe(page.pagination.cursor !== undefined);
            if (page.pagination.cursor === undefined) break;
            cursor = page.pagination.cursor;
          }
          expect(seen).toEqual(items.map((item) => item.id));
        },
      ),
    );
  });

  it("an empty list and an unknown cursor", () => {
    expect(pageById([], (item: { id: string }) => item.id, undefined, 10)).toEqual({
      items: [],
      pagination: { hasMore: false },
    });
    const items = ["a", "c", "e"].map((id) => ({ id }));
    expect(pageById(items, (item) => item.id, "b", 1)).toEqual({
      items: [{ id: "c" }],
      pagination: { hasMore: true, cursor: "e" },
    });
    expect(pageById(items, (item) => item.id, "z", 1).items).toEqual([]);
  });
});

describe("v2 problem registry", () => {
  it("every type path is used once and every status is an error status", () => {
    const entries = Object.values(problemRegistry);
    expect(new Set(entries.map((entry) => entry.path)).size).toBe(entries.length);
    for (const entry of entries) {
      expect(entry.status).toBeGreaterThanOrEqual(400);
      expect(entry.status).toBeLessThan(600);
    }
  });
});
