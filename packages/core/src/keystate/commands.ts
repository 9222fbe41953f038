// Every admin write is one Command. A command carries every id, hash and timestamp it needs
// (the shell owns the clock and randomness), so applying it is deterministic on every replica.

import type { ExpireCreditLeaseCommand, GrantCreditLeaseCommand, SettleCreditLeaseCommand } from "../leases/types.js";
import type { AuditContext } from "../audit/types.js";
import type { JsonObject } from "./types.js";

/** A reference to a role or permission: by id, or by name/slug (created when allowed). */
export interface RefById {
  id: string;
}
export interface RefByName {
  name: string;
  /** Id used if the name does not exist at apply time and creation is allowed. */
  newId: string;
  /** From the request's `create` flag (setRoles/setPermissions); createKey always creates. */
  create: boolean;
}
export type Ref = RefById | RefByName;

/** A named rate-limit definition of a key or an identity. */
export interface RatelimitInput {
  name: string;
  limit: number;
  durationMs: number;
  /** Applied to every verification without being named; absent = false (v1 identity limits). */
  autoApply?: boolean;
}

export interface RefillInput {
  interval: "daily" | "monthly";
  amount: number;
  refillDay: number | null;
}

/** Link to an identity by external id; `newIdentityId` is used when it does not exist yet. */
export interface IdentityLink {
  externalId: string;
  newIdentityId: string;
  /**
   * false: an identity with this externalId that already exists is not linked (the caller holds
   * no identity permission, auth/identity-link.ts) and the command fails. Absent (entries written
   * before the rule): allowed.
   */
  mayLinkExisting?: boolean;
}

export interface CreateApiCommand {
  type: "createApi";
  apiId: string;
  name: string;
  nowMs: number;
}
export interface DeleteApiCommand {
  type: "deleteApi";
  apiId: string;
}
export interface CreateKeyCommand {
  type: "createKey";
  keyId: string;
  apiId: string;
  hash: string;
  start: string;
  name: string | null;
  ownerId: string | null;
  identity: IdentityLink | null;
  meta: JsonObject | null;
  expiresAtMs: number | null;
  remaining: number | null;
  refill: RefillInput | null;
  ratelimit: { limit: number; durationMs: number } | null;
  /** Named key-level limits (v2); with `ratelimit` too, a `default` here is refused as a duplicate. */
  ratelimits?: RatelimitInput[];
  /** A balance of 0 is accepted (v2); v1 refuses it. */
  zeroRemainingAllowed?: boolean;
  enabled: boolean;
  environment: string | null;
  /** Permission slugs / role names; missing ones are created with `newId` iff `allowCreate*`. */
  permissions: RefByName[];
  roles: RefByName[];
  allowCreatePermissions: boolean;
  allowCreateRoles: boolean;
  nowMs: number;
}
/** Field absent = untouched; null = cleared. Roles/permissions given = whole-set replacement. */
export interface UpdateKeyCommand {
  type: "updateKey";
  keyId: string;
  nowMs: number;
  name?: string | null;
  ownerId?: string | null;
  /** null disconnects the identity (and clears ownerId). */
  identity?: IdentityLink | null;
  meta?: JsonObject | null;
  expiresAtMs?: number | null;
  ratelimit?: { limit: number; durationMs: number } | null;
  /** Given = whole-set replacement of the key-level limits by name (v2); not with `ratelimit`. */
  ratelimits?: RatelimitInput[];
  remaining?: number | null;
  refill?: RefillInput | null;
  enabled?: boolean;
  roles?: { refs: Ref[]; allowCreate: boolean };
  permissions?: { refs: Ref[]; allowCreate: boolean };
}
export interface DeleteKeyCommand {
  type: "deleteKey";
  keyId: string;
}
/** apis.deleteKeys: deletes every key of the api (the api stays). */
export interface DeleteKeysCommand {
  type: "deleteKeys";
  apiId: string;
}
/** One key of migrations.createKeys: an existing secret imported by its hash. */
export interface ImportedKey {
  keyId: string;
  apiId: string;
  hash: string;
  start: string;
  name: string | null;
  ownerId: string | null;
  identity: IdentityLink | null;
  meta: JsonObject | null;
  expiresAtMs: number | null;
  remaining: number | null;
  refill: RefillInput | null;
  ratelimit: { limit: number; durationMs: number } | null;
  /** Named key-level limits (v2 migrateKeys). */
  ratelimits?: RatelimitInput[];
  /** The migration whose verification completes this key (its `hash` is then the migration's own form). */
  migrationId?: string;
  enabled: boolean;
  environment: string | null;
  /** Permission slugs / role names; missing ones are created (iff allowed) with `newId`. */
  permissions: RefByName[];
  roles: RefByName[];
}
/**
 * migrations.createKeys: all keys or none (one atomic command). With `skipExistingHashes` (v2
 * migrateKeys), a key whose hash is already stored or repeated in the command is skipped instead
 * (reported in the outcome's `skipped`) and the others are imported.
 */
