// GET /metrics: the Prometheus text parses, and its counters move with the requests; the token
// guards it; the plain counters stay bounded whatever the traffic.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GatewayMetrics, metricsApisMax, RaftTimings } from "@keyraft/gateway";
import { MemoryStorage } from "@keyraft/raft";
import { harness, type Harness } from "./app-harness.js";
import { parsePrometheusText } from "./prometheus-text.js";

const metricsToken = "metrics_token_0123456789";

describe("GET /metrics", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await harness({ deps: { metrics: new GatewayMetrics(), metricsEndpoint: { token: metricsToken } } });
  });
  afterAll(async () => {
    await h.app.close();
  });

  const scrape = async () => {
    const response = await h.get("/metrics", metricsToken);
    expect(response.statusCode).toBe(200);
    expect(response.headers["content-type"]).toMatch(/^text\/plain; version=0\.0\.4/);
    return parsePrometheusText(response.body);
  };

  it("refuses a scrape without the token, or with a wrong one", async () => {
    expect((await h.get("/metrics", null)).statusCode).toBe(401);
    expect((await h.get("/metrics", "metrics_token_0123456788")).statusCode).toBe(401);
    expect((await h.get("/metrics", "short")).statusCode).toBe(401);
  });

  it("counts verifications by api and code, responses by class and latency by route", async () => {
    const { apiId, key } = await h.createKey({});
    const before = await scrape();
    expect(before.types.get("keyraft_verifications_total")).toBe("counter");
    expect(before.types.get("keyraft_http_request_duration_seconds")).toBe("histogram");
    expect(before.value("keyraft_verifications_total", { api: apiId, code: "VALID" })).toBeUndefined();
    const routeCountBefore =
      before.value("keyraft_http_request_duration_seconds_count", { route: "/v1/keys.verifyKey" }) ?? 0;
    const okBefore = before.value("keyraft_http_responses_total", { class: "2xx" }) ?? 0;

    for (let i = 0; i < 3; i++) await h.post("/v1/keys.verifyKey", { key }, null);
    await h.post("/v1/keys.verifyKey", { key: "no_such_key_at_all" }, null);
    await h.post("/v1/keys.updateKey", { keyId: (await h.createKey({}, apiId)).keyId, enabled: false });

    const after = await scrape();
    expect(after.value("keyraft_verifications_total", { api: apiId, code: "VALID" })).toBe(3);
    expect(after.value("keyraft_verifications_total", { api: apiId, code: "DISABLED" })).toBe(0);
    expect(after.value("keyraft_verifications_total", { api: "unknown", code: "NOT_FOUND" })).toBe(1);
    expect(after.value("keyraft_http_request_duration_seconds_count", { route: "/v1/keys.verifyKey" })).toBe(
      routeCountBefore + 4,
    );
    const inf = after.value("keyraft_http_request_duration_seconds_bucket", {
      route: "/v1/keys.verifyKey",
      le: "+Inf",
    });
    expect(inf).toBe(routeCountBefore + 4);
    expect(after.value("keyraft_http_responses_total", { class: "2xx" })).toBeGreaterThanOrEqual(okBefore + 6);
  });

  it("counts rate-limit answers and 4xx responses", async () => {
    const body = { namespace: "metrics-ns", identifier: "user-1", limit: 1, duration: 60_000 };
    expect((await h.post("/v1/ratelimits.limit", body)).json()).toMatchObject({ success: true });
    expect((await h.post("/v1/ratelimits.limit", body)).json()).toMatchObject({ success: false });
    const fourBefore = (await scrape()).value("keyraft_http_responses_total", { class: "4xx" }) ?? 0;
    expect((await h.post("/v1/keys.createKey", { apiId: 5 })).statusCode).toBe(400);
    const text = await scrape();
    expect(text.value("keyraft_ratelimit_decisions_total", { decision: "admitted" })).toBe(1);
    expect(text.value("keyraft_ratelimit_decisions_total", { decision: "refused" })).toBe(1);
    expect(text.value("keyraft_ratelimit_decisions_total", { decision: "forwarded" })).toBe(0);
    expect(text.value("keyraft_http_responses_total", { class: "4xx" })).toBe(fourBefore + 1);
  });

  it("includes the process metrics and the event-loop delay", async () => {
    const text = await scrape();
    expect(text.value("process_cpu_user_seconds_total")).toBeGreaterThanOrEqual(0);
    expect(text.types.get("nodejs_eventloop_lag_p99_seconds")).toBe("gauge");
  });
});

