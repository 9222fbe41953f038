// @keyraft/core public surface: named exports only, and only what other packages (the gateway,
// the bench, the cross-package tests) use. core's own tests import its modules by path.
export { assert } from "./assert.js";
export { sha256Base64 } from "./hash/sha256.js";
export { keyStart, newId, newKeySecret } from "./ids/ids.js";
export type { PermissionQuery } from "./rbac/query.js";
export { evaluatePermissionQuery } from "./rbac/query.js";
export { parsePermissionQueryString } from "./rbac/query-string.js";
export { permissionQueryDepthMax } from "./limits.js";
export { refillDueBetween } from "./credits/ledger.js";
export type { LimitCheck, LimitResult, BucketCount } from "./ratelimit/sliding-window.js";
export { limiterCountersPerNamespaceMax, limiterCountersPerOwnerMax } from "./limits.js";
export { movedBuckets, movedBucketStartMs, SlidingWindowLimiter } from "./ratelimit/sliding-window.js";
// Key state machine and verification decision.
export { ROOT_API_ID, ROOT_PERMISSION } from "./keystate/types.js";
export type {
  IdentityRecord,
  JsonObject,
  RatelimitConfig,
  KeyRecord,
  KeyState,
  OverrideRecord,
  PermissionRecord,
  RoleRecord,
} from "./keystate/types.js";
export type {
  IdentityLink,
  ImportedKey,
  KeyCommand,
  Ref,
  RefByName,
  RatelimitInput,
  RefillInput,
  CreditBatchItem,
} from "./keystate/commands.js";
export type { CommandError, CommandOk, CommandOutcome } from "./keystate/outcome.js";
export { applyCommand, keyStateMachine } from "./keystate/machine.js";
// The audit log (derived from applied commands; read by GET /v1/audit.listLogs).
export { queryAudit } from "./audit/log.js";
export { auditPageEntriesMax } from "./audit/limits.js";
export type { AuditEventAction } from "./audit/describe.js";
export type { AuditContext, AuditEntry } from "./audit/types.js";
export type { KeyStateMachine } from "./keystate/machine.js";
export { createKeyState } from "./keystate/state.js";
export {
  CapturedKeys,
  type EncodedKeys,
  type EncodedKeysPart,
  encodedPartRecords,
  decodedKeysCacheMax,
  keyArenaChunkBytes,
  KeyTable,
  keyHasConnections,
  keyHasIdentity,
  keyHasOwnerId,
  keyHasRefill,
} from "./keystate/key-table.js";
export { creditLedgerOf } from "./keystate/credit-ledgers.js";
export { permissionIdOfSlug, roleIdOfName } from "./keystate/names.js";
export { restoreKeyState, restoreKeyStateSteps, snapshotKeyState } from "./keystate/snapshot.js";
// Named by the gateway's declarations (packages/gateway/src/counters/credits/credit-events.ts).
export type { KeyStateCapture, KeyStateSnapshot } from "./keystate/snapshot.js";
export { keyDerived } from "./keystate/derived.js";
export { ratelimitId } from "./keystate/ratelimit-id.js";
export { rerollGraceEndMs } from "./keystate/apply-reroll.js";
export { keyCreditsAt } from "./keystate/apply-keys.js";
export { creditsAt } from "./keystate/credits-view.js";
export { resolveOverride } from "./keystate/overrides-index.js";
export {
  connectionsPerRecordMax,
  creditBatchCommandsMax,
  importKeysMax,
  metaJsonLengthMax,
  ratelimitsPerRecordMax,
  refillKeysPerCommandMax,
} from "./keystate/limits.js";
export { decideVerification } from "./verify/decide.js";
export type {
  AppliedLimit,
  RateLimitJudge,
  RatelimitRequest,
  VerifyCode,
  VerifyDecision,
  VerifyRequest,
  VerifyResult,
} from "./verify/types.js";
// Verification analytics (pure aggregation).
export { VerificationAggregator } from "./analytics/aggregator.js";
export type { AggregatorOptions } from "./analytics/aggregator.js";
export { emptyCounts, outcomeFields } from "./analytics/counts.js";
export { analyticsRowsMax, mergeVerificationSeries, queryVerifications } from "./analytics/query.js";
export { dayStartMs } from "./analytics/time.js";
// The v2 analytics SQL subset (docs/api-v2.md, "Analytics").
export type { AnalyticsSqlRefusal } from "./analytics/sql/errors.js";
export { analyticsSqlFilter } from "./analytics/sql/evaluate.js";
export { parseAnalyticsQuery, runAnalyticsQuery } from "./analytics/sql/query.js";
export type {
  AnalyticsGroupBy,
  AnalyticsOrderBy,
  VerificationFilter,
  VerificationQuery,
  VerificationSeries,
} from "./analytics/types.js";
// Credit leases (docs/counters.md) and placement.
export type { CreditLeaseOutcome } from "./leases/types.js";
export { creditLeasePolicyDefaults } from "./leases/policy.js";
export { ledgerSeqMax } from "./leases/ledger.js";
export { compactHolderJournal, replayHolderJournal } from "./leases/journal.js";
export type { HolderJournalRecord } from "./leases/journal.js";
export { holderKeysMax, LeaseHolder, leaseHolderDefaults } from "./leases/holder.js";
export type { HolderOutput, HolderRequest, LeaseHolderOptions } from "./leases/holder.js";
export { LeaseExpiryTracker } from "./leases/expiry.js";
export { ownUnsettledSpent } from "./leases/shown.js";
export type { LeaseExpiryOptions, WatchedLease } from "./leases/expiry.js";
export { ownerOf, rankNodes } from "./placement/rendezvous.js";
export { nextReservation, OwnerReservations, SuccessorReservations } from "./placement/reservations.js";
export type { ReservationBucket } from "./placement/reservations.js";
export { AsyncLimitEstimator, asyncOvershootBound } from "./placement/async-estimator.js";
export type { AsyncBucketCount, AsyncPeerBeat } from "./placement/async-estimator.js";
export { AsyncLimits, asyncDurationsMax, asyncRoundsUnconfirmedMax } from "./placement/async-limits.js";
export type { AsyncCounts, AsyncLimitsMutations, AsyncOutcome, AsyncReport } from "./placement/async-limits.js";
export { asyncOvershootMax, asyncShareFloor, asyncWeightedBudget } from "./placement/async-shares.js";
export { ForwardBatcher } from "./placement/forward-batcher.js";