export interface ImportKeysCommand {
  type: "importKeys";
  keys: ImportedKey[];
  skipExistingHashes?: boolean;
  /** Balances of 0 are accepted (v2). */
  zeroRemainingAllowed?: boolean;
  allowCreatePermissions: boolean;
  allowCreateRoles: boolean;
  nowMs: number;
}
export interface SetPermissionsCommand {
  type: "setPermissions";
  keyId: string;
  refs: Ref[];
  allowCreate: boolean;
  nowMs: number;
}
export interface SetRolesCommand {
  type: "setRoles";
  keyId: string;
  refs: Ref[];
  allowCreate: boolean;
  nowMs: number;
}
export interface AddPermissionsCommand {
  type: "addPermissions";
  keyId: string;
  refs: Ref[];
  allowCreate: boolean;
  nowMs: number;
}
export interface RemovePermissionsCommand {
  type: "removePermissions";
  keyId: string;
  /** Ids or slugs; unknown ones are ignored. */
  refs: Array<RefById | { name: string }>;
}
export interface AddRolesCommand {
  type: "addRoles";
  keyId: string;
  refs: Ref[];
  allowCreate: boolean;
  nowMs: number;
}
export interface RemoveRolesCommand {
  type: "removeRoles";
  keyId: string;
  refs: Array<RefById | { name: string }>;
}
export interface UpdateRemainingCommand {
  type: "updateRemaining";
  keyId: string;
  op: "increment" | "decrement" | "set";
  value: number | null;
  nowMs: number;
}
export interface CreatePermissionCommand {
  type: "createPermission";
  permissionId: string;
  name: string;
  slug: string;
  description: string | null;
  nowMs: number;
}
export interface DeletePermissionCommand {
  type: "deletePermission";
  permissionId: string;
}
export interface CreateRoleCommand {
  type: "createRole";
  roleId: string;
  name: string;
  description: string | null;
  /** Ids of existing permissions the role carries. */
  permissionIds: string[];
  /**
   * Slugs the role carries as well (v2 createRole): matched ignoring case, missing ones created
   * with their `newId` iff `allowCreate`. Absent in commands written before v2.
   */
  permissions?: { refs: RefByName[]; allowCreate: boolean };
  nowMs: number;
}
/** v2 permissions.setRolePermissions: the role's whole permission set, by slug. */
export interface SetRolePermissionsCommand {
  type: "setRolePermissions";
  roleId: string;
  refs: RefByName[];
  /** Whether slugs that do not exist may be created (with their `newId`). */
  allowCreate: boolean;
  nowMs: number;
}
export interface DeleteRoleCommand {
  type: "deleteRole";
  roleId: string;
}
export interface CreateIdentityCommand {
  type: "createIdentity";
  identityId: string;
  externalId: string;
  environment: string;
  meta: JsonObject | null;
  ratelimits: RatelimitInput[];
  nowMs: number;
}
export interface UpdateIdentityCommand {
  type: "updateIdentity";
  identityId: string;
  meta?: JsonObject | null;
  /** Given = whole-set replacement. */
  ratelimits?: RatelimitInput[];
}
export interface DeleteIdentityCommand {
  type: "deleteIdentity";
  identityId: string;
}
export interface CreateNamespaceCommand {
  type: "createNamespace";
  namespaceId: string;
  name: string;
  nowMs: number;
}
export interface SetOverrideCommand {
  type: "setOverride";
  /** Used only when no override exists for (namespace, identifier); an existing one keeps its id. */
  overrideId: string;
  namespaceId: string;
  identifier: string;
  limit: number;
  durationMs: number;
  async: boolean | null;
  nowMs: number;
}
export interface DeleteOverrideCommand {
  type: "deleteOverride";
  namespaceId: string;
  identifier: string;
}
/**
 * keys.rerollKey: a new key `newKeyId` copying the old key's configuration (api, enabled, current
 * balance, refill, name, identity, meta, expiry, key-level limits, roles, permissions), and the
 * old key's expiry set to `oldExpiresAtMs` (its grace period's end).
 */
