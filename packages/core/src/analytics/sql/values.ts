// Values of the analytics SQL subset and the operations on them: comparison, arithmetic, time.

import { dayMs, dayStartMs, hourStartMs, monthStartMs } from "../time.js";
import { invalidQuery } from "./errors.js";
import type { IntervalUnit } from "./parser.js";

/** A point in time (unix ms); rendered per table (ms on the raw table, RFC 3339 elsewhere). */
export interface TimeValue {
  t: "time";
  ms: number;
}
/** A span: fixed milliseconds plus calendar months (MONTH, QUARTER, YEAR). */
export interface IntervalValue {
  t: "interval";
  ms: number;
  months: number;
}
export type Value = string | number | boolean | readonly string[] | TimeValue | IntervalValue;

export const timeValue = (ms: number): TimeValue => ({ t: "time", ms });

export function isTime(value: Value): value is TimeValue {
  return typeof value === "object" && !Array.isArray(value) && (value as TimeValue).t === "time";
}

export function isInterval(value: Value): value is IntervalValue {
  return typeof value === "object" && !Array.isArray(value) && (value as IntervalValue).t === "interval";
}

const unitMs: Record<IntervalUnit, { ms: number; months: number }> = {
  SECOND: { ms: 1000, months: 0 },
  MINUTE: { ms: 60_000, months: 0 },
  HOUR: { ms: 3_600_000, months: 0 },
  DAY: { ms: dayMs, months: 0 },
  WEEK: { ms: 7 * dayMs, months: 0 },
  MONTH: { ms: 0, months: 1 },
  QUARTER: { ms: 0, months: 3 },
  YEAR: { ms: 0, months: 12 },
};

export function intervalOf(amount: Value, unit: IntervalUnit): IntervalValue {
  if (typeof amount !== "number" || !Number.isSafeInteger(amount)) throw invalidQuery("INTERVAL takes a whole number");
  const span = unitMs[unit];
  return { t: "interval", ms: amount * span.ms, months: amount * span.months };
}

function addMonths(ms: number, months: number): number {
  const at = new Date(ms);
  const target = Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + months, 1);
  const end = new Date(target);
  const lastDay = new Date(Date.UTC(end.getUTCFullYear(), end.getUTCMonth() + 1, 0)).getUTCDate();
  return Date.UTC(end.getUTCFullYear(), end.getUTCMonth(), Math.min(at.getUTCDate(), lastDay)) + (ms - dayStartMs(ms));
}

export function shiftTime(time: TimeValue, interval: IntervalValue, sign: 1 | -1): TimeValue {
  return timeValue(addMonths(time.ms, sign * interval.months) + sign * interval.ms);
}

const datePattern = /^(\d{4})-(\d{2})-(\d{2})(?:[ T](\d{2}):(\d{2}):(\d{2})(?:\.\d+)?Z?)?$/;

/** 'YYYY-MM-DD' or 'YYYY-MM-DD hh:mm:ss' (UTC) as unix ms. */
export function parseDateText(text: string): number {
  const match = datePattern.exec(text.trim());
  if (match === null) throw invalidQuery(`'${text}' is not a date: write 'YYYY-MM-DD' or 'YYYY-MM-DD hh:mm:ss'`);
  const [, y, mo, d, h, mi, s] = match;
  const ms = Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h ?? 0), Number(mi ?? 0), Number(s ?? 0));
  if (!Number.isFinite(ms)) throw invalidQuery(`'${text}' is not a date`);
  return ms;
}

/** A value used as a point in time: a time, unix ms, or a date text. */
export function asTimeMs(value: Value, what: string): number {
  if (isTime(value)) return value.ms;
  if (typeof value === "number") return value;
  if (typeof value === "string") return parseDateText(value);
  throw invalidQuery(`${what} takes a time`);
}

export type TimeBucket = "hour" | "day" | "week" | "month";

export function startOf(bucket: TimeBucket, ms: number): number {
  switch (bucket) {
    case "hour":
      return hourStartMs(ms);
    case "day":
      return dayStartMs(ms);
    case "week":
      // Weeks start on Sunday (ClickHouse's toStartOfWeek default mode).
      return dayStartMs(ms) - new Date(ms).getUTCDay() * dayMs;
    case "month":
      return monthStartMs(ms);
    default: {
      const unreachable: never = bucket;
      throw new Error(`startOf: unknown bucket ${String(unreachable)}`);
    }
  }
}

export function truthy(value: Value): boolean {
  if (typeof value === "boolean") return value;
  if (typeof value === "number") return value !== 0;
  throw invalidQuery("a condition must be a comparison or a boolean function");
}

export function asNumber(value: Value, what: string): number {
  if (typeof value === "number") return value;
  if (typeof value === "boolean") return value ? 1 : 0;
  throw invalidQuery(`${what} takes a number`);
}

/** -1, 0 or 1; times compare with unix ms and date texts. Throws for values of different kinds. */
export function compareValues(a: Value, b: Value): number {
  if (isTime(a) || isTime(b)) {
    const left = asTimeMs(a, "a comparison with time");
    const right = asTimeMs(b, "a comparison with time");
    return Math.sign(left - right);
  }
  if (typeof a === "boolean" || typeof b === "boolean" || (typeof a === "number" && typeof b === "number")) {
    return Math.sign(asNumber(a, "a comparison") - asNumber(b, "a comparison"));
  }
  if (typeof a === "string" && typeof b === "string") return a < b ? -1 : a > b ? 1 : 0;
  if (Array.isArray(a) && Array.isArray(b)) {
    const left = JSON.stringify(a);
    const right = JSON.stringify(b);
    return left < right ? -1 : left > right ? 1 : 0;
  }
  throw invalidQuery(`cannot compare ${describe(a)} with ${describe(b)}`);
}

function describe(value: Value): string {
  if (Array.isArray(value)) return "an array";
  if (isInterval(value)) return "an interval";
  return typeof value === "string" ? `the string '${value}'` : `the ${typeof value} ${String(value)}`;
}

/** A map key for grouping and uniq. */
export function valueKey(value: Value): string {
  return JSON.stringify(isTime(value) ? ["t", value.ms] : value);
}
