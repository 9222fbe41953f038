// The verification decision, in upstream's order of checks (docs/api.md, "keys.verifyKey"). It never mutates the key state: the
// credit spend it decides is returned as a command for the shell to append to the command log.
// It calls the rate limiter once, with every limit of the request judged together.

import { spendCredits } from "../credits/ledger.js";
import { creditsAt } from "../keystate/credits-view.js";
import { keyDerived, verifyLimitKey } from "../keystate/derived.js";
import type { KeyDerived, KeyRecord, KeyState } from "../keystate/types.js";
import { limiterCountersPerOwnerMax } from "../limits.js";
import type { EvictedCounter, LimitCheck, LimitResult, BucketCount } from "../ratelimit/sliding-window.js";
import { evaluatePermissionQuery, parsePermissionQuery, type PermissionQuery } from "../rbac/query.js";
import type {
  RateLimitJudge,
  VerifyBadRequest,
  VerifyCode,
  VerifyDecision,
  VerifyRequest,
  VerifyResult,
} from "./types.js";

const noTouched: readonly BucketCount[] = Object.freeze([]);
const noEvicted: readonly EvictedCounter[] = Object.freeze([]);
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
    triggeredRatelimit: undefined,
    creditSpend: undefined,
    permissionMessage: undefined,
  };
}

/**
 * The limits that apply, as upstream resolves them: the auto-applied configured ones, then each requested
 * name (inline when it gives limit and duration, else the configured one), later entries
 * replacing earlier ones of the same name. Returns the names in parallel, or a 400 message.
 */
function resolveLimits(
  state: KeyState,
  key: KeyRecord,
  derived: KeyDerived,
  request: VerifyRequest,
): { checks: readonly LimitCheck[]; names: string[] } | string {
  const requested = request.ratelimits;
  const defaultCost = request.defaultLimitCost;
  if ((requested === undefined || requested.length === 0) && (defaultCost === undefined || defaultCost === 1)) {
    return { checks: derived.autoChecks, names: derived.autoLimits.map((limit) => limit.name) };
  }
  const checks: LimitCheck[] = [];
  const names: string[] = [];
  for (const limit of derived.autoLimits) {
    const cost = limit.name === "default" && defaultCost !== undefined ? defaultCost : 1;
    checks.push({
      key: verifyLimitKey(derived.limitOwnerId, limit.name),
      limit: limit.limit,
      durationMs: limit.durationMs,
      cost,
    });
    names.push(limit.name);
  }
  for (const entry of requested ?? []) {
    const cost = entry.cost ?? 1;
    let check: LimitCheck;
    if (entry.limit !== undefined && entry.duration !== undefined) {
      check = {
        key: verifyLimitKey(derived.limitOwnerId, entry.name),
        limit: entry.limit,
        durationMs: entry.duration,
        cost,
      };
      // A counter the caller names itself is bounded per owner (least recently used evicted),
      // unless it is a configured one (same name and window), which is never evicted while live.
      if (derived.configuredLimits.get(entry.name)?.durationMs !== entry.duration) {
        check.group = `v:${derived.limitOwnerId}`;
        check.groupEntriesMax = limiterCountersPerOwnerMax;
      }
    } else {
      const configured = derived.configuredLimits.get(entry.name);
      if (configured === undefined) return unknownLimitMessage(state, key, entry.name);
      check = {
        key: verifyLimitKey(derived.limitOwnerId, entry.name),
        limit: configured.limit,
        durationMs: configured.durationMs,
        cost,
      };
    }
    const at = names.indexOf(entry.name);
    if (at >= 0) checks[at] = check;
    else {
      checks.push(check);
      names.push(entry.name);
    }
  }
  return { checks, names };
}

function unknownLimitMessage(state: KeyState, key: KeyRecord, name: string): string {
  const identity = key.identityId === null ? undefined : state.identities.get(key.identityId);
  if (identity === undefined) {
    return `ratelimit "${name}" was requested but does not exist for key "${key.id}" and there is no identity connected`;
  }
  return `ratelimit "${name}" was requested but does not exist for key "${key.id}" nor identity { id: ${identity.id}, externalId: ${identity.externalId}}`;
}

/**
 * The `ratelimit` object of the verify answer: remaining and reset of the first limit that rejected,
 * else of the first one applied. `limit` is the `default` limit's when one applied (upstream);
 * otherwise, unlike upstream which omitted it, the reported limit's own (the v1 client types
 * declare `limit` required).
 */
function ratelimitField(
  judged: LimitResult,
  names: readonly string[],
): { limit: number; remaining: number; reset: number } {
  let reported = 0;
  if (!judged.success) reported = judged.outcomes.findIndex((outcome) => !outcome.success);
  const outcome = judged.outcomes[reported]!;
  const defaultAt = names.indexOf("default");
  const limit = defaultAt >= 0 ? judged.outcomes[defaultAt]!.limit : outcome.limit;
  return { limit, remaining: outcome.remaining, reset: outcome.resetAtMs };
}

export function decideVerification(
  state: KeyState,
  limiter: RateLimitJudge,
  request: VerifyRequest,
  nowMs: number,
): VerifyDecision | VerifyBadRequest {
  const keyId = state.keyIdByHash.get(request.hash);
  const key = keyId === undefined ? undefined : state.keys.get(keyId);
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
  const limits = resolveLimits(state, key, derived, request);
  if (typeof limits === "string") return { kind: "badRequest", message: limits };
  let touched = noTouched;
  let evicted = noEvicted;
  let ratelimit: VerifyResult["ratelimit"];
  if (limits.checks.length > 0) {
    const judged = limiter.limit(limits.checks, nowMs);
    if (judged.evicted.length > 0) evicted = judged.evicted;
    ratelimit = ratelimitField(judged, limits.names);
    if (!judged.success) {
      const result = keyResult(state, key, derived, "RATE_LIMITED", request.requestId);
      result.ratelimit = ratelimit;
      const decision = decided(result, key, derived);
      decision.triggeredRatelimit = limits.names[judged.outcomes.findIndex((outcome) => !outcome.success)];
      return decision;
    }
    touched = judged.touched;
  }
  const decision = decideCredits(state, key, derived, request, nowMs, ratelimit, touched);
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
): VerifyDecision {
  const balance = key.remaining === null ? null : creditsAt(key, nowMs).remaining;
  if (balance === null) {
    const result = keyResult(state, key, derived, "VALID", request.requestId);
    result.ratelimit = ratelimit;
    return decided(result, key, derived, touched);
  }
  const spend = spendCredits(balance, request.creditCost);
  const result = keyResult(state, key, derived, spend.admitted ? "VALID" : "USAGE_EXCEEDED", request.requestId);
  result.ratelimit = ratelimit;
  result.remaining = spend.remaining;
  const decision = decided(result, key, derived, touched);
  if (spend.admitted && request.creditCost > 0) {
    decision.creditSpend = { type: "spendCredits", keyId: key.id, cost: request.creditCost, nowMs };
  }
  return decision;
}
