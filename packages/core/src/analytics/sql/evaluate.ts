// Evaluates a parsed query of the analytics SQL subset over hourly series: checks the table,
// columns and functions, the retention of every time bound, then filters, groups, aggregates,
// orders and limits. Pure: the time comes in `nowMs`.

import { dayStartMs } from "../time.js";
import type { VerificationFilter, VerificationSeries } from "../types.js";
import {
  analyticsFacts,
  analyticsTable,
  analyticsWorkspaceId,
  checkColumn,
  keySpaceIdOf,
  type AnalyticsFact,
  type AnalyticsTable,
} from "./columns.js";
import { AnalyticsSqlError, invalidQuery } from "./errors.js";
import type { Expr, SelectItem, SelectStatement } from "./parser.js";
import {
  asNumber,
  asTimeMs,
  compareValues,
  intervalOf,
  isInterval,
  isTime,
  shiftTime,
  startOf,
  timeValue,
  truthy,
  valueKey,
  type TimeBucket,
  type Value,
} from "./values.js";

export interface AnalyticsSqlOptions {
  nowMs: number;
  /** Time bounds older than nowMs - retentionMs are refused. */
  retentionMs: number;
  /** Rows an answer holds at most (the default LIMIT and its cap). */
  rowsMax: number;
}

export type AnalyticsRow = Record<string, unknown>;

const aggregates: Record<string, string> = {
  count: "count",
  sum: "sum",
  sumif: "sumIf",
  countif: "countIf",
  uniq: "uniq",
  uniqexact: "uniqExact",
};
const timeBuckets: Record<string, TimeBucket> = {
  tostartofhour: "hour",
  tostartofday: "day",
  tostartofweek: "week",
  tostartofmonth: "month",
};
const scalars: Record<string, string> = {
  now: "now",
  today: "today",
  tostartofhour: "toStartOfHour",
  tostartofday: "toStartOfDay",
  tostartofweek: "toStartOfWeek",
  tostartofmonth: "toStartOfMonth",
  todate: "toDate",
  todatetime: "toDateTime",
  fromunixtimestamp64milli: "fromUnixTimestamp64Milli",
  has: "has",
  hasany: "hasAny",
  hasall: "hasAll",
  if: "if",
};
/** Functions upstream allows that keyraft's subset does not answer (named in the refusal). */
const upstreamOnly = new Set(
  [
    "avg",
    "min",
    "max",
    "any",
    "groupArray",
    "groupUniqArray",
    "quantile",
    "now64",
    "toDateTime64",
    "toStartOfMinute",
    "toStartOfQuarter",
    "toStartOfYear",
    "date_trunc",
    "formatDateTime",
    "toUnixTimestamp64Milli",
    "lower",
    "upper",
    "substring",
    "concat",
    "length",
    "trim",
    "startsWith",
    "endsWith",
    "JSONExtractString",
    "round",
    "floor",
    "ceil",
    "abs",
    "coalesce",
    "toString",
    "toInt32",
    "toInt64",
    "toFloat64",
    "arrayJoin",
    "arrayFilter",
  ].map((name) => name.toLowerCase()),
);

const supportedFunctions = [...Object.values(aggregates), ...Object.values(scalars)].join(", ");

function functionName(name: string): { canonical: string; aggregate: boolean } {
  const lower = name.toLowerCase();
  const aggregate = aggregates[lower];
  if (aggregate !== undefined) return { canonical: aggregate, aggregate: true };
  const scalar = scalars[lower];
  if (scalar !== undefined) return { canonical: scalar, aggregate: false };
  if (upstreamOnly.has(lower) || lower.startsWith("tointerval")) {
    throw new AnalyticsSqlError(
      "invalid_analytics_function",
      `Function '${name}' is not supported by keyraft's analytics; the supported functions are ${supportedFunctions}`,
    );
  }
  throw new AnalyticsSqlError("invalid_analytics_function", `Function '${name}' is not allowed`);
}

