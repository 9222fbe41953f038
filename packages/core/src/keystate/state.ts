import { createAuditLog } from "../audit/log.js";
import { KeyTable } from "./key-table.js";
import { ROOT_API_ID, type KeyRecord, type KeyState } from "./types.js";

/** A fresh state: empty except for the built-in, delete-protected root API. */
export function createKeyState(): KeyState {
  const state: KeyState = {
    apis: new Map(),
    keys: new KeyTable(),
    identities: new Map(),
    identityIdByExternalId: new Map(),
    permissions: new Map(),
    permissionIdBySlugFolded: new Map(),
    roles: new Map(),
    roleIdByNameFolded: new Map(),
    namespaces: new Map(),
    namespaceIdByName: new Map(),
    overrides: new Map(),
    overrideIdsByNamespace: new Map(),
    overrideWildcards: new Map(),
    derived: new Map(),
    creditLedgers: new Map(),
    retiredRootKeyHashes: new Set(),
    audit: createAuditLog(),
  };
  state.apis.set(ROOT_API_ID, { id: ROOT_API_ID, name: "root", createdAtMs: 0, deleteProtected: true });
  return state;
}

/** Empties every map of `state` in place (restore keeps the object others hold a reference to). */
export function clearKeyState(state: KeyState): void {
  state.apis.clear();
  state.keys.clear();
  state.identities.clear();
  state.identityIdByExternalId.clear();
  state.permissions.clear();
  state.permissionIdBySlugFolded.clear();
  state.roles.clear();
  state.roleIdByNameFolded.clear();
  state.namespaces.clear();
  state.namespaceIdByName.clear();
  state.overrides.clear();
  state.overrideIdsByNamespace.clear();
  state.overrideWildcards.clear();
  state.derived.clear();
  state.creditLedgers.clear();
  state.retiredRootKeyHashes.clear();
  state.audit = createAuditLog();
}

/** Sorted copy without duplicates: connection lists are kept in this canonical form. */
export function sortedUnique(values: Iterable<string>): string[] {
  return [...new Set(values)].sort();
}

/** Stores a key, new or replaced (its credit ledger is stored once touched: credit-ledgers.ts). */
export function indexKey(state: KeyState, fresh: KeyRecord): void {
  state.keys.set(fresh.id, fresh);
}

/** Removes a key and what is kept beside it. */
export function unindexKey(state: KeyState, key: KeyRecord): void {
  state.keys.delete(key.id);
  state.derived.delete(key.id);
  state.creditLedgers.delete(key.id);
}
