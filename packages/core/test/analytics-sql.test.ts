// The v2 analytics SQL subset over hourly series: the query shapes of upstream's documentation
// answered from keyraft's series, and every refusal a 400 type (never an exception).
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { VerificationAggregator } from "../src/analytics/aggregator.js";
import { emptyCounts } from "../src/analytics/counts.js";
import { mergeVerificationSeries } from "../src/analytics/query.js";
import { analyticsSqlFilter, type AnalyticsSqlOptions } from "../src/analytics/sql/evaluate.js";
import { parseAnalyticsQuery, runAnalyticsQuery } from "../src/analytics/sql/query.js";
import type { OutcomeCounts, VerificationSeries } from "../src/analytics/types.js";

const hour = 3_600_000;
const day = 24 * hour;
const nowMs = Date.UTC(2026, 0, 20, 12, 30);
const options: AnalyticsSqlOptions = { nowMs, retentionMs: 90 * day, rowsMax: 10_000 };

function series(
  hourMs: number,
  keyId: string,
  apiId: string,
  counts: Partial<OutcomeCounts>,
  extra: Partial<VerificationSeries> = {},
): VerificationSeries {
  return {
    hourMs: Math.floor(hourMs / hour) * hour,
    keyId,
    apiId,
    identityId: null,
    externalId: null,
    tags: [],
    counts: { ...emptyCounts(), ...counts },
    spentCredits: 0,
    ...extra,
  };
}

const fixture: VerificationSeries[] = [
  series(
    nowMs - 2 * hour,
    "key_a",
    "api_1",
    { valid: 3, rateLimited: 1 },
    { identityId: "id_1", externalId: "acme", tags: ["path=/api/users"], spentCredits: 5 },
  ),
  series(nowMs - 2 * day, "key_a", "api_1", { valid: 2, usageExceeded: 1 }, { identityId: "id_1", externalId: "acme" }),
  series(nowMs - hour, "key_b", "api_2", { valid: 4, expired: 1 }, { tags: ["path=/x", "region=eu"] }),
  series(nowMs - 40 * day, "key_c", "api_1", { valid: 7 }),
];

function run(query: string, data: readonly VerificationSeries[] = fixture) {
  const parsed = parseAnalyticsQuery(query);
  if (!parsed.ok) return parsed;
  return runAnalyticsQuery(parsed.statement, data, options);
}

function rows(query: string, data?: readonly VerificationSeries[]) {
  const answer = run(query, data);
  if (!answer.ok) throw new Error(`${answer.type}: ${answer.message}`);
  return answer.rows;
}

function refusal(query: string) {
  const answer = run(query);
  if (answer.ok) throw new Error(`expected a refusal, got ${JSON.stringify(answer.rows)}`);
  return answer;
}