function children(expr: Expr): Expr[] {
  switch (expr.k) {
    case "col":
    case "str":
    case "num":
    case "star":
      return [];
    case "array":
      return expr.items;
    case "call":
      return expr.args;
    case "bin":
      return [expr.left, expr.right];
    case "not":
    case "neg":
      return [expr.expr];
    case "in":
      return [expr.expr, ...expr.list];
    case "between":
      return [expr.expr, expr.low, expr.high];
    case "interval":
      return [expr.amount];
    case "case":
      return [
        ...expr.whens.flatMap((when) => [when.when, when.then]),
        ...(expr.otherwise === null ? [] : [expr.otherwise]),
      ];
    default: {
      const unreachable: never = expr;
      throw new Error(`children: unknown expression ${JSON.stringify(unreachable)}`);
    }
  }
}

function hasAggregate(expr: Expr): boolean {
  if (expr.k === "call" && functionName(expr.name).aggregate) return true;
  return children(expr).some(hasAggregate);
}

function hasColumn(expr: Expr): boolean {
  return expr.k === "col" || children(expr).some(hasColumn);
}

/** Checks columns, functions and where aggregates and `*` may appear; `aliases` may be named in GROUP/ORDER BY. */
function check(table: AnalyticsTable, expr: Expr, allowAggregate: boolean, aliases: ReadonlySet<string>): void {
  if (expr.k === "col") {
    if (!aliases.has(expr.name)) checkColumn(table, expr.name);
    return;
  }
  if (expr.k === "star") throw invalidQuery("'*' is only allowed in count(*)");
  if (expr.k === "call") {
    const { canonical, aggregate } = functionName(expr.name);
    if (aggregate && !allowAggregate)
      throw invalidQuery(
        `Aggregate function ${canonical} is not allowed here (in WHERE, GROUP BY or inside another aggregate)`,
      );
    if (canonical === "count" && expr.args.length === 1 && expr.args[0]!.k === "star") return;
    for (const arg of expr.args) check(table, arg, allowAggregate && !aggregate, aggregate ? new Set() : aliases);
    return;
  }
  for (const child of children(expr)) check(table, child, allowAggregate, aliases);
}

/** The time bound an expression compares `time` with, when one side is time and the other constant. */
function refersToTime(expr: Expr): boolean {
  if (expr.k === "col") return expr.name === "time";
  if (expr.k === "call") return expr.args.some(refersToTime);
  return false;
}

interface Env {
  table: AnalyticsTable;
  nowMs: number;
  /** The current row (listing, WHERE) or the group's first row. */
  row: Row | null;
  /** The group's rows when aggregating. */
  group: readonly Row[] | null;
}

interface Row {
  fact: AnalyticsFact;
  /** Rows of the table this one stands for (the raw table's facts stand for `count` rows). */
  weight: number;
  spentPerRow: number;
}

function column(env: Env, name: string): Value {
  const row = env.row;
  if (row === null) throw invalidQuery(`Column '${name}' must be in GROUP BY or inside an aggregate function`);
  const fact = row.fact;
  switch (name) {
    case "time":
      return timeValue(fact.timeMs);
    case "workspace_id":
      return analyticsWorkspaceId;
    case "key_space_id":
      return keySpaceIdOf(fact.apiId);
    case "identity_id":
      return fact.identityId;
    case "external_id":
      return fact.externalId;
    case "key_id":
      return fact.keyId;
    case "outcome":
      return fact.outcome;
    case "tags":
      return fact.tags;
    case "source":
      return "api";
    case "app_id":
      return "";
    case "spent_credits":
      return row.spentPerRow;
    case "count":
      return fact.count;
    default:
      throw invalidQuery(`Unknown column '${name}'`);
  }
}

function arrayArg(value: Value, what: string): readonly string[] {
  if (!Array.isArray(value)) throw invalidQuery(`${what} takes an array`);
  return value as readonly string[];
}

