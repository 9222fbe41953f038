import { assert } from "../assert.js";
import { globMatches, literalLength, type OverrideLike } from "./match.js";

interface Ranked<T> {
  override: T;
  literals: number;
}

/** Negative when `a` ranks first: more literal characters, then the lower id (decision 4). */
function compareRanked<T extends OverrideLike>(a: Ranked<T>, b: Ranked<T>): number {
  if (a.literals !== b.literals) return b.literals - a.literals;
  return a.override.id < b.override.id ? -1 : a.override.id > b.override.id ? 1 : 0;
}

/**
 * The wildcard overrides of one namespace, kept in precedence order (most literal characters,
 * then lowest id), so a lookup returns the first glob match and usually stops early. Exact
 * identifiers belong in a Map beside it: look those up first, as `matchOverride` ranks them
 * first. Derived data: rebuild it from the overrides after a restore. Adding and removing cost
 * O(size); a lookup O(size) glob matches at worst.
 */
export class WildcardOverrideIndex<T extends OverrideLike> {
  private readonly ranked: Ranked<T>[] = [];

  /** Number of wildcard overrides held. */
  size(): number {
    return this.ranked.length;
  }

  /** Adds or replaces (by id) an override whose identifier contains `*`. */
  set(override: T): void {
    assert(override.identifier.includes("*"), "WildcardOverrideIndex.set: identifier has a *");
    this.delete(override.id);
    const entry: Ranked<T> = { override, literals: literalLength(override.identifier) };
    let low = 0;
    let high = this.ranked.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (compareRanked(this.ranked[middle]!, entry) < 0) low = middle + 1;
      else high = middle;
    }
    this.ranked.splice(low, 0, entry);
  }

  /** Removes the override with this id; returns whether it was held. */
  delete(id: string): boolean {
    const index = this.ranked.findIndex((entry) => entry.override.id === id);
    if (index < 0) return false;
    this.ranked.splice(index, 1);
    return true;
  }

  /** The best wildcard override matching `identifier`, by keyraft's precedence, or undefined. */
  match(identifier: string): T | undefined {
    for (const entry of this.ranked) {
      if (globMatches(entry.override.identifier, identifier)) return entry.override;
    }
    return undefined;
  }
}