describe("analytics SQL: upstream's documented query shapes", () => {
  it("counts verifications in the raw and the daily table", () => {
    expect(rows("SELECT COUNT(*) as total FROM key_verifications_v1 WHERE time >= now() - INTERVAL 7 DAY")).toEqual([
      { total: 12 },
    ]);
    expect(
      rows(
        "SELECT SUM(count) as total_verifications FROM key_verifications_per_day_v1 WHERE time >= now() - INTERVAL 7 DAY",
      ),
    ).toEqual([{ total_verifications: 12 }]);
    expect(rows("SELECT COUNT(*) FROM key_verifications_v1")).toEqual([{ "count()": 19 }]);
  });

  it("groups by outcome and orders by an alias that shadows a column", () => {
    const answer = rows(
      "SELECT outcome, SUM(count) as count FROM key_verifications_per_day_v1 WHERE time >= now() - INTERVAL 30 DAY GROUP BY outcome ORDER BY count DESC",
    );
    expect(answer[0]).toEqual({ outcome: "VALID", count: 9 });
    expect(
      answer
        .slice(1)
        .map((row) => row["outcome"])
        .sort(),
    ).toEqual(["EXPIRED", "RATE_LIMITED", "USAGE_EXCEEDED"]);
  });

  it("sumIf per outcome, overall and per key", () => {
    expect(
      rows(
        "SELECT sumIf(count, outcome = 'VALID') AS valid, sumIf(count, outcome = 'RATE_LIMITED') AS rate_limited, SUM(count) AS total FROM key_verifications_per_day_v1 WHERE time >= now() - INTERVAL 30 DAY",
      ),
    ).toEqual([{ valid: 9, rate_limited: 1, total: 12 }]);
    expect(
      rows(
        "SELECT key_id, sumIf(count, outcome = 'VALID') AS valid, SUM(count) AS total FROM key_verifications_per_day_v1 WHERE time >= now() - INTERVAL 30 DAY GROUP BY key_id ORDER BY total DESC LIMIT 100",
      ),
    ).toEqual([
      { key_id: "key_a", valid: 5, total: 7 },
      { key_id: "key_b", valid: 4, total: 5 },
    ]);
  });

  it("time buckets come out as RFC 3339 on the aggregated tables and as unix ms on the raw table", () => {
    expect(
      rows(
        "SELECT time as date, SUM(count) as verifications FROM key_verifications_per_day_v1 WHERE time >= now() - INTERVAL 30 DAY GROUP BY date ORDER BY date",
      ),
    ).toEqual([
      { date: "2026-01-18T00:00:00Z", verifications: 3 },
      { date: "2026-01-20T00:00:00Z", verifications: 9 },
    ]);
    expect(
      rows(
        "SELECT time as hour, outcome, SUM(count) as verifications FROM key_verifications_per_hour_v1 WHERE time >= toStartOfDay(now()) GROUP BY time, outcome ORDER BY time, outcome",
      ),
    ).toEqual([
      { hour: "2026-01-20T10:00:00Z", outcome: "RATE_LIMITED", verifications: 1 },
      { hour: "2026-01-20T10:00:00Z", outcome: "VALID", verifications: 3 },
      { hour: "2026-01-20T11:00:00Z", outcome: "EXPIRED", verifications: 1 },
      { hour: "2026-01-20T11:00:00Z", outcome: "VALID", verifications: 4 },
    ]);
    expect(
      rows(
        "SELECT toStartOfMonth(time) AS month, COUNT(*) AS n FROM key_verifications_v1 GROUP BY month ORDER BY month",
      ),
    ).toEqual([
      { month: Date.UTC(2025, 11, 1), n: 7 },
      { month: Date.UTC(2026, 0, 1), n: 12 },
    ]);
  });

  it("external ids, CASE WHEN inside SUM, and `!= ''`", () => {
    expect(
      rows(
        "SELECT external_id, SUM(count) as total_verifications, SUM(CASE WHEN outcome = 'VALID' THEN count ELSE 0 END) as successful FROM key_verifications_per_day_v1 WHERE time >= now() - INTERVAL 30 DAY AND external_id != '' GROUP BY external_id ORDER BY total_verifications DESC LIMIT 10",
      ),
    ).toEqual([{ external_id: "acme", total_verifications: 7, successful: 5 }]);
  });

  it("keyspace filters and groups (ks_ + the api id's part after api_)", () => {
    expect(rows("SELECT COUNT(*) FROM key_verifications_v1 WHERE key_space_id = 'ks_1'")).toEqual([{ "count()": 14 }]);
    expect(rows("SELECT COUNT(*) AS n FROM key_verifications_v1 WHERE key_space_id IN ('ks_1', 'ks_2')")).toEqual([
      { n: 19 },
    ]);
    expect(rows("SELECT COUNT(*) AS n FROM key_verifications_v1 WHERE external_id = 'acme'")).toEqual([{ n: 7 }]);
    expect(
      rows(
        "SELECT key_space_id, COUNT(*) as count FROM key_verifications_v1 GROUP BY key_space_id ORDER BY key_space_id",
      ),
    ).toEqual([
      { key_space_id: "ks_1", count: 14 },
      { key_space_id: "ks_2", count: 5 },
    ]);
  });

  it("tag predicates", () => {
    expect(rows("SELECT COUNT(*) AS n FROM key_verifications_v1 WHERE has(tags, 'path=/api/users')")).toEqual([
      { n: 4 },
    ]);
    expect(rows("SELECT COUNT(*) AS n FROM key_verifications_v1 WHERE hasAny(tags, ['path=/x', 'nope'])")).toEqual([
      { n: 5 },
    ]);
    expect(rows("SELECT COUNT(*) AS n FROM key_verifications_v1 WHERE hasAll(tags, ['path=/x', 'region=eu'])")).toEqual(
      [{ n: 5 }],
    );
    expect(rows("SELECT COUNT(*) AS n FROM key_verifications_v1 WHERE hasAll(tags, ['path=/x', 'nope'])")).toEqual([
      { n: 0 },
    ]);
  });

  it("the gateway query shape answers no rows (keyraft has no gateway source)", () => {
    expect(
      rows(
        "SELECT app_id, SUM(count) AS verifications FROM key_verifications_per_day_v1 WHERE source = 'gateway' AND app_id != '' AND time >= now() - INTERVAL 30 DAY GROUP BY app_id ORDER BY verifications DESC",
      ),
    ).toEqual([]);
  });

  it("only aggregates and nothing matched: exactly one row of zeros; spent credits are summed", () => {
    expect(
      rows(
        "SELECT COUNT(*) AS n, SUM(spent_credits) AS spent, uniq(key_id) AS keys FROM key_verifications_v1 WHERE outcome = 'DISABLED'",
      ),
    ).toEqual([{ n: 0, spent: 0, keys: 0 }]);
    expect(rows("SELECT SUM(spent_credits) AS spent, uniqExact(key_id) AS keys FROM key_verifications_v1")).toEqual([
      { spent: 5, keys: 3 },
    ]);
    expect(rows("SELECT SUM(spent_credits) AS spent FROM key_verifications_per_month_v1")).toEqual([{ spent: 5 }]);
    expect(rows("SELECT countIf(outcome = 'VALID') AS valid FROM key_verifications_v1")).toEqual([{ valid: 16 }]);
  });

  it("a query without aggregates lists the raw table's rows, one per verification, up to LIMIT", () => {
    const listed = rows(
      "SELECT key_id, time, spent_credits FROM key_verifications_v1 WHERE key_id = 'key_a' AND outcome = 'VALID' AND time >= now() - INTERVAL 1 DAY",
    );
    expect(listed).toHaveLength(3);
    expect(listed.every((row) => row["time"] === Math.floor((nowMs - 2 * hour) / hour) * hour)).toBe(true);
    expect(listed.reduce((sum, row) => sum + (row["spent_credits"] as number), 0)).toBe(5);
    expect(rows("SELECT key_id FROM key_verifications_v1 ORDER BY key_id DESC LIMIT 2")).toEqual([
      { key_id: "key_c" },
      { key_id: "key_c" },
    ]);
  });

  it("time bounds: BETWEEN, dates as text, unix ms, toDateTime and fromUnixTimestamp64Milli", () => {
    const from = "2026-01-20 00:00:00";
    expect(rows(`SELECT COUNT(*) AS n FROM key_verifications_v1 WHERE time BETWEEN '${from}' AND now()`)).toEqual([
      { n: 9 },
    ]);
    expect(rows(`SELECT COUNT(*) AS n FROM key_verifications_v1 WHERE time >= toDateTime('${from}')`)).toEqual([
      { n: 9 },
    ]);
    expect(rows(`SELECT COUNT(*) AS n FROM key_verifications_v1 WHERE time >= ${Date.UTC(2026, 0, 20)}`)).toEqual([
      { n: 9 },
    ]);
    expect(
      rows(
        `SELECT COUNT(*) AS n FROM key_verifications_per_day_v1 WHERE time >= fromUnixTimestamp64Milli(${Date.UTC(2026, 0, 18)}) AND time < today()`,
      ),
    ).toEqual([{ n: 2 }]);
  });

  it("merged series of several nodes answer like one node's", () => {
    const a = new VerificationAggregator();
    const b = new VerificationAggregator();
    for (let i = 0; i < 5; i++) {
      const target = i % 2 === 0 ? a : b;
      target.record({
        timeMs: nowMs - hour,
        keyId: "key_a",
        apiId: "api_1",
        identityId: null,
        externalId: null,
        outcome: "VALID",
        tags: [],
        spentCredits: 2,
      });
    }
    const filter = { startMs: 0, endMs: nowMs };
    const merged = mergeVerificationSeries(a.select(filter), b.select(filter));
    expect(rows("SELECT COUNT(*) AS n, SUM(spent_credits) AS spent FROM key_verifications_v1", merged)).toEqual([
      { n: 5, spent: 10 },
    ]);
  });

  it("the fetch filter carries the scope and the lower time bound", () => {
    const parsed = parseAnalyticsQuery(
      "SELECT COUNT(*) FROM key_verifications_v1 WHERE outcome = 'VALID' AND time >= now() - INTERVAL 1 DAY",
    );
    if (!parsed.ok) throw new Error(parsed.message);
    const filter = analyticsSqlFilter(parsed.statement, ["api_1"], options);
    expect(filter.apiIds).toEqual(["api_1"]);
    expect(filter.startMs).toBe(Math.floor((nowMs - day) / hour) * hour);
    expect(analyticsSqlFilter(parsed.statement, null, options).apiIds).toBeUndefined();
  });
});

