// What an admin command changed, as an audit entry's action, targets and fields. Pure: only the
// command and its outcome. Secrets never get here (commands carry hashes, not keys); hashes,
// key starts and metadata values are left out all the same.
import type { KeyCommand, Ref } from "../keystate/commands.js";
import type { CommandOk } from "../keystate/outcome.js";
import { auditListItemsMax, auditTargetIdsMax } from "./limits.js";

export interface AuditDescription {
  action: string;
  targetIds: string[];
  changes: Record<string, unknown>;
}

/** Every action an entry can have (the dashboard's filter lists them). */
export const auditActions = [
  "api.create",
  "api.delete",
  "api.deleteKeys",
  "key.create",
  "key.update",
  "key.delete",
  "key.import",
  "key.updateRemaining",
  "key.setPermissions",
  "key.addPermissions",
  "key.removePermissions",
  "key.setRoles",
  "key.addRoles",
  "key.removeRoles",
  "key.reroll",
  "key.completeMigration",
  "permission.create",
  "permission.delete",
  "role.create",
  "role.delete",
  "role.setPermissions",
  "identity.create",
  "identity.update",
  "identity.delete",
  "ratelimitNamespace.create",
  "ratelimitOverride.set",
  "ratelimitOverride.delete",
  "rootKey.create",
  "cluster.addNode",
  "cluster.removeNode",
] as const;
/** The actions of auditEvent commands (writes outside the key state). */
export const auditEventActions = ["cluster.addNode", "cluster.removeNode"] as const;
export type AuditEventAction = (typeof auditEventActions)[number];
export type AuditAction = (typeof auditActions)[number];

function bounded<T>(items: readonly T[]): T[] {
  return items.slice(0, auditListItemsMax);
}

function refName(ref: Ref | { name: string }): string {
  return "id" in ref ? ref.id : ref.name;
}

/** Metadata is user data: the entry says that it was set or cleared, never what it holds. */
function metaChange(meta: unknown): string | null {
  return meta === null ? null : "set";
}

function defined(fields: Record<string, unknown>): Record<string, unknown> {
  const changes: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(fields)) if (value !== undefined) changes[name] = value;
  return changes;
}

function entry(action: AuditAction, targetIds: readonly string[], changes: Record<string, unknown> = {}) {
  return { action, targetIds: targetIds.slice(0, auditTargetIdsMax), changes };
}

