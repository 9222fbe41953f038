// Every metric of a node (GET /metrics): the plain counters the request path adds to, and the
// values read from the node's parts when Prometheus scrapes (Raft, staleness, credit leases, rate
// limits). Parts that a node lacks (a test app without a cluster) are simply not reported.
import type { VerifyCode } from "@keyraft/core";
import type { NodeMetrics, Role } from "@keyraft/raft";
import { collectDefaultMetrics, Registry } from "prom-client";
import { histogramSamples, register, scraped, type Sample } from "./exposition.js";
import { CountsByGroupAndCode, HistogramsByLabel, latencyBucketsSeconds } from "./plain.js";
import type { RaftTimings } from "./raft-timings.js";

/** Apis with their own verification series; verifications of further apis count under api="other". */
export const metricsApisMax = 100;
/** Routes with their own latency histogram (the app has fewer); later ones share route="other". */
export const metricsRoutesMax = 200;

export const verifyCodes: readonly VerifyCode[] = [
  "VALID",
  "NOT_FOUND",
  "FORBIDDEN",
  "USAGE_EXCEEDED",
  "RATE_LIMITED",
  "UNAUTHORIZED",
  "DISABLED",
  "INSUFFICIENT_PERMISSIONS",
  "EXPIRED",
];
const statusClasses = ["1xx", "2xx", "3xx", "4xx", "5xx"] as const;
const raftRoles: readonly Role[] = ["follower", "preCandidate", "candidate", "leader"];

/** What the metrics read from the cluster node at scrape time (cluster/cluster-node.ts). */
export interface ClusterMetricsSource {
  status(): {
    role: string;
    term: number;
    leader: string | null;
    commitIndex: number;
    appliedIndex: number;
    lastIndex: number;
    snapshotIndex: number;
    stalenessMs: number;
    stale: boolean;
    pendingWrites: number;
  };
  raftCounters(): NodeMetrics;
  readonly raftTimings: RaftTimings;
}

/** Counters of credit leases (counters/credits/credit-leases.ts status()). */
export type CreditLeaseStatus = Record<string, number>;

/** Where rate-limit checks went (counters/ratelimit/cluster-limits.ts). */
export interface RateLimitPlacements {
  forwarded: number;
  unavailable: number;
}

/** Synced writes to the node's database (store/level-db.ts storeWriteCounts). */
export interface StoreWriteSource {
  batches: number;
  puts: number;
  deletes: number;
}

export interface MetricsSources {
  cluster?: ClusterMetricsSource;
  storeWrites?: () => StoreWriteSource;
  creditLeases?: () => CreditLeaseStatus;
  rateLimitPlacements?: () => RateLimitPlacements;
}

export class GatewayMetrics {
  readonly registry = new Registry();
  /** Verifications by (api id, code): counted where the verification is decided. */
  readonly verifications = new CountsByGroupAndCode(verifyCodes, metricsApisMax);
  readonly latency = new HistogramsByLabel(latencyBucketsSeconds, metricsRoutesMax);
  /** Responses by status class, 1xx..5xx. */
  readonly statusClasses = new Float64Array(statusClasses.length);
  /** ratelimits.limit answers judged on this node. */
  readonly rateLimitAnswers = { admitted: 0, refused: 0 };
  private sources: MetricsSources = {};

  constructor(options: { defaultMetrics?: boolean } = {}) {
    // Process metrics: CPU, memory, handles, GC, and the event-loop delay (nodejs_eventloop_lag_*).
    if (options.defaultMetrics ?? true) collectDefaultMetrics({ register: this.registry });
    this.registerRequestMetrics();
    this.registerRateLimitMetrics();
    this.registerCreditMetrics();
    this.registerStoreMetrics();
    this.registerClusterMetrics();
  }

  /** Adds the node's parts to read at scrape time (main.ts, once they exist). */
  attach(sources: MetricsSources): void {
    this.sources = { ...this.sources, ...sources };
  }

  /** One verification decided here. */
  verified(apiId: string, code: VerifyCode): void {
    this.verifications.add(apiId, code);
  }

  /** One response sent: its matched route (undefined: none matched), status and duration. */
  responded(route: string | undefined, statusCode: number, durationMs: number): void {
    const slot = Math.floor(statusCode / 100) - 1;
    if (slot >= 0 && slot < statusClasses.length) this.statusClasses[slot]!++;
    this.latency.of(route ?? "unmatched").observe(durationMs / 1000);
  }

