// Rate-limit namespaces of the v2 routes: addressed by id (`rlns_...`) or by name, and created by
// name on first use when the caller may (ratelimit.*.create_namespace).

import type { KeyState } from "@keyraft/core";
import type { FastifyRequest } from "fastify";
import type { GatewayServices } from "../services.js";
import { holds, type Principal } from "./auth.js";
import { insufficientPermissions, V2Error } from "./problem.js";
import { submitV2 } from "./submit.js";

/** The id of the namespace a v2 request names (its id or its name), or undefined. */
export function findNamespaceId(state: KeyState, namespace: string): string | undefined {
  return state.namespaces.has(namespace) ? namespace : state.namespaceIdByName.get(namespace);
}

/** The 404 of setOverride/getOverride/listOverrides/deleteOverride for an unknown namespace. */
export const namespaceNotFound = (): V2Error =>
  new V2Error("ratelimit_namespace_not_found", "This namespace does not exist.");

export const createNamespacePermission = "ratelimit.*.create_namespace";

/**
 * The ids of `names` (ids or names), creating the missing ones by name after one create_namespace
 * check (403 naming it), as ratelimit.limit and multiLimit do.
 */
export async function resolveOrCreateNamespaces(
  ctx: GatewayServices,
  request: FastifyRequest,
  principal: Principal,
  names: readonly string[],
): Promise<Map<string, string>> {
  const { state, nowMs } = ctx;
  const ids = new Map<string, string>();
  const missing: string[] = [];
  for (const name of new Set(names)) {
    const id = findNamespaceId(state, name);
    if (id === undefined) missing.push(name);
    else ids.set(name, id);
  }
  if (missing.length === 0) return ids;
  if (!holds(principal, createNamespacePermission))
    throw insufficientPermissions(`Missing permission: '${createNamespacePermission}'`);
  for (const name of missing) {
    // Creating a name that exists (a concurrent create) answers the existing id.
    const created = await submitV2(ctx, request, {
      type: "createNamespace",
      namespaceId: ctx.ids.next("rlns"),
      name,
      nowMs: nowMs(),
    });
    ids.set(name, created.id ?? "");
  }
  return ids;
}
