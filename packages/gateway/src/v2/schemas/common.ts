// Field schemas shared by the v2 routes, with upstream's bounds (docs/api-v2.md).

import { Type } from "@sinclair/typebox";

/** Ids in requests: letters, digits and `_`. */
export const idPattern = "^[a-zA-Z0-9_]+$";

/** `apiId` of get/delete/migrate lookups: 8..255 (createKey: 3..255). */
export const ApiIdLookup = Type.String({ minLength: 8, maxLength: 255, pattern: idPattern });
export const ApiIdCreate = Type.String({ minLength: 3, maxLength: 255, pattern: idPattern });
export const KeyId = Type.String({ minLength: 3, maxLength: 255, pattern: idPattern });

/** Unix ms bound of `expires` (2100-01-01). */
export const expiresMsMax = 4_102_444_800_000;

/** Request `limit` of the list routes. */
export const PageLimit = (defaultLimit: number) => Type.Integer({ minimum: 1, maximum: 100, default: defaultLimit });
