// Named rate-limit definitions of keys (v1's `default` and v2's named list alike): validated and
// sorted by name, so every replica stores the same list.

import type { RatelimitInput } from "./commands.js";
import { ratelimitsPerRecordMax } from "./limits.js";
import { commandError, type CommandError } from "./outcome.js";
import type { RatelimitConfig } from "./types.js";

export function byName(a: RatelimitConfig, b: RatelimitConfig): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

/**
 * The definitions of `inputs` sorted by name; a name given twice or more than
 * `ratelimitsPerRecordMax` definitions is a BAD_REQUEST (upstream's wording for the duplicate).
 */
export function limitConfigs(inputs: readonly RatelimitInput[]): RatelimitConfig[] | CommandError {
  if (inputs.length > ratelimitsPerRecordMax) {
    return commandError("BAD_REQUEST", `at most ${ratelimitsPerRecordMax} ratelimits may be defined`);
  }
  const configs = new Map<string, RatelimitConfig>();
  for (const input of inputs) {
    if (configs.has(input.name)) {
      return commandError("BAD_REQUEST", `Ratelimit with name '${input.name}' is already defined in the request`);
    }
    configs.set(input.name, {
      name: input.name,
      limit: input.limit,
      durationMs: input.durationMs,
      autoApply: input.autoApply ?? false,
    });
  }
  return [...configs.values()].sort(byName);
}

/** A key's limits at creation: v1's `default` (auto-applied) and v2's named ones. */
export function createdKeyLimits(
  ratelimit: { limit: number; durationMs: number } | null,
  ratelimits: readonly RatelimitInput[] | undefined,
): RatelimitConfig[] | CommandError {
  const inputs: RatelimitInput[] = [...(ratelimits ?? [])];
  if (ratelimit !== null) inputs.push({ name: "default", ...ratelimit, autoApply: true });
  return limitConfigs(inputs);
}
