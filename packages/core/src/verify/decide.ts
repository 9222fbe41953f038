// The verification decision, in upstream's order of checks (docs/api.md, "keys.verifyKey"). It never mutates the key state: the
// credit spend it decides is returned as a command for the shell to append to the command log.
// It calls the rate limiter once, with every limit of the request judged together.

import { spendCredits } from "../credits/ledger.js";
import { creditsAt } from "../keystate/credits-view.js";
import { keyDerived, keyLimitKey } from "../keystate/derived.js";
import type { ConfiguredLimit, KeyDerived, KeyRecord, KeyState } from "../keystate/types.js";
import { limiterCountersPerOwnerMax } from "../limits.js";
import type { EvictedCounter, LimitCheck, LimitResult, BucketCount } from "../ratelimit/sliding-window.js";
import { evaluatePermissionQuery, parsePermissionQuery, type PermissionQuery } from "../rbac/query.js";
import type {
  AppliedLimit,
  RateLimitJudge,
  VerifyBadRequest,
  VerifyCode,
  VerifyDecision,
  VerifyRequest,
  VerifyResult,
} from "./types.js";

const noTouched: readonly BucketCount[] = Object.freeze([]);
const noEvicted: readonly EvictedCounter[] = Object.freeze([]);
const noLimits: readonly AppliedLimit[] = Object.freeze([]);
const emptyMeta: Record<string, unknown> = Object.freeze({}) as Record<string, unknown>;

function notFound(requestId: string): VerifyDecision {
  return {
    kind: "result",
    result: {
      keyId: undefined,
      valid: false,
      name: undefined,
      ownerId: undefined,
      meta: undefined,
      expires: undefined,
      ratelimit: undefined,
      remaining: undefined,
      code: "NOT_FOUND",
      enabled: undefined,
      permissions: undefined,
      roles: undefined,
      environment: undefined,
      identity: undefined,
      requestId,
    },
    key: undefined,
    derived: undefined,
    touched: noTouched,
    evicted: noEvicted,
    limits: noLimits,
    triggeredRatelimit: undefined,
    creditSpend: undefined,
    permissionMessage: undefined,
  };
}

/** The full key info of a found key; `code`, `ratelimit` and `remaining` are set by the caller. */
function keyResult(
  state: KeyState,
  key: KeyRecord,
  derived: KeyDerived,
  code: VerifyCode,
  requestId: string,
): VerifyResult {
  const identity = key.identityId === null ? undefined : state.identities.get(key.identityId);
  return {
    keyId: key.id,
    valid: code === "VALID",
    name: key.name ?? undefined,
    ownerId: identity?.externalId ?? key.ownerId ?? undefined,
    meta: key.meta ?? undefined,
    expires: key.expiresAtMs ?? undefined,
    ratelimit: undefined,
    remaining: undefined,
    code,
    enabled: key.enabled,
    permissions: derived.permissions,
    roles: derived.roles,
    environment: key.environment ?? undefined,
    identity:
      identity === undefined
        ? undefined
        : { id: identity.id, externalId: identity.externalId, meta: identity.meta ?? emptyMeta },
    requestId,
  };
}

function decided(
  result: VerifyResult,
  key: KeyRecord,
  derived: KeyDerived,
  touched: readonly BucketCount[] = noTouched,
): VerifyDecision {
  return {
    kind: "result",
    result,
    key,
    derived,
    touched,
    evicted: noEvicted,
    limits: noLimits,
    triggeredRatelimit: undefined,
    creditSpend: undefined,
    permissionMessage: undefined,
  };
}

/** How a checked limit is reported (a ConfiguredLimit is one). */
interface LimitDescription {
  name: string;
  /** `rl_...`; "" for an ad-hoc limit of the request. */
  id: string;
  autoApply: boolean;
}

/** A limit resolved for this call: what to check and how to report it. */
interface ResolvedLimit extends LimitDescription {
  check: LimitCheck;
}

function configuredCheck(limit: ConfiguredLimit, cost: number): ResolvedLimit {
  return {
    check: { key: limit.counterKey, limit: limit.limit, durationMs: limit.durationMs, cost },
    name: limit.name,
    id: limit.id,
    autoApply: limit.autoApply,
  };
}

/**
 * The limits that apply, as upstream resolves them: the auto-applied configured ones, then each requested
 * name (inline when it gives limit and duration, counted per key; else the configured one),
 * later entries replacing earlier ones of the same name. Returns them, or the 400 of a name the
 * key and its identity do not define.
 */