function callScalar(name: string, args: Value[], env: Env): Value {
  const arg = (index: number): Value => {
    const value = args[index];
    if (value === undefined) throw invalidQuery(`${name} takes ${index + 1} argument(s) or more`);
    return value;
  };
  const bucket = timeBuckets[name.toLowerCase()];
  if (bucket !== undefined) return timeValue(startOf(bucket, asTimeMs(arg(0), name)));
  switch (name) {
    case "now":
      return timeValue(env.nowMs);
    case "today":
      return timeValue(dayStartMs(env.nowMs));
    case "toDate":
      return timeValue(dayStartMs(asTimeMs(arg(0), name)));
    case "toDateTime": {
      const value = arg(0);
      return timeValue(typeof value === "number" ? value * 1000 : asTimeMs(value, name));
    }
    case "fromUnixTimestamp64Milli":
      return timeValue(asNumber(arg(0), name));
    case "has":
      return arrayArg(arg(0), name).some((item) => compareValues(item, arg(1)) === 0);
    case "hasAny": {
      const set = arrayArg(arg(0), name);
      return arrayArg(arg(1), name).some((item) => set.includes(item));
    }
    case "hasAll": {
      const set = arrayArg(arg(0), name);
      return arrayArg(arg(1), name).every((item) => set.includes(item));
    }
    case "if":
      return truthy(arg(0)) ? arg(1) : arg(2);
    default:
      throw new AnalyticsSqlError("invalid_analytics_function", `Function '${name}' is not allowed`);
  }
}

function callAggregate(name: string, args: readonly Expr[], env: Env): Value {
  const rows = env.group;
  if (rows === null) throw invalidQuery(`Aggregate function ${name} is not allowed here`);
  const each = (expr: Expr, row: Row): Value => evaluate(expr, { ...env, row, group: null });
  const need = (count: number) => {
    if (args.length !== count) throw invalidQuery(`${name} takes ${count} argument(s)`);
  };
  let total = 0;
  switch (name) {
    case "count":
      for (const row of rows) total += row.weight;
      return total;
    case "sum":
      need(1);
      for (const row of rows) total += row.weight * asNumber(each(args[0]!, row), name);
      return total;
    case "sumIf":
      need(2);
      for (const row of rows)
        if (truthy(each(args[1]!, row))) total += row.weight * asNumber(each(args[0]!, row), name);
      return total;
    case "countIf":
      need(1);
      for (const row of rows) if (truthy(each(args[0]!, row))) total += row.weight;
      return total;
    case "uniq":
    case "uniqExact": {
      need(1);
      const seen = new Set<string>();
      for (const row of rows) seen.add(valueKey(each(args[0]!, row)));
      return seen.size;
    }
    default:
      throw new AnalyticsSqlError("invalid_analytics_function", `Function '${name}' is not allowed`);
  }
}

function arithmetic(op: "+" | "-" | "*" | "/" | "%", left: Value, right: Value): Value {
  if (isTime(left) && isInterval(right) && (op === "+" || op === "-"))
    return shiftTime(left, right, op === "+" ? 1 : -1);
  if (isInterval(left) && isTime(right) && op === "+") return shiftTime(right, left, 1);
  const a = asNumber(left, `'${op}'`);
  const b = asNumber(right, `'${op}'`);
  switch (op) {
    case "+":
      return a + b;
    case "-":
      return a - b;
    case "*":
      return a * b;
    case "/":
      return b === 0 ? 0 : a / b;
    case "%":
      return b === 0 ? 0 : a % b;
    default: {
      const unreachable: never = op;
      throw new Error(`arithmetic: unknown operator ${String(unreachable)}`);
    }
  }
}

