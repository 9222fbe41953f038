// Lookups and checks the v2 key routes share.

import {
  roleIdOfName,
  ROOT_API_ID,
  ROOT_PERMISSION,
  type IdentityLink,
  type KeyRecord,
  type KeyState,
  type RefByName,
} from "@keyraft/core";
import { identityLink } from "../auth/identity-link.js";
import type { GatewayServices } from "../services.js";
import { metaTooLarge } from "../routes/guards.js";
import type { Principal } from "./auth.js";
import { V2Error, insufficientPermissions, invalidInput } from "./problem.js";

export const keyNotFoundDetail = "The specified key was not found.";
export const keyNotFound = (): V2Error => new V2Error("key_not_found", keyNotFoundDetail);

/** A live key by id (its api exists), or 404 `key_not_found`. */
export function liveKey(state: KeyState, keyId: string): KeyRecord {
  const key = state.keys.get(keyId);
  if (key === undefined || !state.apis.has(key.apiId)) throw keyNotFound();
  return key;
}

/**
 * Keys of the root api are root keys: only a caller holding `*` may create or change them, so
 * no one can grant a permission they do not hold (as in v1).
 */
export function requireRootAdmin(principal: Principal, apiId: string): void {
  if (apiId === ROOT_API_ID && !principal.slugs.has(ROOT_PERMISSION)) {
    throw insufficientPermissions(`Missing permission: '${ROOT_PERMISSION}' (needed to manage keys of ${ROOT_API_ID})`);
  }
}

/** Metadata within keyraft's one limit (64,000 characters of JSON, as v1), as a v2 400. */
export function checkMetaV2(meta: Record<string, unknown> | null | undefined, location = "body/meta"): void {
  const message = metaTooLarge(meta);
  if (message !== null) throw invalidInput(message, location);
}

/** 404 `role_not_found` for the first role name that does not exist. */
export function requireRolesExist(state: KeyState, names: readonly string[]): void {
  for (const name of names) {
    if (roleIdOfName(state, name) === undefined) throw new V2Error("role_not_found", `Role '${name}' was not found.`);
  }
}

/** Permission slugs as references that create missing ones (createKey/updateKey, as upstream v2). */
export function permissionRefs(ctx: GatewayServices, slugs: readonly string[]): RefByName[] {
  return [...new Set(slugs)].map((slug) => ({ name: slug, newId: ctx.ids.next("perm"), create: true }));
}

/** Role names as references that never create. */
export function roleRefs(ctx: GatewayServices, names: readonly string[]): RefByName[] {
  return [...new Set(names)].map((name) => ({ name, newId: ctx.ids.next("role"), create: false }));
}

/** The NOT_FOUND of a role reference that vanished between the route's check and the command. */
export function roleNotFoundOf(message: string): V2Error | undefined {
  const match = /^role (.+) not found/.exec(message);
  return match === null ? undefined : new V2Error("role_not_found", `Role '${match[1]}' was not found.`);
}

/**
 * The identity link of an `externalId` (auth/identity-link.ts): linking to an EXISTING identity
 * needs `identity.*.update_identity` or `identity.<id>.update_identity` (or `*`), as in v1.
 */
export function identityLinkV2(
  state: KeyState,
  principal: Principal,
  externalId: string,
  newIdentityId: string,
): IdentityLink {
  return identityLink(state, principal, externalId, newIdentityId, (identityId) =>
    insufficientPermissions(
      `Missing one of these permissions: identity.*.update_identity or identity.${identityId}.update_identity (needed to link a key to the existing identity ${identityId})`,
    ),
  );
}
