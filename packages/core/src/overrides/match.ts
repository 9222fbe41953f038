import { assert } from "../assert.js";

/** What override matching needs of an override: its id (tie-break) and identifier (a glob). */
export interface OverrideLike {
  id: string;
  identifier: string;
}

/**
 * Whether `pattern` matches all of `text`: `*` matches any sequence (including empty), every
 * other character matches itself, anchored at both ends (upstream's `pkg/util/wildcard.ts`
 * without its regex). The literal prefix and suffix are compared in place; each middle segment
 * is placed at its leftmost occurrence after the previous one, which is correct for `*`-only
 * globs. No backtracking: the work is at most one `indexOf` scan of the text per segment, so no
 * input is catastrophic, and the common shapes (`user_*`, `*_admin`) allocate nothing.
 */
export function globMatches(pattern: string, text: string): boolean {
  const firstStar = pattern.indexOf("*");
  if (firstStar < 0) return pattern === text;
  const lastStar = pattern.lastIndexOf("*");
  const suffixLength = pattern.length - lastStar - 1;
  if (firstStar + suffixLength > text.length) return false;
  for (let i = 0; i < firstStar; i++) {
    if (pattern.charCodeAt(i) !== text.charCodeAt(i)) return false;
  }
  for (let i = 1; i <= suffixLength; i++) {
    if (pattern.charCodeAt(pattern.length - i) !== text.charCodeAt(text.length - i)) return false;
  }
  const end = text.length - suffixLength;
  let at = firstStar;
  let segmentStart = firstStar + 1;
  while (segmentStart < lastStar) {
    const segmentEnd = pattern.indexOf("*", segmentStart);
    if (segmentEnd > segmentStart) {
      const found = text.indexOf(pattern.slice(segmentStart, segmentEnd), at);
      if (found < 0 || found + (segmentEnd - segmentStart) > end) return false;
      at = found + (segmentEnd - segmentStart);
    }
    segmentStart = segmentEnd + 1;
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
  let bestExact = false;
  let bestLiterals = -1;
  for (const candidate of overrides) {
    const pattern = candidate.identifier;
    if (pattern === identifier) {
      if (bestExact && candidate.id >= best!.id) continue;
      best = candidate;
      bestExact = true;
      continue;
    }
    if (bestExact) continue;
    // Cheap rank checks before the glob match: most candidates lose on rank or have no `*`.
    const literals = literalLength(pattern);
    if (literals === pattern.length) continue;
    if (literals < bestLiterals || (literals === bestLiterals && candidate.id >= best!.id)) continue;
    if (!globMatches(pattern, identifier)) continue;
    best = candidate;
    bestLiterals = literals;
  }
  assert(
    best === undefined || best.identifier === identifier || globMatches(best.identifier, identifier),
    "matchOverride: the winner matches",
  );
  return best;
}
