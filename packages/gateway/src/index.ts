// @keyraft/gateway public surface: named exports only.
export { buildApp, bodyLimitBytesDefault, requestIdHeader } from "./app.js";
export type { AppDeps } from "./app.js";
export { bootstrapRootKey, generatedRootKeyBytes } from "./state/bootstrap.js";
export type { BootstrapRootKeyOptions, BootstrapRootKeyResult } from "./state/bootstrap.js";
export { MemoryCommandLog, volatileCounterDurability } from "./state/memory-command-log.js";
export { errorBody, errorStatusByCode, V1Error } from "./errors.js";
export type { V1ErrorBody, V1ErrorCode } from "./errors.js";
export { hashKey } from "./auth/hash.js";
export { triggeredHeader } from "./routes/verify-key.js";
export type { CommandLog, CounterDurability, ReplicatedStateMachine, DurabilityBucket } from "./store/types.js";
export { VerificationRecorder, pendingVerificationsMax, analyticsFlushIntervalMs } from "./analytics/recorder.js";
export { saveAnalytics, loadAnalytics, analyticsFileName } from "./analytics/persist.js";
export type { VerificationPeers } from "./analytics/peers.js";
export { GatewayMetrics, metricsApisMax, metricsRoutesMax } from "./metrics/gateway-metrics.js";
export type { ClusterMetricsSource, MetricsSources } from "./metrics/gateway-metrics.js";
export { RaftTimings } from "./metrics/raft-timings.js";
export { metricsPath } from "./metrics/plugin.js";