function resolveLimits(
  state: KeyState,
  key: KeyRecord,
  derived: KeyDerived,
  request: VerifyRequest,
): readonly ResolvedLimit[] | VerifyBadRequest {
  const requested = request.ratelimits;
  const defaultCost = request.defaultLimitCost;
  const resolved: ResolvedLimit[] = [];
  for (const limit of derived.autoLimits) {
    const cost = limit.name === "default" && defaultCost !== undefined ? defaultCost : 1;
    resolved.push(configuredCheck(limit, cost));
  }
  for (const entry of requested ?? []) {
    const cost = entry.cost ?? 1;
    let next: ResolvedLimit;
    if (entry.limit !== undefined && entry.duration !== undefined) {
      next = {
        check: inlineCheck(key, derived, entry.name, entry.limit, entry.duration, cost),
        name: entry.name,
        id: "",
        autoApply: false,
      };
    } else {
      const configured = derived.configuredLimits.get(entry.name);
      if (configured === undefined) return unknownLimit(state, key, entry.name);
      next = configuredCheck(configured, cost);
    }
    const at = resolved.findIndex((limit) => limit.name === entry.name);
    if (at >= 0) resolved[at] = next;
    else resolved.push(next);
  }
  return resolved;
}

/**
 * An inline limit's check. A counter the caller names itself is bounded per key (least recently
 * used evicted), unless it is the configured counter (same key and window), never evicted while live.
 */
function inlineCheck(
  key: KeyRecord,
  derived: KeyDerived,
  name: string,
  limit: number,
  durationMs: number,
  cost: number,
): LimitCheck {
  const check: LimitCheck = { key: keyLimitKey(key, name), limit, durationMs, cost };
  const configured = derived.configuredLimits.get(name);
  if (configured === undefined || configured.counterKey !== check.key || configured.durationMs !== durationMs) {
    check.group = `v:${key.id}`;
    check.groupEntriesMax = limiterCountersPerOwnerMax;
  }
  return check;
}

function unknownLimit(state: KeyState, key: KeyRecord, name: string): VerifyBadRequest {
  const identity = key.identityId === null ? undefined : state.identities.get(key.identityId);
  const unknownRatelimit = {
    name,
    keyId: key.id,
    identityId: identity?.id ?? null,
    externalId: identity?.externalId ?? null,
  };
  if (identity === undefined) {
    return {
      kind: "badRequest",
      message: `ratelimit "${name}" was requested but does not exist for key "${key.id}" and there is no identity connected`,
      unknownRatelimit,
    };
  }
  return {
    kind: "badRequest",
    message: `ratelimit "${name}" was requested but does not exist for key "${key.id}" nor identity { id: ${identity.id}, externalId: ${identity.externalId}}`,
    unknownRatelimit,
  };
}

/**
 * The `ratelimit` object of the verify answer: remaining and reset of the first limit that rejected,
 * else of the first one applied. `limit` is the `default` limit's when one applied (upstream);
 * otherwise, unlike upstream which omitted it, the reported limit's own (the v1 client types
 * declare `limit` required).
 */
function ratelimitField(
  judged: LimitResult,
  described: readonly LimitDescription[],
): { limit: number; remaining: number; reset: number } {
  // Loops rather than findIndex: this runs on every verification with a limit.
  const outcomes = judged.outcomes;
  const outcome = outcomes[judged.success ? 0 : firstRefused(outcomes)]!;
  let limit = outcome.limit;
  for (let i = 0; i < described.length; i++) {
    if (described[i]!.name !== "default") continue;
    limit = outcomes[i]!.limit;
    break;
  }
  return { limit, remaining: outcome.remaining, reset: outcome.resetAtMs };
}

function firstRefused(outcomes: LimitResult["outcomes"]): number {
  for (let i = 0; i < outcomes.length; i++) if (!outcomes[i]!.success) return i;
  return -1;
}

/** Every limit checked, with its outcome (v2 answers each). */
function appliedLimits(
  judged: LimitResult,
  described: readonly LimitDescription[],
  checks: readonly LimitCheck[],
): AppliedLimit[] {
  const applied: AppliedLimit[] = new Array<AppliedLimit>(described.length);
  for (let index = 0; index < described.length; index++) {
    const limit = described[index]!;
    const check = checks[index]!;
    applied[index] = {
      name: limit.name,
      id: limit.id,
      limit: check.limit,
      durationMs: check.durationMs,
      autoApply: limit.autoApply,
      outcome: judged.outcomes[index]!,
    };
  }
  return applied;
}