export interface RerollKeyCommand {
  type: "rerollKey";
  keyId: string;
  newKeyId: string;
  hash: string;
  start: string;
  oldExpiresAtMs: number;
  nowMs: number;
}
/**
 * Completes the migration of a key pending for `migrationId` (its first verification with the
 * plaintext): its hash becomes the standard one, `start` is set and the pending mark cleared.
 */
export interface CompleteMigrationCommand {
  type: "completeMigration";
  keyId: string;
  migrationId: string;
  hash: string;
  start: string;
}
/** Appended by the shell right after a VALID verification decision that costs credits. */
export interface SpendCreditsCommand {
  type: "spendCredits";
  keyId: string;
  cost: number;
  nowMs: number;
}
/** Makes the key with `hash` a root key holding `*` (idempotent). */
export interface EnsureRootKeyCommand {
  type: "ensureRootKey";
  keyId: string;
  hash: string;
  start: string;
  /** Id for the `*` permission if it does not exist yet. */
  permissionId: string;
  nowMs: number;
}

/**
 * A lease of credits for one node (docs/counters.md). `voters` is the voter set as the proposer
 * saw it: carried in the command so every replica sizes the grant and names the key's owner
 * alike. Only grant sizes and the owner depend on it, never the accounting (no overspend).
 */
export interface GrantCreditLeaseKeyCommand extends GrantCreditLeaseCommand {
  voters: string[];
}
/** The daily or monthly refill of keys whose refill instant (00:00 UTC) passed by `nowMs` (proposed by the leader). */
export interface RefillCreditsCommand {
  type: "refillCredits";
  keyIds: string[];
  nowMs: number;
}
export type CreditBatchItem = GrantCreditLeaseKeyCommand | SettleCreditLeaseCommand | ExpireCreditLeaseCommand;
/** Lease commands of one node (or the leader's expiries) in one log entry: applied in order, one outcome each. */
export interface CreditBatchCommand {
  type: "creditBatch";
  commands: CreditBatchItem[];
}

/**
 * An admin write outside the key state (a cluster membership change) recorded in the audit log:
 * it changes nothing else. `action` is one of auditEventActions (audit/describe.ts).
 */
export interface AuditEventCommand {
  type: "auditEvent";
  action: string;
  targetIds: string[];
  changes: Record<string, string | number | boolean | null>;
}

/** Any command may carry who asked for it: an admin write with one leaves an audit entry (audit/log.ts). */
export interface CommandAudit {
  audit?: AuditContext;
}

export type KeyCommand = (
  | CreateApiCommand
  | DeleteApiCommand
  | CreateKeyCommand
  | UpdateKeyCommand
  | DeleteKeyCommand
  | DeleteKeysCommand
  | ImportKeysCommand
  | SetPermissionsCommand
  | SetRolesCommand
  | AddPermissionsCommand
  | RemovePermissionsCommand
  | AddRolesCommand
  | RemoveRolesCommand
  | UpdateRemainingCommand
  | CreatePermissionCommand
  | DeletePermissionCommand
  | CreateRoleCommand
  | DeleteRoleCommand
  | SetRolePermissionsCommand
  | CreateIdentityCommand
  | UpdateIdentityCommand
  | DeleteIdentityCommand
  | CreateNamespaceCommand
  | SetOverrideCommand
  | DeleteOverrideCommand
  | SpendCreditsCommand
  | RerollKeyCommand
  | CompleteMigrationCommand
  | EnsureRootKeyCommand
  | GrantCreditLeaseKeyCommand
  | SettleCreditLeaseCommand
  | ExpireCreditLeaseCommand
  | RefillCreditsCommand
  | CreditBatchCommand
  | AuditEventCommand
) &
  CommandAudit;

export type KeyCommandType = KeyCommand["type"];
