// Schemas of keys.add/removePermissions, keys.add/removeRoles and permissions.* (field order =
// upstream's zod order).

import { connectionsPerRecordMax } from "@keyraft/core";
import { Type } from "@sinclair/typebox";
import { refItems } from "./keys.js";
import { emptyObject, namedItems, responses, text, optional } from "./common.js";

/** Permission names and slugs: 3..256 characters of [a-zA-Z0-9_.:-] (upstream's rule). */
export const permissionNamePattern = "^[a-zA-Z0-9_.:\\-]*$";
const permissionName = Type.String({ minLength: 3, maxLength: 256, pattern: permissionNamePattern });

const removeItems = (withSlug: boolean) =>
  Type.Array(
    Type.Object({
      id: Type.Optional(text(1)),
      name: Type.Optional(text(1)),
      ...(withSlug ? { slug: Type.Optional(text(1)) } : {}),
    }),
    { minItems: 1, maxItems: connectionsPerRecordMax },
  );

export const addPermissionsBody = Type.Object({ keyId: text(1), permissions: refItems(false, 1) });

export const removePermissionsBody = Type.Object({ keyId: text(1), permissions: removeItems(true) });

export const addRolesBody = Type.Object({ keyId: text(1), roles: refItems(false, 1) });

export const removeRolesBody = Type.Object({ keyId: text(1), roles: removeItems(false) });

export const createPermissionBody = Type.Object({
  name: permissionName,
  slug: Type.Optional(permissionName),
  description: Type.Optional(text(0, 256)),
});

export const createPermissionResponse = responses(Type.Object({ permissionId: Type.String() }));

const permissionView = Type.Object({
  id: Type.String(),
  name: Type.String(),
  slug: Type.String(),
  description: optional(Type.String()),
});

export const getPermissionQuery = Type.Object({ permissionId: text(1) });
export const getPermissionResponse = responses(permissionView);
export const listPermissionsResponse = responses(Type.Array(permissionView));
export const deletePermissionBody = Type.Object({ permissionId: text(1) });

export const createRoleBody = Type.Object({
  name: text(3, 256),
  description: Type.Optional(text(0, 256)),
  /** keyraft extension: ids or slugs of existing permissions the role carries. */
  permissions: Type.Optional(Type.Array(text(1, 512), { maxItems: connectionsPerRecordMax })),
});

export const createRoleResponse = responses(Type.Object({ roleId: Type.String() }));

const roleView = Type.Object({
  id: Type.String(),
  name: Type.String(),
  description: optional(Type.String()),
  permissions: optional(Type.Array(Type.String())),
});

export const getRoleQuery = Type.Object({ roleId: text(1) });
export const getRoleResponse = responses(roleView);
export const listRolesResponse = responses(Type.Array(roleView));
export const deleteRoleBody = Type.Object({ roleId: text(1) });

export const rbacNamedItemsResponse = responses(namedItems);
export const rbacEmptyResponse = responses(emptyObject);
