// Root-key authentication (docs/api.md "Root keys"): the bearer token must be a live key of the
// root api. Authenticating reads the key state only: a root key spends none of its own credits or
// rate limits (one rule for v1 and v2, docs/api-v2.md).

import { evaluatePermissionQuery, keyDerived, ROOT_API_ID, ROOT_PERMISSION, type PermissionQuery } from "@keyraft/core";
import type { FastifyRequest } from "fastify";
import type { GatewayServices } from "../services.js";
import { V1Error, insufficientPermissions, unauthorized } from "../errors.js";
import { rememberActor } from "../audit/actor.js";
import { hashKey } from "./hash.js";

/** What root-key authentication reads. */
export type RootKeyDeps = Pick<GatewayServices, "state" | "nowMs">;

export interface RootAuth {
  keyId: string;
  /** Permission slugs the root key holds (direct and via roles). */
  slugs: ReadonlySet<string>;
  permissions: readonly string[];
}

function bearerToken(request: FastifyRequest): string {
  const header = request.headers.authorization;
  if (typeof header !== "string") return "";
  return header.startsWith("Bearer ") ? header.slice("Bearer ".length) : header;
}

/**
 * Authenticates the caller; with `query`, also checks it (before the root-api test, as upstream).
 * Throws the v1 error of the first failing check, in verification's order: unknown, disabled,
 * expired, permissions, then not a root key.
 */
export async function authenticate(
  deps: RootKeyDeps,
  request: FastifyRequest,
  query?: PermissionQuery,
): Promise<RootAuth> {
  const token = bearerToken(request);
  if (token === "") throw unauthorized("key required");
  const { state } = deps;
  const key = state.keys.getByHash(hashKey(token));
  if (key === undefined || !state.apis.has(key.apiId)) throw unauthorized("key not found");
  if (!key.enabled) throw new V1Error("DISABLED", "the key is disabled");
  if (key.expiresAtMs !== null && key.expiresAtMs < deps.nowMs()) {
    throw new V1Error("EXPIRED", `the key has expired on ${new Date(key.expiresAtMs).toISOString()}`);
  }
  const derived = keyDerived(state, key);
  if (query !== undefined) {
    const evaluation = evaluatePermissionQuery(query, (p) => derived.slugs.has(p), derived.permissions);
    if (!evaluation.valid) throw insufficientPermissions(evaluation.message);
  }
  if (key.apiId !== ROOT_API_ID) throw unauthorized("root key required");
  rememberActor(request, key.id);
  return { keyId: key.id, slugs: derived.slugs, permissions: derived.permissions };
}

/** `{ or: [...] }` of the literal permissions a route accepts (no globbing: `api.*.read_key` is a name, not a pattern). */
export function anyOf(...permissions: string[]): PermissionQuery {
  return { or: permissions };
}

export function holds(auth: Pick<RootAuth, "slugs">, permission: string): boolean {
  return auth.slugs.has(permission);
}

export function holdsAny(auth: Pick<RootAuth, "slugs">, ...permissions: string[]): boolean {
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
