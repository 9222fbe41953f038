// Rate-limit definitions of keys and identities (one model for both, and for v1 and v2).

import { ratelimitId, type RatelimitConfig, type RatelimitInput } from "@keyraft/core";
import { Type, type Static } from "@sinclair/typebox";
import { countMax, durationMsMax } from "../../schemas/common.js";

/** A definition in a request (createKey, updateKey, migrateKeys, createIdentity, updateIdentity). */
export const RatelimitRequest = Type.Object(
  {
    name: Type.String({ minLength: 3, maxLength: 128 }),
    limit: Type.Integer({ minimum: 1, maximum: countMax }),
    duration: Type.Integer({ minimum: 1000, maximum: durationMsMax }),
    autoApply: Type.Boolean({ default: false }),
  },
  { additionalProperties: false },
);
export type RatelimitRequest = Static<typeof RatelimitRequest>;

/** Definitions one request may give (upstream's bound). */
export const ratelimitsPerRequestMax = 50;

export const RatelimitResponse = Type.Object({
  id: Type.String(),
  name: Type.String(),
  limit: Type.Integer(),
  duration: Type.Integer(),
  autoApply: Type.Boolean(),
});
export type RatelimitResponse = Static<typeof RatelimitResponse>;

export function ratelimitInputs(requests: readonly RatelimitRequest[]): RatelimitInput[] {
  return requests.map((request) => ({
    name: request.name,
    limit: request.limit,
    durationMs: request.duration,
    autoApply: request.autoApply,
  }));
}

/** The response form of the definitions of `ownerId` (a key or identity id). */
export function ratelimitViews(ownerId: string, configs: readonly RatelimitConfig[]): RatelimitResponse[] {
  return configs.map((config) => ({
    id: ratelimitId(ownerId, config.name),
    name: config.name,
    limit: config.limit,
    duration: config.durationMs,
    autoApply: config.autoApply,
  }));
}

/** The first name given twice, if any (a 400 before anything is written). */
export function duplicateName(requests: readonly { name: string }[]): string | undefined {
  const seen = new Set<string>();
  for (const request of requests) {
    if (seen.has(request.name)) return request.name;
    seen.add(request.name);
  }
  return undefined;
}
