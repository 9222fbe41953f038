// Schemas of keys.add/removePermissions, keys.add/removeRoles and permissions.* (field order =
// upstream's zod order).

import { connectionsPerRecordMax } from "@keyraft/core";
import { refItems } from "./keys.js";
import { emptyObject, namedItems, responses, text } from "./common.js";

/** Permission names and slugs: 3..256 characters of [a-zA-Z0-9_.:-] (upstream's rule). */
export const permissionNamePattern = "^[a-zA-Z0-9_.:\\-]*$";
const permissionName = { ...text(3, 256), pattern: permissionNamePattern } as const;

const removeItems = (withSlug: boolean) =>
  ({
    type: "array",
    minItems: 1,
    maxItems: connectionsPerRecordMax,
    items: {
      type: "object",
      properties: { id: text(1), name: text(1), ...(withSlug ? { slug: text(1) } : {}) },
    },
  }) as const;

export const addPermissionsBody = {
  type: "object",
  properties: { keyId: text(1), permissions: refItems(false, 1) },
  required: ["keyId", "permissions"],
} as const;

export const removePermissionsBody = {
  type: "object",
  properties: { keyId: text(1), permissions: removeItems(true) },
  required: ["keyId", "permissions"],
} as const;

export const addRolesBody = {
  type: "object",
  properties: { keyId: text(1), roles: refItems(false, 1) },
  required: ["keyId", "roles"],
} as const;

export const removeRolesBody = {
  type: "object",
  properties: { keyId: text(1), roles: removeItems(false) },
  required: ["keyId", "roles"],
} as const;

export const createPermissionBody = {
  type: "object",
  properties: { name: permissionName, slug: permissionName, description: text(0, 256) },
  required: ["name"],
} as const;

export const createPermissionResponse = responses({
  type: "object",
  properties: { permissionId: { type: "string" } },
  required: ["permissionId"],
});

const permissionView = {
  type: "object",
  properties: {
    id: { type: "string" },
    name: { type: "string" },
    slug: { type: "string" },
    description: { type: "string" },
  },
  required: ["id", "name", "slug"],
} as const;

export const getPermissionQuery = {
  type: "object",
  properties: { permissionId: text(1) },
  required: ["permissionId"],
} as const;
export const getPermissionResponse = responses(permissionView);
export const listPermissionsResponse = responses({ type: "array", items: permissionView });
export const deletePermissionBody = {
  type: "object",
  properties: { permissionId: text(1) },
  required: ["permissionId"],
} as const;

export const createRoleBody = {
  type: "object",
  properties: {
    name: text(3, 256),
    description: text(0, 256),
    /** keyraft extension: ids or slugs of existing permissions the role carries. */
    permissions: { type: "array", maxItems: connectionsPerRecordMax, items: text(1, 512) },
  },
  required: ["name"],
} as const;

export const createRoleResponse = responses({
  type: "object",
  properties: { roleId: { type: "string" } },
  required: ["roleId"],
});

const roleView = {
  type: "object",
  properties: {
    id: { type: "string" },
    name: { type: "string" },
    description: { type: "string" },
    permissions: { type: "array", items: { type: "string" } },
  },
  required: ["id", "name"],
} as const;

export const getRoleQuery = { type: "object", properties: { roleId: text(1) }, required: ["roleId"] } as const;
export const getRoleResponse = responses(roleView);
export const listRolesResponse = responses({ type: "array", items: roleView });
export const deleteRoleBody = { type: "object", properties: { roleId: text(1) }, required: ["roleId"] } as const;

export const rbacNamedItemsResponse = responses(namedItems);
export const rbacEmptyResponse = responses(emptyObject);