export function decideVerification(
  state: KeyState,
  limiter: RateLimitJudge,
  request: VerifyRequest,
  nowMs: number,
): VerifyDecision | VerifyBadRequest {
  const key = state.keys.getByHash(request.hash);
  if (key === undefined || !state.apis.has(key.apiId)) return notFound(request.requestId);
  const derived = keyDerived(state, key);
  if (!key.enabled) return decided(keyResult(state, key, derived, "DISABLED", request.requestId), key, derived);
  if (request.apiId !== undefined && request.apiId !== key.apiId) {
    return decided(keyResult(state, key, derived, "FORBIDDEN", request.requestId), key, derived);
  }
  if (key.expiresAtMs !== null && key.expiresAtMs < nowMs) {
    return decided(keyResult(state, key, derived, "EXPIRED", request.requestId), key, derived);
  }
  let query: PermissionQuery | undefined = request.parsedPermissions;
  if (query === undefined && request.permissions) {
    const parsed = parsePermissionQuery(request.permissions);
    if (!parsed.ok) return { kind: "badRequest", message: "permission query is invalid" };
    query = parsed.query;
  }
  if (query !== undefined) {
    const evaluation = evaluatePermissionQuery(query, (p) => derived.slugs.has(p), derived.permissions);
    if (!evaluation.valid) {
      const decision = decided(
        keyResult(state, key, derived, "INSUFFICIENT_PERMISSIONS", request.requestId),
        key,
        derived,
      );
      decision.permissionMessage = evaluation.message;
      return decision;
    }
  }
  const noRequestedLimits =
    (request.ratelimits === undefined || request.ratelimits.length === 0) &&
    (request.defaultLimitCost === undefined || request.defaultLimitCost === 1);
  if (noRequestedLimits && derived.autoLimits.length === 0) {
    return decideCredits(state, key, derived, request, nowMs, undefined, noTouched, noLimits);
  }
  // The common request names no limit: the key's auto-applied ones, checks built once (KeyDerived).
  let checks: readonly LimitCheck[] = derived.autoChecks;
  let described: readonly LimitDescription[] = derived.autoLimits;
  if (!noRequestedLimits) {
    const limits = resolveLimits(state, key, derived, request);
    if (!Array.isArray(limits)) return limits as VerifyBadRequest;
    const resolved = limits as readonly ResolvedLimit[];
    checks = resolved.map((limit) => limit.check);
    described = resolved;
  }
  // A cost for the default limit of a key that has none (`ratelimit: { cost: 0 }`): nothing to judge.
  if (checks.length === 0) return decideCredits(state, key, derived, request, nowMs, undefined, noTouched, noLimits);
  const judged = limiter.limit(checks, nowMs);
  const evicted = judged.evicted.length > 0 ? judged.evicted : noEvicted;
  const ratelimit = ratelimitField(judged, described);
  const applied = appliedLimits(judged, described, checks);
  if (!judged.success) {
    const result = keyResult(state, key, derived, "RATE_LIMITED", request.requestId);
    result.ratelimit = ratelimit;
    const decision = decided(result, key, derived);
    decision.limits = applied;
    decision.triggeredRatelimit = described[firstRefused(judged.outcomes)]?.name;
    return decision;
  }
  const decision = decideCredits(state, key, derived, request, nowMs, ratelimit, judged.touched, applied);
  decision.evicted = evicted;
  return decision;
}

/** Step 10 (keyraft decision 2): a cost above the balance is USAGE_EXCEEDED and deducts nothing. */
function decideCredits(
  state: KeyState,
  key: KeyRecord,
  derived: KeyDerived,
  request: VerifyRequest,
  nowMs: number,
  ratelimit: VerifyResult["ratelimit"],
  touched: readonly BucketCount[],
  limits: readonly AppliedLimit[],
): VerifyDecision {
  const balance =
    key.remaining === null ? null : creditsAt(key, nowMs, request.creditsSpentHere?.(key.id) ?? 0).remaining;
  if (balance === null) {
    const result = keyResult(state, key, derived, "VALID", request.requestId);
    result.ratelimit = ratelimit;
    const decision = decided(result, key, derived, touched);
    decision.limits = limits;
    return decision;
  }
  const spend = spendCredits(balance, request.creditCost);
  const result = keyResult(state, key, derived, spend.admitted ? "VALID" : "USAGE_EXCEEDED", request.requestId);
  result.ratelimit = ratelimit;
  result.remaining = spend.remaining;
  const decision = decided(result, key, derived, touched);
  decision.limits = limits;
  if (spend.admitted && request.creditCost > 0) {
    decision.creditSpend = { type: "spendCredits", keyId: key.id, cost: request.creditCost, nowMs };
  }
  return decision;
}
