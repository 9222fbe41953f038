// @keyraft/core public surface: named exports only.
export { assert, AssertionError } from "./assert.js";
export {
  idRandomBytes,
  keySecretBytesMax,
  keySecretBytesMin,
  limiterBucketsPerWindowDefault,
  limiterBucketsPerWindowMax,
  limiterChecksPerCallMax,
  limiterCountersPerNamespaceMax,
  limiterCountersPerOwnerMax,
  limiterEntriesMax,
  permissionQueryDepthMax,
  permissionQueryNodesMax,
} from "./limits.js";
export { sha256Base64, utf8Encode } from "./hash/sha256.js";
export { base58Alphabet, base58Encode } from "./hash/base58.js";
export { idEpochSeconds, keyStart, newId, newKeySecret } from "./ids/ids.js";
export type { PermissionQuery, PermissionQueryParse, PermissionQueryResult } from "./rbac/query.js";
export { evaluatePermissionQuery, parsePermissionQuery } from "./rbac/query.js";
export type { OverrideLike } from "./overrides/match.js";
export { compareOverridePrecedence, globMatches, literalLength, matchOverride } from "./overrides/match.js";
export { WildcardOverrideIndex } from "./overrides/wildcard-index.js";
export type { CreditSpend, Refill } from "./credits/ledger.js";
export { applyRefill, latestRefillAtOrBefore, refillDueBetween, spendCredits } from "./credits/ledger.js";
export type {
  EvictedCounter,
  LimitCheck,
  LimitOutcome,
  LimitResult,
  SlidingWindowLimiterOptions,
  TouchedBucket,
} from "./ratelimit/sliding-window.js";
export { SlidingWindowLimiter } from "./ratelimit/sliding-window.js";
// Key state machine and verification decision.
export { ROOT_API_ID, ROOT_PERMISSION } from "./keystate/types.js";
export type {
  ApiRecord,
  IdentityRecord,
  JsonObject,
  KeyDerived,
  KeyRecord,
  KeyState,
  NamespaceRecord,
  OverrideRecord,
  PermissionRecord,
  RatelimitConfig,
  RefillRule,
  RoleRecord,
} from "./keystate/types.js";
export type {
  IdentityLink,
  ImportedKey,
  KeyCommand,
  KeyCommandType,
  RatelimitInput,
  Ref,
  RefById,
  RefByName,
  RefillInput,
  CreditBatchCommand,
  CreditBatchItem,
  GrantCreditLeaseKeyCommand,
  RefillCreditsCommand,
} from "./keystate/commands.js";
export { grantVotersMax } from "./keystate/apply-credits.js";
export type { CommandError, CommandErrorCode, CommandOk, CommandOutcome, NamedRef } from "./keystate/outcome.js";
export { applyCommand, keyStateMachine } from "./keystate/machine.js";
export type { KeyStateMachine } from "./keystate/machine.js";
export { createKeyState } from "./keystate/state.js";
export {
  captureKeyState,
  cloneJson,
  restoreKeyState,
  restoreKeyStateInto,
  snapshotKeyState,
} from "./keystate/snapshot.js";
export type { KeyStateSnapshot } from "./keystate/snapshot.js";
export { keyDerived, verifyLimitKey } from "./keystate/derived.js";
export { keyCreditsAt } from "./keystate/apply-keys.js";
export { resolveOverride } from "./keystate/overrides-index.js";
export { keyStateViolation } from "./keystate/invariants.js";
export {
  apisMax,
  connectionsPerRecordMax,
  creditBatchCommandsMax,
  creditsMax,
  identitiesMax,
  importKeysMax,
  keysMax,
  metaJsonLengthMax,
  namespacesMax,
  overridesMax,
  permissionsMax,
  ratelimitsPerRecordMax,
  refillKeysPerCommandMax,
  rolesMax,
} from "./keystate/limits.js";
export { decideVerification } from "./verify/decide.js";
export type {
  RateLimitJudge,
  RatelimitRequest,
  VerifyBadRequest,
  VerifyCode,
  VerifyDecision,
  VerifyRequest,
  VerifyResult,
} from "./verify/types.js";
// Verification analytics (pure aggregation).
export {
  analyticsOverflowSeriesMaxDefault,
  analyticsRetentionMsDefault,
  analyticsSeriesMaxDefault,
  canonicalTags,
  overflowKeyId,
  VerificationAggregator,
} from "./analytics/aggregator.js";
export type { AggregatorOptions } from "./analytics/aggregator.js";
export { emptyCounts, outcomeField, outcomeFields, totalOf } from "./analytics/counts.js";
export { analyticsRowsMax, mergeVerificationSeries, queryVerifications } from "./analytics/query.js";
export { dayStartMs, hourStartMs, monthStartMs } from "./analytics/time.js";
export type {
  AnalyticsGroupBy,
  AnalyticsOrderBy,
  OutcomeCounts,
  OutcomeField,
  VerificationEvent,
  VerificationFilter,
  VerificationQuery,
  VerificationRow,
  VerificationSeries,
} from "./analytics/types.js";
// Credit leases (docs/counters.md) and placement.
export type {
  CreditLeaseCommand,
  CreditLeaseOutcome,
  CreditLeaseRecord,
  CreditLeaseRefusal,
  CreditLedgerRecord,
  CreditSeqFloor,
  ExpireCreditLeaseCommand,
  GrantCreditLeaseCommand,
  SettleCreditLeaseCommand,
} from "./leases/types.js";
export {
  applyCreditAdjust,
  applyCreditDirectSpend,
  applyCreditLeaseCommand,
  applyCreditRefill,
  applyCreditSet,
  applyExpireCreditLease,
  applyGrantCreditLease,
  applySettleCreditLease,
  createCreditLedger,
  creditLedgerViolation,
  leasedCredits,
  leasesPerKeyMax,
  ledgerRemaining,
} from "./leases/ledger.js";
export type { LedgerApplied, LedgerApplyContext } from "./leases/ledger.js";
export { creditLeasePolicyDefaults, leaseGrantSize } from "./leases/policy.js";
export type { CreditLeasePolicy, LeaseGrantSize } from "./leases/policy.js";
export { compactHolderJournal, replayHolderJournal } from "./leases/journal.js";
export type { HolderJournalRecord, JournaledLease } from "./leases/journal.js";
export { holderKeysMax, holderLeasesPerKeyMax, LeaseHolder, leaseHolderDefaults } from "./leases/holder.js";
export type { HolderOutput, HolderRequest, HolderVerify, LeaseHolderOptions } from "./leases/holder.js";
export { expiryWaitMs, expiryWatchedMax, LeaseExpiryTracker } from "./leases/expiry.js";
export type { LeaseExpiryOptions, WatchedLease } from "./leases/expiry.js";
export { ownerOf, placementNodesMax, rankNodes, rendezvousScore, servingNode } from "./placement/rendezvous.js";
export {
  nextReservation,
  OwnerReservations,
  reservationBucketsMax,
  SuccessorReservations,
} from "./placement/reservations.js";
export type { HandBack, ReservationAsk, ReservationBucket } from "./placement/reservations.js";
export { AsyncLimitEstimator, asyncBucketsMax, asyncOvershootBound } from "./placement/async-estimator.js";
export type { AsyncBucketCount } from "./placement/async-estimator.js";
export { ForwardBatcher, forwardBatchChecksMax, forwardQueuedMax } from "./placement/forward-batcher.js";
export type { ForwardBatch } from "./placement/forward-batcher.js";