/** The entry of an applied command; null for commands that are not admin writes (credit spends, leases, refills). */
export function describeCommand(command: KeyCommand, outcome: CommandOk): AuditDescription | null {
  switch (command.type) {
    case "createApi":
      return entry("api.create", [command.apiId], { name: command.name });
    case "deleteApi":
      return entry("api.delete", [command.apiId]);
    case "deleteKeys":
      return entry("api.deleteKeys", [command.apiId], { deletedKeys: outcome.count ?? 0 });
    case "createKey":
      return entry(
        "key.create",
        [command.keyId, command.apiId],
        defined({
          name: command.name ?? undefined,
          ownerId: command.ownerId ?? undefined,
          externalId: command.identity?.externalId,
          meta: command.meta === null ? undefined : "set",
          expiresAtMs: command.expiresAtMs ?? undefined,
          remaining: command.remaining ?? undefined,
          refill: command.refill ?? undefined,
          ratelimit: command.ratelimit ?? undefined,
          ratelimits: command.ratelimits === undefined ? undefined : bounded(command.ratelimits),
          enabled: command.enabled,
          environment: command.environment ?? undefined,
          permissions: command.permissions.length === 0 ? undefined : bounded(command.permissions.map(refName)),
          roles: command.roles.length === 0 ? undefined : bounded(command.roles.map(refName)),
        }),
      );
    case "updateKey":
      return entry(
        "key.update",
        [command.keyId],
        defined({
          name: command.name,
          ownerId: command.ownerId,
          externalId: command.identity === undefined ? undefined : (command.identity?.externalId ?? null),
          meta: command.meta === undefined ? undefined : metaChange(command.meta),
          expiresAtMs: command.expiresAtMs,
          ratelimit: command.ratelimit,
          ratelimits: command.ratelimits === undefined ? undefined : bounded(command.ratelimits),
          remaining: command.remaining,
          refill: command.refill,
          enabled: command.enabled,
          roles: command.roles === undefined ? undefined : bounded(command.roles.refs.map(refName)),
          permissions: command.permissions === undefined ? undefined : bounded(command.permissions.refs.map(refName)),
        }),
      );
    case "deleteKey":
      return entry("key.delete", [command.keyId]);
    case "rerollKey":
      // The new key first: it is what the reroll made; the old one expires at oldExpiresAtMs.
      return entry("key.reroll", [command.newKeyId, command.keyId], { oldExpiresAtMs: command.oldExpiresAtMs });
    case "completeMigration":
      return entry("key.completeMigration", [command.keyId], { migrationId: command.migrationId });
    case "importKeys":
      return entry(
        "key.import",
        outcome.ids ?? command.keys.map((key) => key.keyId),
        defined({ importedKeys: outcome.ids?.length ?? command.keys.length, skippedHashes: outcome.skipped?.length }),
      );
    case "updateRemaining":
      return entry("key.updateRemaining", [command.keyId], { op: command.op, value: command.value });
    case "setPermissions":
    case "addPermissions":
    case "removePermissions":
    case "setRoles":
    case "addRoles":
    case "removeRoles": {
      const list = command.type.endsWith("Permissions") ? "permissions" : "roles";
      const resolved = outcome.items?.map((item) => item.id) ?? [];
      return entry(`key.${command.type}` as AuditAction, [command.keyId, ...resolved], {
        [list]: bounded(command.refs.map(refName)),
      });
    }
    case "createPermission":
      return entry(
        "permission.create",
        [command.permissionId],
        defined({ name: command.name, slug: command.slug, description: command.description ?? undefined }),
      );
    case "deletePermission":
      return entry("permission.delete", [command.permissionId]);
    case "createRole":
      return entry(
        "role.create",
        [command.roleId, ...command.permissionIds],
        defined({ name: command.name, description: command.description ?? undefined }),
      );
    case "deleteRole":
      return entry("role.delete", [command.roleId]);
    case "setRolePermissions":
      return entry("role.setPermissions", [command.roleId], {
        permissions: bounded(command.refs.map((ref) => ref.name)),
      });
    case "createIdentity":
      return entry(
        "identity.create",
        [command.identityId],
        defined({
          externalId: command.externalId,
          environment: command.environment,
          meta: command.meta === null ? undefined : "set",
          ratelimits: command.ratelimits.length === 0 ? undefined : bounded(command.ratelimits),
        }),
      );
    case "updateIdentity":
      return entry(
        "identity.update",
        [command.identityId],
        defined({
          meta: command.meta === undefined ? undefined : metaChange(command.meta),
          ratelimits: command.ratelimits === undefined ? undefined : bounded(command.ratelimits),
        }),
      );
    case "deleteIdentity":
      return entry("identity.delete", [command.identityId]);
    case "createNamespace":
      return entry("ratelimitNamespace.create", [command.namespaceId], { name: command.name });
    case "setOverride":
      return entry("ratelimitOverride.set", [outcome.id ?? command.overrideId, command.namespaceId], {
        identifier: command.identifier,
        limit: command.limit,
        durationMs: command.durationMs,
        async: command.async,
      });
    case "deleteOverride":
      return entry("ratelimitOverride.delete", [command.namespaceId], { identifier: command.identifier });
    case "ensureRootKey":
      // Idempotent: only the write that created the key is an entry.
      return outcome.created === true ? entry("rootKey.create", [command.keyId]) : null;
    case "auditEvent":
      return entry(command.action as AuditAction, command.targetIds, { ...command.changes });
    case "spendCredits":
    case "grantCreditLease":
    case "settleCreditLease":
    case "expireCreditLease":
    case "creditBatch":
    case "refillCredits":
      return null;
    default: {
      const unreachable: never = command;
      throw new Error(`describeCommand: unknown command ${JSON.stringify(unreachable)}`);
    }
  }
}