describe("metrics sources", () => {
  it("reads Raft status, counters and storage timings at scrape time", async () => {
    const metrics = new GatewayMetrics({ defaultMetrics: false });
    const timings = new RaftTimings();
    const storage = new MemoryStorage();
    timings.observeStorage(storage);
    await storage.append(
      [{ index: 1, term: 1, type: "normal", data: new Uint8Array(1) }],
      { term: 1, vote: "", commit: 0 },
      true,
    );
    timings.snapshotStarted();
    await storage.createSnapshot(1, { voters: ["n1"], learners: [] }, new Uint8Array(1234));
    let applied = 7;
    metrics.attach({
      cluster: {
        status: () => ({
          role: "leader",
          term: 3,
          leader: "n1",
          commitIndex: 9,
          appliedIndex: applied,
          lastIndex: 9,
          snapshotIndex: 1,
          stalenessMs: 250,
          stale: false,
          pendingWrites: 0,
        }),
        raftCounters: () => ({ leaderChanges: 2, voteRequests: 4, entriesApplied: applied, messagesSent: 10 }) as never,
        raftTimings: timings,
      },
      creditLeases: () => ({ heldLeases: 5, granted: 6, forfeited: 1, settled: 2, journalWrites: 9, leased: 3 }),
      rateLimitPlacements: () => ({ forwarded: 4, unavailable: 1 }),
      storeWrites: () => ({ batches: 7, puts: 11, deletes: 3 }),
    });
    let text = parsePrometheusText(await metrics.text());
    expect(text.value("keyraft_raft_role", { role: "leader" })).toBe(1);
    expect(text.value("keyraft_raft_role", { role: "follower" })).toBe(0);
    expect(text.value("keyraft_raft_term")).toBe(3);
    expect(text.value("keyraft_raft_apply_lag_entries")).toBe(2);
    expect(text.value("keyraft_staleness_seconds")).toBe(0.25);
    expect(text.value("keyraft_raft_leader_changes_total")).toBe(2);
    expect(text.value("keyraft_raft_append_duration_seconds_count", { sync: "true" })).toBe(1);
    expect(text.value("keyraft_raft_append_duration_seconds_count", { sync: "false" })).toBe(0);
    expect(text.value("keyraft_raft_entries_per_append_bucket", { le: "1" })).toBe(1);
    expect(text.value("keyraft_raft_snapshot_duration_seconds_count")).toBe(1);
    expect(text.value("keyraft_raft_snapshot_bytes")).toBe(1234);
    expect(text.value("keyraft_credit_leases_held")).toBe(5);
    expect(text.value("keyraft_credit_leases_forfeited_total")).toBe(1);
    expect(text.value("keyraft_credit_lease_journal_writes_total")).toBe(9);
    expect(text.value("keyraft_ratelimit_decisions_total", { decision: "unavailable" })).toBe(1);
    expect(text.value("keyraft_store_batches_total")).toBe(7);
    expect(text.value("keyraft_store_operations_total", { op: "put" })).toBe(11);
    expect(text.value("keyraft_store_operations_total", { op: "delete" })).toBe(3);
    applied = 9;
    text = parsePrometheusText(await metrics.text());
    expect(text.value("keyraft_raft_apply_lag_entries")).toBe(0);

    // The Grafana dashboard in docs/ asks only for series a node exposes.
    metrics.verified("api_x", "VALID");
    metrics.responded("/v1/liveness", 200, 1);
    text = parsePrometheusText(await metrics.text());
    const exposed = new Set(text.samples.map((sample) => sample.name));
    const dashboard = readFileSync(
      fileURLToPath(new URL("../../../docs/grafana/keyraft.json", import.meta.url)),
      "utf8",
    );
    const asked = new Set(dashboard.match(/keyraft_[a-z_]+/g) ?? []);
    asked.delete("keyraft_raft_term"); // also the job variable's query
    expect(asked.size).toBeGreaterThan(15);
    for (const name of asked) expect(exposed.has(name), name).toBe(true);
  });

  it(`keeps at most ${metricsApisMax} apis apart; the rest count as api="other"`, async () => {
    const metrics = new GatewayMetrics({ defaultMetrics: false });
    for (let i = 0; i < metricsApisMax + 50; i++) metrics.verified(`api_${i}`, "VALID");
    metrics.verified(`api_${metricsApisMax - 1}`, "VALID");
    const text = parsePrometheusText(await metrics.text());
    const apis = new Set(
      text.samples.filter((s) => s.name === "keyraft_verifications_total").map((s) => s.labels["api"]),
    );
    expect(apis.size).toBe(metricsApisMax + 1);
    expect(text.value("keyraft_verifications_total", { api: "other", code: "VALID" })).toBe(50);
    expect(text.value("keyraft_verifications_total", { api: `api_${metricsApisMax - 1}`, code: "VALID" })).toBe(2);
  });
});