describe("analytics SQL: refusals", () => {
  it("tables keyraft does not keep name the ones it does", () => {
    for (const table of ["system.tables", "default.key_verifications_raw_v2", "key_verifications"]) {
      const answer = refusal(`SELECT COUNT(*) FROM ${table}`);
      expect(answer.type).toBe("invalid_analytics_table");
      expect(answer.message).toContain(`'${table}'`);
      expect(answer.message).toContain("key_verifications_per_day_v1");
    }
    const minute = refusal("SELECT SUM(count) FROM key_verifications_per_minute_v1");
    expect(minute).toMatchObject({ type: "invalid_analytics_table" });
    expect(minute.message).toContain("not available in keyraft");
  });

  it("statements other than one SELECT", () => {
    expect(refusal("DELETE FROM key_verifications_v1")).toMatchObject({
      type: "invalid_analytics_query_type",
      message: "Only SELECT queries are allowed",
    });
    expect(refusal("   ")).toMatchObject({ type: "invalid_analytics_query" });
    expect(refusal("SELECT COUNT(*) FROM key_verifications_v1; SELECT 1 FROM key_verifications_v1")).toMatchObject({
      type: "invalid_analytics_query",
      message: "Only one statement is allowed",
    });
    expect(refusal("SELECT COUNT(* FROM key_verifications_v1").message).toContain("Invalid SQL syntax");
    expect(refusal("SELECT COUNT(*) FROM key_verifications_v1 SETTINGS max_threads = 1").message).toContain("SETTINGS");
    expect(
      refusal(`SELECT COUNT(*) FROM key_verifications_v1 WHERE key_id = '${"x".repeat(17_000)}'`).message,
    ).toContain("maximum length");
  });

  it("constructs outside the subset are named", () => {
    const cases: [string, string][] = [
      ["WITH x AS (SELECT 1) SELECT COUNT(*) FROM x", "WITH"],
      ["SELECT COUNT(*) FROM key_verifications_v1 JOIN key_verifications_per_day_v1 ON 1 = 1", "JOIN"],
      ["SELECT key_id FROM key_verifications_v1 UNION ALL SELECT key_id FROM key_verifications_v1", "UNION"],
      ["SELECT key_id, COUNT(*) AS n FROM key_verifications_v1 GROUP BY key_id HAVING n > 1", "HAVING"],
      ["SELECT COUNT(*) FROM (SELECT * FROM key_verifications_v1)", "subquery"],
      [
        "SELECT COUNT(*) FROM key_verifications_v1 WHERE key_id IN (SELECT key_id FROM key_verifications_v1)",
        "subquery",
      ],
      ["SELECT key_id, COUNT(*) OVER (PARTITION BY key_id) FROM key_verifications_v1", "window"],
      ["SELECT DISTINCT key_id FROM key_verifications_v1", "DISTINCT"],
    ];
    for (const [query, named] of cases) {
      const answer = refusal(query);
      expect(answer.type, query).toBe("invalid_analytics_query");
      expect(answer.message, query).toContain(named);
    }
  });

  it("columns and functions", () => {
    expect(refusal("SELECT COUNT(*) FROM key_verifications_v1 WHERE nope = 'x'")).toMatchObject({
      type: "invalid_analytics_query",
    });
    expect(refusal("SELECT COUNT(*) FROM key_verifications_v1 WHERE nope = 'x'").message).toContain("Unknown");
    expect(refusal("SELECT latency FROM key_verifications_v1").message).toContain("Unknown column 'latency'");
    expect(refusal("SELECT SUM(count) FROM key_verifications_v1").message).toContain("Unknown column 'count'");
    expect(refusal("SELECT avg(spent_credits) FROM key_verifications_v1")).toMatchObject({
      type: "invalid_analytics_function",
    });
    expect(refusal("SELECT avg(spent_credits) FROM key_verifications_v1").message).toContain(
      "not supported by keyraft",
    );
    expect(refusal("SELECT sleep(3) FROM key_verifications_v1")).toMatchObject({
      type: "invalid_analytics_function",
      message: "Function 'sleep' is not allowed",
    });
    expect(refusal("SELECT COUNT(*) FROM numbers(10)")).toMatchObject({ type: "invalid_analytics_function" });
    expect(refusal("SELECT key_id, COUNT(*) FROM key_verifications_v1").message).toContain("GROUP BY");
    expect(refusal("SELECT COUNT(*) FROM key_verifications_v1 WHERE COUNT(*) > 1").message).toContain("not allowed");
  });

  it("time bounds older than the retention", () => {
    for (const where of [
      "time >= now() - INTERVAL 100 DAY",
      "time BETWEEN '2025-01-01' AND now()",
      "time > toDate('2025-06-01')",
      "now() - INTERVAL 4 MONTH <= time",
    ]) {
      expect(refusal(`SELECT COUNT(*) FROM key_verifications_v1 WHERE ${where}`), where).toMatchObject({
        type: "query_range_exceeds_retention",
        message: "Cannot query data older than 90 days. Narrow the time range to the last 90 days.",
      });
    }
    expect(rows("SELECT COUNT(*) AS n FROM key_verifications_v1 WHERE time >= now() - INTERVAL 89 DAY")).toEqual([
      { n: 19 },
    ]);
  });

  it("random input is refused or answered, never thrown", () => {
    const seed = Date.now() % 1_000_000;
    console.log(`analytics SQL fuzz seed ${seed}`);
    const words = [
      "SELECT",
      "FROM",
      "WHERE",
      "GROUP BY",
      "ORDER BY",
      "LIMIT",
      "AND",
      "OR",
      "NOT",
      "IN",
      "BETWEEN",
      "COUNT(*)",
      "SUM(count)",
      "sumIf(count, outcome = 'VALID')",
      "key_id",
      "time",
      "tags",
      "count",
      "key_verifications_v1",
      "key_verifications_per_day_v1",
      "now()",
      "INTERVAL 1 DAY",
      "'x'",
      "1",
      "(",
      ")",
      ",",
      "=",
      "-",
      "*",
      "AS",
      "CASE WHEN",
      "THEN",
      "END",
      "has(tags, 'a')",
      "[",
      "]",
    ];
    const soup = fc.array(fc.constantFrom(...words), { maxLength: 14 }).map((parts) => parts.join(" "));
    fc.assert(
      fc.property(
        fc.oneof(
          soup,
          soup.map((text) => `SELECT ${text}`),
          fc.string({ maxLength: 60 }),
        ),
        (query) => {
          const answer = run(query);
          expect(typeof answer.ok).toBe("boolean");
          if (!answer.ok) expect(answer.message.length).toBeGreaterThan(0);
        },
      ),
      { seed, numRuns: 1500 },
    );
  });
});
