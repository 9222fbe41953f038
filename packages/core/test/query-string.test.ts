import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { evaluatePermissionQuery, type PermissionQuery } from "../src/rbac/query.js";
import { formatPermissionQuery, parsePermissionQueryString } from "../src/rbac/query-string.js";

function parsed(text: string): PermissionQuery {
  const result = parsePermissionQueryString(text);
  if (!result.ok) throw new Error(result.message);
  return result.query;
}

function failure(text: string): string {
  const result = parsePermissionQueryString(text);
  if (result.ok) throw new Error(`parsed: ${JSON.stringify(result.query)}`);
  return result.message;
}

const holds = (query: PermissionQuery, held: ReadonlySet<string>) =>
  evaluatePermissionQuery(
    query,
    (p) => held.has(p),
    () => [...held],
  ).valid;

describe("permission query strings", () => {
  it("precedence, grouping, keywords in any case as whole words", () => {
    expect(parsed("a AND (b OR c)")).toEqual({ and: ["a", { or: ["b", "c"] }] });
    expect(parsed("a OR b AND c")).toEqual({ or: ["a", { and: ["b", "c"] }] });
    expect(parsed("a and b Or c")).toEqual({ or: [{ and: ["a", "b"] }, "c"] });
    expect(parsed("ORDERS.read AND a.and.b")).toEqual({ and: ["ORDERS.read", "a.and.b"] });
    expect(parsed("  api.*:x/y-z_1\t\r\n")).toBe("api.*:x/y-z_1");
    expect(parsed("((a))")).toBe("a");
  });

  it("upstream's messages for malformed queries", () => {
    expect(failure("")).toBe("Unexpected end of input. Please provide a valid permission query.");
    expect(failure("   ")).toBe("Unexpected end of input. Please provide a valid permission query.");
    expect(failure("permission_1 AND")).toBe(
      "Unexpected end of query. Expected a permission identifier or opening parenthesis.",
    );
    expect(failure("(permission_1 AND permission_2")).toBe(
      "Missing closing parenthesis ')' at position 30. Every opening parenthesis must have a matching closing parenthesis.",
    );
    expect(failure("permission_1 AND ()")).toBe(
      "Empty parentheses found at position 18. Parentheses must contain at least one permission or expression.",
    );
    expect(failure("AND permission_1")).toBe(
      "Unexpected token 'AND' at position 0. Expected a permission identifier or opening parenthesis.",
    );
    expect(failure("a b")).toBe(
      "Unexpected token 'b' at position 2. The query appears to have extra content after a valid expression.",
    );
    expect(failure("a & b")).toBe(
      "Invalid character '&' found in query at position 2. " +
        "Only letters, numbers, dots, underscores, hyphens, slashes, colons, asterisks, and parentheses are allowed.",
    );
    expect(failure("é AND a")).toMatch(/^Invalid character 'é' found in query at position 0\./);
    expect(failure("a".repeat(1001))).toMatch(/longer than 1000/);
  });

  const permission = fc.stringMatching(/^[a-z0-9._:*/-]{1,6}$/).filter((p) => !/^(and|or)$/i.test(p));
  const query: fc.Arbitrary<PermissionQuery> = fc.letrec<{ node: PermissionQuery }>((tie) => ({
    node: fc.oneof(
      { depthSize: "small", withCrossShrink: true },
      permission,
      fc.array(tie("node"), { minLength: 2, maxLength: 3 }).map((and) => ({ and })),
      fc.array(tie("node"), { minLength: 2, maxLength: 3 }).map((or) => ({ or })),
    ),
  })).node;

  it("property: formatting a tree and parsing it back evaluates the same for every permission set", () => {
    fc.assert(
      fc.property(query, fc.uniqueArray(permission, { maxLength: 8 }), (tree, held) => {
        const text = formatPermissionQuery(tree);
        const back = parsed(text);
        const set = new Set(held);
        expect(holds(back, set)).toBe(holds(tree, set));
        // Formatting is a fixed point after one parse.
        expect(formatPermissionQuery(back)).toBe(formatPermissionQuery(parsed(formatPermissionQuery(back))));
      }),
    );
  });

  it("property: extra whitespace and keyword case never change the parse", () => {
    fc.assert(
      fc.property(query, fc.constantFrom(" ", "  ", "\t", "\n", " \r\n "), fc.boolean(), (tree, space, lower) => {
        const text = formatPermissionQuery(tree);
        const spaced = text
          .replace(/\(/g, `(${space}`)
          .replace(/\)/g, `${space})`)
          .replace(/ AND /g, lower ? `${space}and${space}` : `${space}AND${space}`)
          .replace(/ OR /g, lower ? `${space}or${space}` : `${space}Or${space}`);
        expect(parsed(spaced)).toEqual(parsed(text));
      }),
    );
  });

  it("property: any input parses or fails with a message, never throws", () => {
    fc.assert(
      fc.property(
        fc.string({ maxLength: 40, unit: fc.constantFrom("a", "b", " ", "(", ")", "AND", "OR", "&", "é") }),
        (text) => {
          const result = parsePermissionQueryString(text);
          if (!result.ok) expect(result.message.length).toBeGreaterThan(0);
        },
      ),
    );
  });
});
