import type { SpendCreditsCommand } from "../keystate/commands.js";
import type { KeyDerived, KeyRecord } from "../keystate/types.js";
import type {
  EvictedCounter,
  LimitCheck,
  LimitOutcome,
  LimitResult,
  BucketCount,
} from "../ratelimit/sliding-window.js";
import type { PermissionQuery } from "../rbac/query.js";

/** The v1 verification codes (`UNAUTHORIZED` is in the enum but never produced). */
export type VerifyCode =
  | "VALID"
  | "NOT_FOUND"
  | "FORBIDDEN"
  | "USAGE_EXCEEDED"
  | "RATE_LIMITED"
  | "UNAUTHORIZED"
  | "DISABLED"
  | "INSUFFICIENT_PERMISSIONS"
  | "EXPIRED";

/** One entry of the request's `ratelimits`. */
export interface RatelimitRequest {
  name: string;
  cost?: number | undefined;
  limit?: number | undefined;
  duration?: number | undefined;
}

export interface VerifyRequest {
  requestId: string;
  /** base64(SHA-256(key)): the shell hashes once, the decision never sees the plaintext. */
  hash: string;
  apiId?: string | undefined;
  /** Raw `authorization.permissions` JSON; falsy = no check (as upstream). */
  permissions?: unknown;
  /** Already parsed query (root-key auth); used instead of `permissions` when given. */
  parsedPermissions?: PermissionQuery | undefined;
  /** Credits to deduct (`remaining.cost ?? 1`), >= 0; 0 is a pure read. */
  creditCost: number;
  /** Deprecated `ratelimit.cost`: cost of the auto-applied `default` limit (historic semantics). */
  defaultLimitCost?: number | undefined;
  ratelimits?: readonly RatelimitRequest[] | undefined;
  /**
   * What the deciding node spent from its own unsettled credit leases of a key (leases/shown.ts):
   * the balance judged and shown is the replica's `remaining` less this. Absent: 0.
   */
  creditsSpentHere?: ((keyId: string) => number) | undefined;
}

/** The v1 verification result body (section 2.7 plus `requestId`); absent fields are undefined. */
export interface VerifyResult {
  keyId: string | undefined;
  valid: boolean;
  name: string | undefined;
  ownerId: string | undefined;
  meta: Record<string, unknown> | undefined;
  expires: number | undefined;
  ratelimit: { limit: number; remaining: number; reset: number } | undefined;
  remaining: number | undefined;
  code: VerifyCode;
  enabled: boolean | undefined;
  permissions: readonly string[] | undefined;
  roles: readonly string[] | undefined;
  environment: string | undefined;
  identity: { id: string; externalId: string; meta: Record<string, unknown> } | undefined;
  requestId: string;
}

/** A limit a verification checked, with its outcome (v2 answers every one). */
export interface AppliedLimit {
  name: string;
  /** `rl_...` of the configured definition; "" for an ad-hoc limit of the request. */
  id: string;
  limit: number;
  durationMs: number;
  autoApply: boolean;
  outcome: LimitOutcome;
}

/** What the decision needs of the rate limiter: the atomic judgement of several limits. */
export interface RateLimitJudge {
  limit(checks: readonly LimitCheck[], nowMs: number): LimitResult;
}

export interface VerifyDecision {
  kind: "result";
  result: VerifyResult;
  /** The key when found (root-key auth reads its api and permissions). */
  key: KeyRecord | undefined;
  derived: KeyDerived | undefined;
  /** Rate-limit buckets the judgement changed: the shell covers them with CounterDurability. */
  touched: readonly BucketCount[];
  /** Counters the limiter evicted for a bound: the shell may forget their reservations. */
  evicted: readonly EvictedCounter[];
  /** Every limit checked, in check order (empty when none applied or the decision stopped before limits). */
  limits: readonly AppliedLimit[];
  /** Name of the limit that rejected (`Unkey-Ratelimit-Triggered` header). */
  triggeredRatelimit: string | undefined;
  /** The credit spend to append to the command log (VALID with cost > 0 on a key with credits). */
  creditSpend: SpendCreditsCommand | undefined;
  /** Message of a failed permission query (root-key auth reports it). */
  permissionMessage: string | undefined;
}

export interface VerifyBadRequest {
  kind: "badRequest";
  message: string;
  /** Set when the request named a limit the key and its identity do not define (v2 answers 412). */
  unknownRatelimit?: { name: string; keyId: string; identityId: string | null; externalId: string | null };
}
