// Schemas of the v2 permissions.* requests (docs/api-v2.md), with upstream's bounds; the objects are in rbac.ts.

import { Type } from "@sinclair/typebox";
import { Closed } from "../validation.js";
import { PageLimit } from "./common.js";

/** Permission slugs: letters, digits and `_ : - . *`. */
export const slugPattern = "^[a-zA-Z0-9_:\\-.*]+$";
/** Slugs one createRole/setRolePermissions call may name (keyraft's bound on a role's permissions). */
export const rolePermissionsMax = 1000;

const Description = Type.String({ maxLength: 512 });
const SlugRef = Type.String({ minLength: 1, maxLength: 128 });

export const CreatePermissionBody = Closed({
  name: Type.String({ minLength: 1, maxLength: 512 }),
  slug: Type.String({ minLength: 1, maxLength: 128, pattern: slugPattern }),
  description: Type.Optional(Description),
});
export const PermissionRefBody = Closed({ permission: Type.String({ minLength: 1, maxLength: 128 }) });
export const RoleRefBody = Closed({ role: Type.String({ minLength: 1, maxLength: 128 }) });
export const ListBody = Closed({
  limit: PageLimit(100),
  cursor: Type.Optional(Type.String({ maxLength: 1024 })),
  search: Type.Optional(Type.String({ maxLength: 256 })),
});
export const CreateRoleBody = Closed({
  name: Type.String({ minLength: 1, maxLength: 128 }),
  description: Type.Optional(Description),
  permissions: Type.Optional(Type.Array(SlugRef, { maxItems: rolePermissionsMax })),
});
export const SetRolePermissionsBody = Closed({
  roleId: Type.String({ minLength: 3, maxLength: 255, pattern: "^[a-zA-Z0-9_-]+$" }),
  permissions: Type.Array(SlugRef, { maxItems: rolePermissionsMax }),
});
