// One ratelimit check of a namespace's identifier, shared by v1 ratelimits.limit and v2
// ratelimit.limit/multiLimit (one set of counters for both APIs): the namespace's override
// applied (exact identifier first, then the most specific wildcard, then the lowest id), judged
// where the identifier is served (in a cluster, its owner node).

import {
  limiterCountersPerNamespaceMax,
  resolveOverride,
  type KeyState,
  type LimitCheck,
  type OverrideRecord,
} from "@keyraft/core";
import type { GatewayServices } from "../../services.js";
import { judgeLimitHere, type LimitAnswer } from "./judge-here.js";
import { limitSubject } from "./subject.js";

/** Limiter key: namespace, identifier and the effective window, so a changed limit starts afresh. */
export function namespaceLimitKey(namespaceId: string, identifier: string, limit: number, durationMs: number): string {
  return `r:${namespaceId}:${limit}:${durationMs}:${identifier}`;
}

export interface PlannedNamespaceCheck {
  check: LimitCheck;
  override: OverrideRecord | undefined;
  /** Judged here and reconciled in the background (v1 `async`, or the override's). */
  isAsync: boolean;
}

export function planNamespaceCheck(
  state: KeyState,
  namespaceId: string,
  identifier: string,
  requested: { limit: number; durationMs: number; cost: number; async: boolean },
): PlannedNamespaceCheck {
  const override = resolveOverride(state, namespaceId, identifier);
  const limit = override?.limit ?? requested.limit;
  const durationMs = override?.durationMs ?? requested.durationMs;
  return {
    // Identifiers are the caller's to choose: their counters are bounded per namespace.
    check: {
      key: namespaceLimitKey(namespaceId, identifier, limit, durationMs),
      limit,
      durationMs,
      cost: requested.cost,
      group: `n:${namespaceId}`,
      groupEntriesMax: limiterCountersPerNamespaceMax,
    },
    override,
    isAsync: override?.async ?? requested.async,
  };
}

export type NamespaceCheckDeps = Pick<GatewayServices, "rateLimits" | "limiter" | "counterDurability" | "nowMs">;

/** Judges a planned check where its identifier is served. */
export function judgeNamespaceCheck(
  deps: NamespaceCheckDeps,
  namespaceId: string,
  identifier: string,
  planned: PlannedNamespaceCheck,
): Promise<LimitAnswer> {
  return Promise.resolve(
    deps.rateLimits?.limit(limitSubject(namespaceId, identifier), planned.check, planned.isAsync) ??
      judgeLimitHere(deps.limiter, deps.counterDurability, planned.check, deps.nowMs(), () => null),
  );
}
