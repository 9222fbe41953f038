// What many records hold alike, held once. A node keeps every key in memory, so the bytes per key
// are the size limit of a cluster (README "Memory"): a key without roles shares one empty list,
// keys with the same limits share one frozen list of them, and a key's api id is the api record's
// own string rather than a copy per key. Records are never changed in place (commands replace
// them), so sharing is invisible to every reader; the shared values are frozen all the same, so
// a change in place would throw instead of changing other keys.
import { interningTableMax } from "./limits.js";
import type { KeyRecord, KeyState, RatelimitConfig } from "./types.js";

const noIds: string[] = Object.freeze([]) as unknown as string[];
const noLimits: RatelimitConfig[] = Object.freeze([]) as unknown as RatelimitConfig[];

/** Frozen lists of limits by their content (limitsKey); at most interningTableMax, then no more are added. */
const internedLimits = new Map<string, RatelimitConfig[]>();

/** `ids` itself, or the one shared empty list when it is empty. */
export function sharedIds(ids: string[]): string[] {
  return ids.length === 0 ? noIds : ids;
}

function limitsKey(limits: readonly RatelimitConfig[]): string {
  let key = "";
  for (const limit of limits)
    key += `${limit.name}\u0000${limit.limit}\u0000${limit.durationMs}\u0000${limit.autoApply}\u0001`;
  return key;
}

/** The list sharedLimits returned last: an import gives most of its keys the same limits. */
let lastShared: RatelimitConfig[] = noLimits;

function sameLimits(a: readonly RatelimitConfig[], b: readonly RatelimitConfig[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!;
    const y = b[i]!;
    if (x.name !== y.name || x.limit !== y.limit || x.durationMs !== y.durationMs || x.autoApply !== y.autoApply)
      return false;
  }
  return true;
}

/** The shared frozen list equal to `limits` (the list itself when the table is full). */
export function sharedLimits(limits: RatelimitConfig[]): RatelimitConfig[] {
  if (limits.length === 0) return noLimits;
  if (sameLimits(limits, lastShared)) return lastShared;
  const key = limitsKey(limits);
  const interned = internedLimits.get(key);
  if (interned !== undefined) return (lastShared = interned);
  if (internedLimits.size >= interningTableMax) return limits;
  const frozen = Object.freeze(limits.map((limit) => Object.freeze({ ...limit }))) as RatelimitConfig[];
  internedLimits.set(key, frozen);
  return (lastShared = frozen);
}

/**
 * `key` with its lists and its api and identity ids replaced by the shared equal values. For a
 * record about to be stored (it changes `key`, which nothing else holds yet); equal field by field
 * to what it was given.
 */
export function compactKey(state: KeyState, key: KeyRecord): KeyRecord {
  const api = state.apis.get(key.apiId);
  if (api !== undefined) key.apiId = api.id;
  if (key.identityId !== null) {
    const identity = state.identities.get(key.identityId);
    if (identity !== undefined) key.identityId = identity.id;
  }
  key.roleIds = sharedIds(key.roleIds);
  key.permissionIds = sharedIds(key.permissionIds);
  key.ratelimits = sharedLimits(key.ratelimits);
  return key;
}