function evaluate(expr: Expr, env: Env): Value {
  switch (expr.k) {
    case "col":
      return column(env, expr.name);
    case "str":
      return expr.value;
    case "num":
      return expr.value;
    case "star":
      throw invalidQuery("'*' is only allowed in count(*)");
    case "array":
      return expr.items.map((item) => {
        const value = evaluate(item, env);
        if (typeof value !== "string") throw invalidQuery("arrays hold strings");
        return value;
      });
    case "call": {
      const { canonical, aggregate } = functionName(expr.name);
      if (aggregate) return callAggregate(canonical, expr.args, env);
      return callScalar(
        canonical,
        expr.args.map((arg) => evaluate(arg, env)),
        env,
      );
    }
    case "bin": {
      if (expr.op === "AND") return truthy(evaluate(expr.left, env)) && truthy(evaluate(expr.right, env));
      if (expr.op === "OR") return truthy(evaluate(expr.left, env)) || truthy(evaluate(expr.right, env));
      const left = evaluate(expr.left, env);
      const right = evaluate(expr.right, env);
      switch (expr.op) {
        case "=":
          return compareValues(left, right) === 0;
        case "!=":
          return compareValues(left, right) !== 0;
        case "<":
          return compareValues(left, right) < 0;
        case "<=":
          return compareValues(left, right) <= 0;
        case ">":
          return compareValues(left, right) > 0;
        case ">=":
          return compareValues(left, right) >= 0;
        default:
          return arithmetic(expr.op, left, right);
      }
    }
    case "not":
      return !truthy(evaluate(expr.expr, env));
    case "neg":
      return -asNumber(evaluate(expr.expr, env), "'-'");
    case "in": {
      const value = evaluate(expr.expr, env);
      const found = expr.list.some((item) => compareValues(value, evaluate(item, env)) === 0);
      return expr.negated ? !found : found;
    }
    case "between": {
      const value = evaluate(expr.expr, env);
      return compareValues(value, evaluate(expr.low, env)) >= 0 && compareValues(value, evaluate(expr.high, env)) <= 0;
    }
    case "interval":
      return intervalOf(evaluate(expr.amount, env), expr.unit);
    case "case": {
      for (const when of expr.whens) if (truthy(evaluate(when.when, env))) return evaluate(when.then, env);
      return expr.otherwise === null ? 0 : evaluate(expr.otherwise, env);
    }
    default: {
      const unreachable: never = expr;
      throw new Error(`evaluate: unknown expression ${JSON.stringify(unreachable)}`);
    }
  }
}

/** Refuses time bounds older than the retention (every comparison of time with a constant). */
function checkRetention(where: Expr | null, env: Env, retentionMs: number): void {
  if (where === null) return;
  const oldestMs = env.nowMs - retentionMs;
  const days = Math.round(retentionMs / 86_400_000);
  const bound = (expr: Expr) => {
    if (hasColumn(expr)) return;
    const value = evaluate(expr, env);
    if (asTimeMs(value, "a time bound") < oldestMs) {
      throw new AnalyticsSqlError(
        "query_range_exceeds_retention",
        `Cannot query data older than ${days} days. Narrow the time range to the last ${days} days.`,
      );
    }
  };
  const visit = (expr: Expr) => {
    if (expr.k === "bin" && ["=", "!=", "<", "<=", ">", ">="].includes(expr.op)) {
      if (refersToTime(expr.left)) bound(expr.right);
      else if (refersToTime(expr.right)) bound(expr.left);
    } else if (expr.k === "between" && refersToTime(expr.expr)) {
      bound(expr.low);
      bound(expr.high);
    } else if (expr.k === "in" && refersToTime(expr.expr)) {
      for (const item of expr.list) bound(item);
    }
    for (const child of children(expr)) visit(child);
  };
  visit(where);
}

/** Name of an output column: its alias, else the expression as written (count(*) is count()). */
export function renderExpr(expr: Expr): string {
  switch (expr.k) {
    case "col":
      return expr.name;
    case "str":
      return `'${expr.value.replaceAll("'", "\\'")}'`;
    case "num":
      return String(expr.value);
    case "star":
      return "*";
    case "array":
      return `[${expr.items.map(renderExpr).join(", ")}]`;
    case "call": {
      const { canonical } = functionName(expr.name);
      if (canonical === "count" && expr.args.length === 1 && expr.args[0]!.k === "star") return "count()";
      return `${canonical}(${expr.args.map(renderExpr).join(", ")})`;
    }
    case "bin":
      return `${renderExpr(expr.left)} ${expr.op} ${renderExpr(expr.right)}`;
    case "not":
      return `NOT ${renderExpr(expr.expr)}`;
    case "neg":
      return `-${renderExpr(expr.expr)}`;
    case "in":
      return `${renderExpr(expr.expr)} ${expr.negated ? "NOT IN" : "IN"} (${expr.list.map(renderExpr).join(", ")})`;
    case "between":
      return `${renderExpr(expr.expr)} BETWEEN ${renderExpr(expr.low)} AND ${renderExpr(expr.high)}`;
    case "interval":
      return `INTERVAL ${renderExpr(expr.amount)} ${expr.unit}`;
    case "case": {
      const whens = expr.whens.map((w) => `WHEN ${renderExpr(w.when)} THEN ${renderExpr(w.then)}`).join(" ");
      const otherwise = expr.otherwise === null ? "" : ` ELSE ${renderExpr(expr.otherwise)}`;
      return `CASE ${whens}${otherwise} END`;
    }
    default: {
      const unreachable: never = expr;
      throw new Error(`renderExpr: unknown expression ${JSON.stringify(unreachable)}`);
    }
  }
}

