// Request field schemas of the v2 key routes (upstream's bounds).

import { Type } from "@sinclair/typebox";
import { connectionsPerRecordMax } from "@keyraft/core";
import { expiresMsMax } from "./common.js";
import { RatelimitRequest, ratelimitsPerRequestMax } from "./ratelimits.js";

export const Prefix = Type.String({ minLength: 1, maxLength: 16, pattern: "^[a-zA-Z0-9_]+$" });
export const KeyName = Type.String({ minLength: 1, maxLength: 255 });
export const ExternalId = Type.String({ minLength: 1, maxLength: 255, pattern: "^[a-zA-Z0-9_.-]+$" });
export const MetaRequest = Type.Record(Type.String(), Type.Unknown(), { maxProperties: 100 });
export const PermissionSlug = Type.String({ minLength: 1, maxLength: 128, pattern: "^[a-zA-Z0-9_:\\-.*]+$" });
export const RoleName = Type.String({ minLength: 1, maxLength: 128 });
export const RoleNames = Type.Array(RoleName, { maxItems: 100 });
export const PermissionSlugs = Type.Array(PermissionSlug, { maxItems: Math.min(1000, connectionsPerRecordMax) });
export const Expires = Type.Integer({ minimum: 0, maximum: expiresMsMax });
export const Ratelimits = Type.Array(RatelimitRequest, { maxItems: ratelimitsPerRequestMax });
export const ByteLength = Type.Integer({ minimum: 16, maximum: 255, default: 16 });