  rateLimitAnswered(success: boolean): void {
    if (success) this.rateLimitAnswers.admitted++;
    else this.rateLimitAnswers.refused++;
  }

  /** The text Prometheus scrapes. */
  text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  private registerRequestMetrics(): void {
    register(
      this.registry,
      scraped(
        "keyraft_verifications_total",
        `Key verifications decided on this node, by api and outcome code (at most ${metricsApisMax} apis; later ones count as api="other").`,
        "counter",
        () => {
          const samples: Sample[] = [];
          for (const [api, row] of this.verifications.rows)
            verifyCodes.forEach((code, slot) => samples.push({ labels: { api, code }, value: row[slot]! }));
          return samples;
        },
      ),
    );
    register(
      this.registry,
      scraped("keyraft_http_request_duration_seconds", "HTTP request latency by route.", "histogram", () => {
        const samples: Sample[] = [];
        for (const [route, histogram] of this.latency.byValue)
          samples.push(...histogramSamples("keyraft_http_request_duration_seconds", histogram, { route }));
        return samples;
      }),
    );
    register(
      this.registry,
      scraped("keyraft_http_responses_total", "HTTP responses by status class.", "counter", () =>
        statusClasses.map((statusClass, slot) => ({
          labels: { class: statusClass },
          value: this.statusClasses[slot]!,
        })),
      ),
    );
  }

  private registerRateLimitMetrics(): void {
    register(
      this.registry,
      scraped(
        "keyraft_ratelimit_decisions_total",
        "Rate-limit checks: admitted and refused (ratelimits.limit answers of this node), " +
          "forwarded to the node serving the limit, and unavailable (answered 503).",
        "counter",
        () => {
          const placements = this.sources.rateLimitPlacements?.() ?? { forwarded: 0, unavailable: 0 };
          return [
            { labels: { decision: "admitted" }, value: this.rateLimitAnswers.admitted },
            { labels: { decision: "refused" }, value: this.rateLimitAnswers.refused },
            { labels: { decision: "forwarded" }, value: placements.forwarded },
            { labels: { decision: "unavailable" }, value: placements.unavailable },
          ];
        },
      ),
    );
  }

  private registerCreditMetrics(): void {
    const credit = (name: string, help: string, type: "counter" | "gauge", field: string): void =>
      register(
        this.registry,
        scraped(name, help, type, () => {
          const value = this.sources.creditLeases?.()[field];
          return value === undefined ? [] : [{ labels: {}, value }];
        }),
      );
    credit("keyraft_credit_leases_held", "Credit leases this node holds now.", "gauge", "heldLeases");
    credit(
      "keyraft_credit_leases_granted_total",
      "Credit leases granted to this node (first and renewed).",
      "counter",
      "granted",
    );
    credit(
      "keyraft_credit_leases_forfeited_total",
      "Credit leases of this node the leader expired (forfeited).",
      "counter",
      "forfeited",
    );
    credit("keyraft_credit_leases_settled_total", "Credit leases of this node settled.", "counter", "settled");
    credit(
      "keyraft_credit_lease_journal_writes_total",
      "Records written to the lease journal.",
      "counter",
      "journalWrites",
    );
    credit("keyraft_credit_spends_leased_total", "Credit spends served from this node's leases.", "counter", "leased");
    credit(
      "keyraft_credit_spends_forwarded_total",
      "Credit spends forwarded to the key's owner.",
      "counter",
      "forwarded",
    );
    credit("keyraft_credit_spends_logged_total", "Credit spends decided on the replicated log.", "counter", "fallback");
    credit(
      "keyraft_credit_spends_journal_waited_total",
      "Credit spends from a lease answered only after a lease journal write (not yet covered on disk).",
      "counter",
      "journalWaited",
    );
  }

  private registerStoreMetrics(): void {
    // The node's own database (rate-limit reservations, the credit lease journal); the Raft log
    // has its own (keyraft_raft_*). The verify bench divides these by verifications per phase.
    register(
      this.registry,
      scraped(
        "keyraft_store_batches_total",
        "Synced (fsynced) batches written to the node's database: rate-limit reservations, the credit lease journal.",
        "counter",
        () => {
          const writes = this.sources.storeWrites?.();
          return writes === undefined ? [] : [{ labels: {}, value: writes.batches }];
        },
      ),
    );
    register(
      this.registry,
      scraped(
        "keyraft_store_operations_total",
        "Operations in those batches, by kind (put, delete).",
        "counter",
        () => {
          const writes = this.sources.storeWrites?.();
          return writes === undefined
            ? []
            : [
                { labels: { op: "put" }, value: writes.puts },
                { labels: { op: "delete" }, value: writes.deletes },
              ];
        },
      ),
    );
  }

