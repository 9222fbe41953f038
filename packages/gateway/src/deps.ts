// What the embedder of the gateway hands to buildApp (app.ts): the key state, its command log,
// the counters and the clocks. main.ts builds these for a node; tests build them in memory.

import type { CommandOutcome, KeyCommand, KeyState, SlidingWindowLimiter } from "@keyraft/core";
import type { RequestListener, Server } from "node:http";
import type { Logger } from "pino";
import type { VerificationPeers } from "./analytics/peers.js";
import type { VerificationRecorder } from "./analytics/recorder.js";
import type { ClusterNode } from "./cluster/cluster-node.js";
import type { StalePolicy } from "./cluster/config.js";
import type { CreditSpender } from "./counters/credits/lease-spender.js";
import type { ClusterRateLimits } from "./counters/ratelimit/cluster-limits.js";
import type { KeyMigrations } from "./key-migrations.js";
import type { GatewayMetrics } from "./metrics/gateway-metrics.js";
import type { CommandLog, CounterDurability } from "./store/types.js";

export interface AppDeps {
  logger: Logger;
  /** The live key state; changed only by `commandLog` applying commands. */
  state: KeyState;
  /** Orders, applies (synchronously, in append) and makes durable every admin write. */
  commandLog: CommandLog<KeyCommand, CommandOutcome>;
  limiter: SlidingWindowLimiter;
  counterDurability: CounterDurability;
  nowMs(): number;
  randomBytes(length: number): Uint8Array;
  bodyLimitBytes: number;
  /** The HTTP server to listen with (timeouts, connection cap, TLS: http-server.ts); absent = Fastify's own (tests inject). */
  serverFactory?: (handler: RequestListener) => Server;
  /** Verification analytics of this node; buildApp creates one when absent (main.ts passes its own to save it on shutdown). */
  analytics?: VerificationRecorder;
  /** The cluster's other nodes for analytics queries; absent = this node only. */
  verificationPeers?: VerificationPeers;
  /** Credit leases of this node (counters/credits); absent = every credit spend is a log entry. */
  creditLeases?: CreditSpender;
  /** Rate limits across the cluster (counters/ratelimit); absent = judged here only. */
  rateLimits?: ClusterRateLimits;
  /** Key migrations declared by KEYRAFT_KEY_MIGRATIONS (v2 keys.migrateKeys); absent = none. */
  keyMigrations?: KeyMigrations;
  /** The Raft node this gateway serves (cluster/routes.ts adds its routes and staleness guard); absent in tests of the API alone. */
  cluster?: { cluster: ClusterNode; stalePolicy: StalePolicy };
  /** Metrics of this node; buildApp creates one when absent. */
  metrics?: GatewayMetrics;
  /** Given: the app serves GET /metrics (KEYRAFT_METRICS_PORT unset), behind `token` when not null. */
  metricsEndpoint?: { token: string | null };
  /** KEYRAFT_AUDIT_RETENTION_DAYS (default 90), carried in every admin write (audit/). */
  auditRetentionDays?: number;
}