/** A value as JSON: times as unix ms on the raw table and RFC 3339 elsewhere; near-integers as integers. */
function output(value: Value, table: AnalyticsTable): unknown {
  if (isTime(value)) return table === "raw" ? value.ms : new Date(value.ms).toISOString().replace(".000Z", "Z");
  if (isInterval(value)) return value.ms;
  if (typeof value === "boolean") return value ? 1 : 0;
  if (typeof value === "number") {
    if (!Number.isFinite(value)) return null;
    const rounded = Math.round(value);
    return Math.abs(value - rounded) < 1e-6 ? rounded : value;
  }
  return Array.isArray(value) ? [...value] : value;
}

const sameExpr = (a: Expr, b: Expr): boolean => JSON.stringify(a) === JSON.stringify(b);

function resolveAlias(expr: Expr, items: readonly SelectItem[]): Expr {
  if (expr.k !== "col") return expr;
  return items.find((item) => item.alias === expr.name)?.expr ?? expr;
}

function sortBy<T>(entries: T[], keys: ((entry: T) => Value)[], descending: readonly boolean[]): void {
  entries.sort((a, b) => {
    for (let i = 0; i < keys.length; i++) {
      const order = compareValues(keys[i]!(a), keys[i]!(b));
      if (order !== 0) return descending[i] ? -order : order;
    }
    return 0;
  });
}

/** The coarse filter to fetch series with: the scope and the lower time bound of a top-level `time >= ...`. */
export function analyticsSqlFilter(
  statement: SelectStatement,
  apiIds: readonly string[] | null,
  options: AnalyticsSqlOptions,
): VerificationFilter {
  let startMs = options.nowMs - options.retentionMs;
  const env: Env = { table: "raw", nowMs: options.nowMs, row: null, group: null };
  const visit = (expr: Expr | null) => {
    if (expr === null) return;
    if (expr.k === "bin" && expr.op === "AND") {
      visit(expr.left);
      visit(expr.right);
      return;
    }
    const lower =
      expr.k === "bin" && (expr.op === ">=" || expr.op === ">") && expr.left.k === "col" && expr.left.name === "time"
        ? expr.right
        : expr.k === "between" && expr.expr.k === "col" && expr.expr.name === "time"
          ? expr.low
          : null;
    if (lower === null || hasColumn(lower)) return;
    // A row with time >= X lies in a bucket starting at or after X, so its hours are all from X's hour on.
    startMs = Math.max(startMs, startOf("hour", asTimeMs(evaluate(lower, env), "a time bound")));
  };
  try {
    visit(statement.where);
  } catch (error) {
    if (!(error instanceof AnalyticsSqlError)) throw error;
  }
  return {
    apiIds: apiIds ?? undefined,
    startMs: Math.max(0, startMs),
    endMs: Number.MAX_SAFE_INTEGER,
  };
}

