// Root-key authentication and authorization of the v2 routes. Every v2 route but liveness needs a
// root key (a key of `api_root`) as bearer. Authenticating reads the key state only: it spends
// none of the root key's credits or limits (docs/api-v2.md). Permissions are literal strings
// (`api.*.read_key` is one literal, no globbing); the bare `*` grants everything.

import { keyDerived, ROOT_API_ID, ROOT_PERMISSION, type PermissionQuery } from "@keyraft/core";
import type { FastifyRequest } from "fastify";
import { hashKey } from "../auth/hash.js";
import type { GatewayServices } from "../services.js";
import { V2Error, insufficientPermissions } from "./problem.js";

/** The authenticated root key. */
export interface Principal {
  keyId: string;
  /** Permission slugs held, direct and via roles. */
  slugs: ReadonlySet<string>;
}

/** The token of `Authorization: Bearer <token>` (spaces around header and token trimmed), or the 400. */
function bearerToken(request: FastifyRequest): string {
  const header = request.headers.authorization;
  if (header === undefined) {
    throw new V2Error("invalid_input", "Authorization header is required.", {
      errors: [
        { location: "header/authorization", message: "is required", fix: "Send 'Authorization: Bearer <root key>'" },
      ],
    });
  }
  const value = header.trim();
  if (value === "") throw new V2Error("authentication_missing", "Authorization header is empty.");
  if (!value.startsWith("Bearer ")) {
    throw new V2Error("authentication_malformed", "Authorization header must use the Bearer scheme.");
  }
  const token = value.slice("Bearer ".length).trim();
  if (token === "") throw new V2Error("authentication_malformed", "The bearer token is empty.");
  return token;
}

/** Authenticates the request's root key, or throws the v2 error of the first failing check. */
export function authenticateRootKey(ctx: GatewayServices, request: FastifyRequest): Principal {
  const token = bearerToken(request);
  const { state, nowMs } = ctx;
  const key = state.keys.getByHash(hashKey(token));
  if (key === undefined || key.apiId !== ROOT_API_ID) {
    throw new V2Error("root_key_not_found", "The provided root key is invalid.");
  }
  if (!key.enabled) throw new V2Error("key_disabled", "The root key is disabled.");
  if (key.expiresAtMs !== null && nowMs() > key.expiresAtMs) {
    throw new V2Error("forbidden", "The root key has expired.");
  }
  return { keyId: key.id, slugs: keyDerived(state, key).slugs };
}

/** True when the principal holds `permission` literally (or `*`). */
export function holds(principal: Principal, permission: string): boolean {
  return principal.slugs.has(permission) || principal.slugs.has(ROOT_PERMISSION);
}

export function holdsAny(principal: Principal, ...permissions: string[]): boolean {
  return permissions.some((permission) => holds(principal, permission));
}

/** True when the principal satisfies `query` (literal leaves, `*` grants every leaf). */
export function satisfies(principal: Principal, query: PermissionQuery): boolean {
  if (typeof query === "string") return holds(principal, query);
  if ("and" in query) return query.and.every((child) => satisfies(principal, child));
  return query.or.some((child) => satisfies(principal, child));
}

/** Upstream's wording: one literal, or `a or b` for an OR, AND children joined with ` and `. */
export function describeQuery(query: PermissionQuery): string {
  if (typeof query === "string") return query;
  if ("and" in query) return query.and.map((child) => describeQuery(child)).join(" and ");
  return query.or.map((child) => describeQuery(child)).join(" or ");
}

/** Throws 403 `insufficient_permissions` unless the principal satisfies `query`. */
export function requirePermissions(principal: Principal, query: PermissionQuery): void {
  if (satisfies(principal, query)) return;
  const detail =
    typeof query === "string"
      ? `Missing permission: '${query}'`
      : `Missing one of these permissions: ${describeQuery(query)}`;
  throw insufficientPermissions(detail);
}

/** `{or: [...]}` of the literals a route accepts, e.g. anyOf("api.*.read_key", `api.${id}.read_key`). */
export function anyOf(...permissions: string[]): PermissionQuery {
  return { or: permissions };
}

/** `{and: [...]}` of sub-queries that must all hold. */
export function allOf(...queries: PermissionQuery[]): PermissionQuery {
  return { and: queries };
}
