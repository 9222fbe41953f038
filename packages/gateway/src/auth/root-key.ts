// Root-key authentication (docs/api.md "Root keys"): the bearer token is verified like any key (so a root
// key consumes its own limits and credits), then it must belong to the root api.

import {
  decideVerification,
  evaluatePermissionQuery,
  ROOT_API_ID,
  ROOT_PERMISSION,
  type LimitCheck,
  type LimitResult,
  type PermissionQuery,
  type RateLimitJudge,
} from "@keyraft/core";
import type { FastifyRequest } from "fastify";
import type { GatewayServices } from "../services.js";
import { V1Error, insufficientPermissions, unauthorized } from "../errors.js";
import { rememberActor } from "../audit/actor.js";
import { hashKey } from "./hash.js";

/** What root-key authentication reads and writes (a root key spends its own limits and credits). */
export type RootKeyDeps = Pick<GatewayServices, "state" | "limiter" | "nowMs" | "counterDurability" | "commandLog">;

export interface RootAuth {
  keyId: string;
  /** Permission slugs the root key holds (direct and via roles). */
  slugs: ReadonlySet<string>;
  permissions: readonly string[];
}

/** A judge that reports what the limiter would answer and changes nothing. */
function peekOnly(limiter: RootKeyDeps["limiter"]): RateLimitJudge {
  return {
    limit(checks: readonly LimitCheck[], nowMs: number): LimitResult {
      const outcomes = limiter.peek(checks, nowMs);
      return { success: outcomes.every((o) => o.success), outcomes, touched: [], judgedAtMs: nowMs, evicted: [] };
    },
  };
}

function bearerToken(request: FastifyRequest): string {
  const header = request.headers.authorization;
  if (typeof header !== "string") return "";
  return header.startsWith("Bearer ") ? header.slice("Bearer ".length) : header;
}

/**
 * Authenticates the caller; with `query`, also checks it (before the root-api test, as upstream).
 * Throws the v1 error of the first failing check.
 */
export async function authenticate(
  deps: RootKeyDeps,
  request: FastifyRequest,
  query?: PermissionQuery,
): Promise<RootAuth> {
  const token = bearerToken(request);
  if (token === "") throw unauthorized("key required");
  const nowMs = deps.nowMs();
  const hash = hashKey(token);
  // A key of another api is answered "root key required" after the same checks, but judged
  // without spending: its limits are only read and no credit is taken (a tenant's key used by
  // mistake, or by someone probing, costs its owner nothing).
  const keyId = deps.state.keyIdByHash.get(hash);
  const isRootKey = keyId !== undefined && deps.state.keys.get(keyId)?.apiId === ROOT_API_ID;
  const decision = decideVerification(
    deps.state,
    isRootKey ? deps.limiter : peekOnly(deps.limiter),
    { requestId: request.id, hash, creditCost: isRootKey ? 1 : 0, parsedPermissions: query },
    nowMs,
  );
  if (decision.kind === "badRequest") throw new V1Error("BAD_REQUEST", decision.message);
  const { result, key, derived } = decision;
  if (key === undefined || derived === undefined) throw unauthorized("key not found");
  switch (result.code) {
    case "VALID":
      break;
    case "DISABLED":
      throw new V1Error("DISABLED", "the key is disabled");
    case "EXPIRED":
      throw new V1Error("EXPIRED", `the key has expired on ${new Date(key.expiresAtMs ?? 0).toISOString()}`);
    case "INSUFFICIENT_PERMISSIONS":
      throw insufficientPermissions(decision.permissionMessage ?? "insufficient permissions");
    case "RATE_LIMITED":
    case "USAGE_EXCEEDED":
    case "FORBIDDEN":
    case "UNAUTHORIZED":
    case "NOT_FOUND":
      throw new V1Error(result.code === "NOT_FOUND" ? "UNAUTHORIZED" : result.code, "unauthorized");
    default: {
      const unreachable: never = result.code;
      throw new Error(`authenticate: unknown code ${String(unreachable)}`);
    }
  }
  if (decision.touched.length > 0) await deps.counterDurability.cover(decision.touched);
  if (decision.creditSpend !== undefined) {
    const spent = await deps.commandLog.append(decision.creditSpend);
    if (!spent.ok) throw new V1Error("USAGE_EXCEEDED", "unauthorized");
  }
  if (key.apiId !== ROOT_API_ID) throw unauthorized("root key required");
  rememberActor(request, key.id);
  return { keyId: key.id, slugs: derived.slugs, permissions: derived.permissions };
}

/** `{ or: [...] }` of the literal permissions a route accepts (no globbing: `api.*.read_key` is a name, not a pattern). */
export function anyOf(...permissions: string[]): PermissionQuery {
  return { or: permissions };
}

export function holds(auth: RootAuth, permission: string): boolean {
  return auth.slugs.has(permission);
}

export function holdsAny(auth: RootAuth, ...permissions: string[]): boolean {
  return permissions.some((permission) => auth.slugs.has(permission));
}

/** Throws `code` (INSUFFICIENT_PERMISSIONS unless given) with the evaluator's message. */
export function requirePermission(
  auth: RootAuth,
  query: PermissionQuery,
  code: "INSUFFICIENT_PERMISSIONS" | "UNAUTHORIZED" = "INSUFFICIENT_PERMISSIONS",
): void {
  const evaluation = evaluatePermissionQuery(query, (permission) => auth.slugs.has(permission), auth.permissions);
  if (!evaluation.valid) throw new V1Error(code, evaluation.message);
}

/** Keys of the root api are root keys: only a caller holding `*` may create, change or see them. */
export function requireRootAdmin(auth: RootAuth, apiId: string): void {
  if (apiId === ROOT_API_ID && !auth.slugs.has(ROOT_PERMISSION)) {
    throw insufficientPermissions(
      `only a root key holding '${ROOT_PERMISSION}' may create, change or read keys of ${ROOT_API_ID}`,
    );
  }
}
