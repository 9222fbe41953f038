// The per-namespace wildcard index of overrides (derived data of the key state) and the override
// resolution of ratelimits.limit: the exact identifier first, then the best wildcard (decision 4).

import { WildcardOverrideIndex } from "../overrides/wildcard-index.js";
import type { KeyState, OverrideRecord } from "./types.js";

export function indexWildcardOverride(state: KeyState, override: OverrideRecord): void {
  if (!override.identifier.includes("*")) return;
  let index = state.overrideWildcards.get(override.namespaceId);
  if (index === undefined) {
    index = new WildcardOverrideIndex<OverrideRecord>();
    state.overrideWildcards.set(override.namespaceId, index);
  }
  index.set(override);
}

export function unindexWildcardOverride(state: KeyState, override: OverrideRecord): void {
  if (!override.identifier.includes("*")) return;
  const index = state.overrideWildcards.get(override.namespaceId);
  if (index === undefined) return;
  index.delete(override.id);
  if (index.size() === 0) state.overrideWildcards.delete(override.namespaceId);
}

/** The override that applies to `identifier` in the namespace, or undefined. O(1) for exact ones. */
export function resolveOverride(state: KeyState, namespaceId: string, identifier: string): OverrideRecord | undefined {
  const exactId = state.overrideIdsByNamespace.get(namespaceId)?.get(identifier);
  if (exactId !== undefined) return state.overrides.get(exactId);
  return state.overrideWildcards.get(namespaceId)?.match(identifier);
}
