import { assert } from "../assert.js";
import { permissionQueryDepthMax, permissionQueryNodesMax } from "../limits.js";

/**
 * A v1 permission query (docs/core-leaves.md, "Permission queries"): a literal permission slug, or `and`/`or` over at least one
 * sub-query. Matching is exact and case-sensitive: there are no globs ("*" only matches a
 * permission literally named "*").
 */
export type PermissionQuery = string | { and: PermissionQuery[] } | { or: PermissionQuery[] };

export type PermissionQueryParse = { ok: true; query: PermissionQuery } | { ok: false };

export type PermissionQueryResult = { valid: true } | { valid: false; message: string };

/** Work left for one parse; shared across recursion so abandoned branches count too. */
interface ParseBudget {
  nodesLeft: number;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function parseList(value: unknown, depth: number, budget: ParseBudget): PermissionQuery[] | undefined {
  if (!Array.isArray(value) || value.length === 0) return undefined;
  const children: PermissionQuery[] = [];
  for (const item of value as unknown[]) {
    const child = parseNode(item, depth + 1, budget);
    if (child === undefined) return undefined;
    children.push(child);
  }
  return children;
}

function parseNode(input: unknown, depth: number, budget: ParseBudget): PermissionQuery | undefined {
  if (depth > permissionQueryDepthMax) return undefined;
  budget.nodesLeft--;
  if (budget.nodesLeft < 0) return undefined;
  if (typeof input === "string") return input;
  if (!isPlainObject(input)) return undefined;
  // Upstream parses with a zod union tried in order (`and` member, then `or` member), each
  // stripping unknown keys: an object with both keys is an `and` when its `and` is valid, else an
  // `or` when its `or` is valid.
  if (Object.hasOwn(input, "and")) {
    const and = parseList(input["and"], depth, budget);
    if (and !== undefined) return { and };
    if (budget.nodesLeft < 0) return undefined;
  }
  if (Object.hasOwn(input, "or")) {
    const or = parseList(input["or"], depth, budget);
    if (or !== undefined) return { or };
  }
  return undefined;
}

/**
 * Validates untrusted JSON as a permission query. Invalid (upstream's 400 "permission query is
 * invalid"): anything but a string or an object with a non-empty `and`/`or` array of valid
 * queries, e.g. `{}`, `{and: []}`, `5`, `{and: ["p1", {}]}`; also, keyraft's bound, a query nested
 * deeper than `permissionQueryDepthMax` or whose parse examines more than
 * `permissionQueryNodesMax` nodes. The result is a fresh value without unknown keys.
 */
export function parsePermissionQuery(input: unknown): PermissionQueryParse {
  const budget: ParseBudget = { nodesLeft: permissionQueryNodesMax };
  const query = parseNode(input, 1, budget);
  if (query === undefined) return { ok: false };
  assert(budget.nodesLeft >= 0, "parsePermissionQuery: a valid query is within the node budget");
  return { ok: true, query };
}

/**
 * Evaluates a query against the key's permissions: `has(p)` answers exact membership (direct
 * permissions and those of all the key's roles) and `held` lists them for the `or` failure
 * message (a function so the list is only built when a message needs it). The messages are
 * upstream's: `Missing permission: '<p>'` for a literal and
 * `Missing one of these permissions: ['"a"', '"b"'], have: ['x', 'y']` for an `or`; an `and`
 * fails with its first failing child's message.
 */
export function evaluatePermissionQuery(
  query: PermissionQuery,
  has: (permission: string) => boolean,
  held: readonly string[] | (() => readonly string[]),
): PermissionQueryResult {
  if (typeof query === "string") {
    return has(query) ? { valid: true } : { valid: false, message: `Missing permission: '${query}'` };
  }
  if ("and" in query) {
    assert(query.and.length > 0, "evaluatePermissionQuery: and has children");
    for (const child of query.and) {
      const result = evaluatePermissionQuery(child, has, held);
      if (!result.valid) return result;
    }
    return { valid: true };
  }
  assert(query.or.length > 0, "evaluatePermissionQuery: or has children");
  for (const child of query.or) {
    if (evaluatePermissionQuery(child, has, held).valid) return { valid: true };
  }
  const wanted = query.or.map((child) => `'${JSON.stringify(child)}'`).join(", ");
  const have = (typeof held === "function" ? held() : held).map((p) => `'${p}'`).join(", ");
  return { valid: false, message: `Missing one of these permissions: [${wanted}], have: [${have}]` };
}
