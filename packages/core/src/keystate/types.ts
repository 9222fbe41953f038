import type { AuditLogState } from "../audit/types.js";
import type { CreditLedgerRecord } from "../leases/types.js";
import type { WildcardOverrideIndex } from "../overrides/wildcard-index.js";
import type { LimitCheck } from "../ratelimit/sliding-window.js";
import type { KeyTable } from "./key-table.js";
import type { JsonObject, KeyRecord, RatelimitConfig } from "./records.js";

export type { JsonObject, KeyRecord, RatelimitConfig, RefillRule } from "./records.js";

// The records of the key state. Plain data only (no class instances) so that a snapshot is a
// structural copy and two replicas can be compared field by field.

/** Id of the built-in API that holds root keys. It always exists and cannot be deleted. */
export const ROOT_API_ID = "api_root";
/** The root permission: holding it grants every root-key permission (keyraft decision 6). */
export const ROOT_PERMISSION = "*";

export interface ApiRecord {
  id: string;
  name: string;
  createdAtMs: number;
  deleteProtected: boolean;
}

export interface IdentityRecord {
  id: string;
  externalId: string;
  environment: string;
  meta: JsonObject | null;
  /** Identity-level limits (autoApply false unless set through v2), sorted by name. */
  ratelimits: RatelimitConfig[];
  createdAtMs: number;
}

export interface PermissionRecord {
  id: string;
  name: string;
  slug: string;
  description: string | null;
  createdAtMs: number;
}

export interface RoleRecord {
  id: string;
  name: string;
  description: string | null;
  /** Sorted ids of the permissions the role carries. */
  permissionIds: string[];
  createdAtMs: number;
}

export interface NamespaceRecord {
  id: string;
  name: string;
  createdAtMs: number;
}

export interface OverrideRecord {
  id: string;
  namespaceId: string;
  identifier: string;
  limit: number;
  durationMs: number;
  async: boolean | null;
  createdAtMs: number;
}

/** A limit as verification applies it: its definition, where it is defined and its counter. */
export interface ConfiguredLimit extends RatelimitConfig {
  scope: "key" | "identity";
  /** `rl_...` (ratelimitId of the defining key or identity and the name). */
  id: string;
  /** Limiter key: identity-level limits count per identity, key-level ones per key. */
  counterKey: string;
}

/**
 * What verification needs about a key's authorization and limits, computed once per key and
 * cached (not part of the state: rebuilt on demand, so it never appears in snapshots).
 */
export interface KeyDerived {
  /** Permission slugs, direct and via roles, for query evaluation. */
  slugs: ReadonlySet<string>;
  /** The same slugs as a sorted array (the verify response field). */
  permissions: readonly string[];
  /** Role names, sorted. */
  roles: readonly string[];
  /** Identity limits, then key limits overriding by name, each with its counter (as upstream does). */
  configuredLimits: ReadonlyMap<string, ConfiguredLimit>;
  /** The configured limits with autoApply, in name order. */
  autoLimits: readonly ConfiguredLimit[];
  /**
   * Where the key's verifications are placed in a cluster: its identity id when it has one, else
   * its own id. All counters of a verification (the key's and the identity's) carry it, so one
   * node judges them together.
   */
  limitOwnerId: string;
  /** `autoLimits` as limiter checks of cost 1 (the common request), built once. */
  autoChecks: readonly LimitCheck[];
}

/** The whole key state. Mutated only by `applyCommand`. */
export interface KeyState {
  apis: Map<string, ApiRecord>;
  /** The keys, held as bytes, with their index by hash and their listing by api (key-table.ts). */
  keys: KeyTable;
  identities: Map<string, IdentityRecord>;
  identityIdByExternalId: Map<string, string>;
  permissions: Map<string, PermissionRecord>;
  /** Folded slug (names.ts) -> permission id: slugs are unique ignoring case. */
  permissionIdBySlugFolded: Map<string, string>;
  roles: Map<string, RoleRecord>;
  /** Folded name (names.ts) -> role id: role names are unique ignoring case. */
  roleIdByNameFolded: Map<string, string>;
  namespaces: Map<string, NamespaceRecord>;
  namespaceIdByName: Map<string, string>;
  overrides: Map<string, OverrideRecord>;
  /** namespaceId -> identifier -> overrideId. */
  overrideIdsByNamespace: Map<string, Map<string, string>>;
  /**
   * namespaceId -> its wildcard overrides in precedence order (derived: kept in step by
   * setOverride/deleteOverride, rebuilt by restore; never in snapshots).
   */
  overrideWildcards: Map<string, WildcardOverrideIndex<OverrideRecord>>;
  /** Cache of derived per-key data; see KeyDerived. Cleared on any change that could affect it. */
  derived: Map<string, KeyDerived>;
  /**
   * keyId -> its credit ledger with leases (docs/counters.md). One per key that has or had finite
   * credits (kept while `remaining` is null, so epochs never go back); dropped with the key.
   */
  creditLedgers: Map<string, CreditLedgerRecord>;
  /**
   * Hashes of root keys deleted through the API, oldest first (at most retiredRootKeysMax): a
   * KEYRAFT_ROOT_KEY among them is not created again at a start (gateway state/bootstrap.ts).
   */
  retiredRootKeyHashes: Set<string>;
  /** Who changed what (audit/): derived from the applied commands, so every replica has the same one. */
  audit: AuditLogState;
}