  private registerClusterMetrics(): void {
    const fromStatus = (
      name: string,
      help: string,
      value: (status: ReturnType<ClusterMetricsSource["status"]>) => number,
    ): void =>
      register(
        this.registry,
        scraped(name, help, "gauge", () => {
          const cluster = this.sources.cluster;
          return cluster === undefined ? [] : [{ labels: {}, value: value(cluster.status()) }];
        }),
      );
    register(
      this.registry,
      scraped("keyraft_raft_role", "1 for this node's current Raft role.", "gauge", () => {
        const cluster = this.sources.cluster;
        if (cluster === undefined) return [];
        const role = cluster.status().role;
        return raftRoles.map((candidate) => ({ labels: { role: candidate }, value: candidate === role ? 1 : 0 }));
      }),
    );
    fromStatus("keyraft_raft_term", "Current Raft term.", (status) => status.term);
    fromStatus("keyraft_raft_has_leader", "1 when this node knows a leader.", (status) =>
      status.leader === null ? 0 : 1,
    );
    fromStatus("keyraft_raft_commit_index", "Highest log index known committed.", (status) => status.commitIndex);
    fromStatus(
      "keyraft_raft_applied_index",
      "Highest log index applied to the key state.",
      (status) => status.appliedIndex,
    );
    fromStatus("keyraft_raft_last_index", "Last log index held.", (status) => status.lastIndex);
    fromStatus("keyraft_raft_snapshot_index", "Index of the latest snapshot.", (status) => status.snapshotIndex);
    fromStatus(
      "keyraft_raft_apply_lag_entries",
      "Committed entries not yet applied.",
      (status) => status.commitIndex - status.appliedIndex,
    );
    fromStatus(
      "keyraft_raft_pending_writes",
      "Admin writes waiting for their entry.",
      (status) => status.pendingWrites,
    );
    fromStatus(
      "keyraft_staleness_seconds",
      "Time since a quorum-backed leader last confirmed this replica.",
      (status) => status.stalenessMs / 1000,
    );
    fromStatus("keyraft_stale", "1 while this replica is past its staleness bound.", (status) =>
      status.stale ? 1 : 0,
    );
    const counter = (name: string, help: string, field: keyof NodeMetrics): void =>
      register(
        this.registry,
        scraped(name, help, "counter", () => {
          const cluster = this.sources.cluster;
          return cluster === undefined ? [] : [{ labels: {}, value: cluster.raftCounters()[field] }];
        }),
      );
    counter("keyraft_raft_leader_changes_total", "Times this node saw the leader change (elections).", "leaderChanges");
    counter(
      "keyraft_raft_vote_requests_total",
      "Vote and pre-vote requests this node sent (campaigns x peers).",
      "voteRequests",
    );
    counter("keyraft_raft_entries_applied_total", "Log entries applied.", "entriesApplied");
    counter("keyraft_raft_messages_sent_total", "Raft messages sent.", "messagesSent");
    const timings = (name: string, help: string, samples: (timings: RaftTimings) => Sample[]): void =>
      register(
        this.registry,
        scraped(name, help, "histogram", () => {
          const cluster = this.sources.cluster;
          return cluster === undefined ? [] : samples(cluster.raftTimings);
        }),
      );
    timings("keyraft_raft_append_duration_seconds", "Raft log appends; sync=true are fsynced.", (raft) => [
      ...histogramSamples("keyraft_raft_append_duration_seconds", raft.appendSynced, { sync: "true" }),
      ...histogramSamples("keyraft_raft_append_duration_seconds", raft.appendUnsynced, { sync: "false" }),
    ]);
    timings("keyraft_raft_entries_per_append", "Entries written by one Raft append.", (raft) =>
      histogramSamples("keyraft_raft_entries_per_append", raft.entriesPerAppend),
    );
    timings("keyraft_raft_snapshot_duration_seconds", "Snapshots: encoding and storing, log compacted.", (raft) =>
      histogramSamples("keyraft_raft_snapshot_duration_seconds", raft.snapshot),
    );
    register(
      this.registry,
      scraped("keyraft_raft_snapshot_bytes", "Size of the latest snapshot this node took.", "gauge", () => {
        const cluster = this.sources.cluster;
        return cluster === undefined ? [] : [{ labels: {}, value: cluster.raftTimings.lastSnapshotBytes }];
      }),
    );
  }
}
