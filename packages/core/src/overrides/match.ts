import { assert } from "../assert.js";

/** What override matching needs of an override: its id (tie-break) and identifier (a glob). */
export interface OverrideLike {
  id: string;
  identifier: string;
}

/**
 * Whether `pattern` matches all of `text`: `*` matches any sequence (including empty), every
 * other character matches itself, anchored at both ends (upstream's `pkg/util/wildcard.ts`
 * without its regex). Splits the pattern at `*` and places each literal segment at its leftmost
 * occurrence, which is correct for `*`-only globs and costs O(|pattern| + |text|) `indexOf`
 * work: no backtracking, so no catastrophic inputs.
 */
export function globMatches(pattern: string, text: string): boolean {
  const segments = pattern.split("*");
  if (segments.length === 1) return pattern === text;
  const first = segments[0]!;
  const last = segments[segments.length - 1]!;
  if (first.length + last.length > text.length) return false;
  if (!text.startsWith(first) || !text.endsWith(last)) return false;
  let at = first.length;
  const end = text.length - last.length;
  for (let i = 1; i < segments.length - 1; i++) {
    const segment = segments[i]!;
    if (segment.length === 0) continue;
    const found = text.indexOf(segment, at);
    if (found < 0 || found + segment.length > end) return false;
    at = found + segment.length;
  }
  assert(at <= end, "globMatches: middle segments end before the suffix");
  return true;
}

/** Literal (non-`*`) UTF-16 code units of a glob: its specificity. */
export function literalLength(pattern: string): number {
  let stars = 0;
  for (let i = 0; i < pattern.length; i++) if (pattern.charCodeAt(i) === 42) stars++;
  return pattern.length - stars;
}

/**
 * keyraft's deterministic precedence among matching overrides (decision 4): negative when `a`
 * wins. An exact identifier beats every wildcard; then more literal characters win; then the
 * lower id (plain string order, the same on every node).
 */
export function compareOverridePrecedence(a: OverrideLike, b: OverrideLike, identifier: string): number {
  const aExact = a.identifier === identifier;
  const bExact = b.identifier === identifier;
  if (aExact !== bExact) return aExact ? -1 : 1;
  const literalDifference = literalLength(b.identifier) - literalLength(a.identifier);
  if (literalDifference !== 0) return literalDifference;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/**
 * The override that applies to `identifier`, or undefined (decision 4): an override whose
 * identifier equals it exactly wins; else, among overrides whose identifier contains `*` and
 * matches as a glob, the one with the most literal characters; ties go to the lowest id. The
 * result does not depend on iteration order. Pass only live (not deleted) overrides.
 */
export function matchOverride<T extends OverrideLike>(overrides: Iterable<T>, identifier: string): T | undefined {
  let best: T | undefined;
  for (const candidate of overrides) {
    if (candidate.identifier !== identifier) {
      if (!candidate.identifier.includes("*")) continue;
      if (best !== undefined && compareOverridePrecedence(candidate, best, identifier) >= 0) continue;
      if (!globMatches(candidate.identifier, identifier)) continue;
    } else if (best !== undefined && compareOverridePrecedence(candidate, best, identifier) >= 0) {
      continue;
    }
    best = candidate;
  }
  return best;
}
