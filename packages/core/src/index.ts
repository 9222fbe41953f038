// @keyraft/core public surface: named exports only.
export { assert, AssertionError } from "./assert.js";
export {
  idRandomBytes,
  keySecretBytesMax,
  keySecretBytesMin,
  limiterBucketsPerWindowDefault,
  limiterBucketsPerWindowMax,
  limiterChecksPerCallMax,
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
export type { CreditSpend, Refill } from "./credits/ledger.js";
export { applyRefill, latestRefillAtOrBefore, refillDueBetween, spendCredits } from "./credits/ledger.js";
export type {
  LimitCheck,
  LimitOutcome,
  LimitResult,
  SlidingWindowLimiterOptions,
  TouchedBucket,
} from "./ratelimit/sliding-window.js";
export { SlidingWindowLimiter } from "./ratelimit/sliding-window.js";