/** Runs a parsed query over series (already narrowed to the caller's apis). Throws AnalyticsSqlError. */
export function runAnalyticsSql(
  statement: SelectStatement,
  series: readonly VerificationSeries[],
  options: AnalyticsSqlOptions,
): AnalyticsRow[] {
  const table = analyticsTable(statement.table);
  const aliases = new Set(statement.items.flatMap((item) => (item.alias === null ? [] : [item.alias])));
  for (const item of statement.items) check(table, item.expr, true, new Set());
  if (statement.where !== null) check(table, statement.where, false, new Set());
  for (const expr of statement.groupBy) check(table, expr, false, aliases);
  for (const order of statement.orderBy) check(table, order.expr, true, aliases);
  const base: Env = { table, nowMs: options.nowMs, row: null, group: null };
  checkRetention(statement.where, base, options.retentionMs);
  const limit = Math.min(statement.limit ?? options.rowsMax, options.rowsMax);
  const rows: Row[] = analyticsFacts(table, series)
    .map((fact) => ({
      fact,
      weight: table === "raw" ? fact.count : 1,
      spentPerRow: table === "raw" ? fact.spentCredits / fact.count : fact.spentCredits,
    }))
    .filter((row) => statement.where === null || truthy(evaluate(statement.where, { ...base, row })));
  rows.sort((a, b) => a.fact.timeMs - b.fact.timeMs || (a.fact.keyId < b.fact.keyId ? -1 : 1));
  const name = (item: SelectItem) => item.alias ?? renderExpr(item.expr);
  const aggregating =
    statement.groupBy.length > 0 ||
    statement.items.some((item) => hasAggregate(item.expr)) ||
    statement.orderBy.some((order) => hasAggregate(order.expr));
  if (!aggregating) return listRows(statement, rows, base, limit, name);

  const groupExprs = statement.groupBy.map((expr) => resolveAlias(expr, statement.items));
  for (const item of statement.items) {
    if (hasAggregate(item.expr) || !hasColumn(item.expr)) continue;
    if (!groupExprs.some((expr) => sameExpr(expr, item.expr)))
      throw invalidQuery(`'${renderExpr(item.expr)}' must be in GROUP BY or inside an aggregate function`);
  }
  const groups = new Map<string, Row[]>();
  if (groupExprs.length === 0) groups.set("", rows);
  for (const row of groupExprs.length === 0 ? [] : rows) {
    const key = groupExprs.map((expr) => valueKey(evaluate(expr, { ...base, row }))).join("\u0000");
    const group = groups.get(key);
    if (group === undefined) groups.set(key, [row]);
    else group.push(row);
  }
  const answers = [...groups.values()].map((group) => {
    const env: Env = { ...base, row: group[0] ?? null, group };
    const values = statement.items.map((item) => evaluate(item.expr, env));
    return { env, values };
  });
  sortBy(
    answers,
    statement.orderBy.map((order) => (answer) => {
      const aliased =
        order.expr.k === "col"
          ? statement.items.findIndex((item) => item.alias === (order.expr as { name: string }).name)
          : -1;
      return aliased >= 0 ? answer.values[aliased]! : evaluate(order.expr, answer.env);
    }),
    statement.orderBy.map((order) => order.descending),
  );
  return answers.slice(0, limit).map((answer) => {
    const row: AnalyticsRow = {};
    statement.items.forEach((item, i) => (row[name(item)] = output(answer.values[i]!, table)));
    return row;
  });
}

/** A query without aggregates lists rows (the raw table's facts expand into their rows, up to the limit). */
function listRows(
  statement: SelectStatement,
  rows: Row[],
  base: Env,
  limit: number,
  name: (item: SelectItem) => string,
): AnalyticsRow[] {
  sortBy(
    rows,
    statement.orderBy.map((order) => (row) => evaluate(resolveAlias(order.expr, statement.items), { ...base, row })),
    statement.orderBy.map((order) => order.descending),
  );
  const answer: AnalyticsRow[] = [];
  for (const row of rows) {
    const spent = row.fact.spentCredits;
    for (let i = 0; i < row.weight && answer.length < limit; i++) {
      // The raw table's rows of one fact share its spent credits: whole numbers summing to it.
      const spentPerRow =
        base.table === "raw" ? Math.floor(spent / row.weight) + (i < spent % row.weight ? 1 : 0) : row.spentPerRow;
      const env: Env = { ...base, row: { ...row, spentPerRow } };
      const out: AnalyticsRow = {};
      for (const item of statement.items) out[name(item)] = output(evaluate(item.expr, env), base.table);
      answer.push(out);
    }
    if (answer.length >= limit) break;
  }
  return answer;
}
