// v2 cursor pagination (upstream's rule): items in ascending id order, a page starts at the first
// id >= cursor, and `cursor` names the first item of the NEXT page (inclusive), present only
// when there is one. Any cursor string is accepted: an unknown one simply starts a page there.
// (v1 used the last id of the page, exclusive; both read the same id-ordered sets.)

import { assert } from "@keyraft/core";
import type { Pagination } from "./envelope.js";

/** Largest page a v2 list answers (every list schema caps `limit` at it). */
export const pageLimitMax = 100;

export interface Page<T> {
  items: T[];
  pagination: Pagination;
}

/**
 * One page of `items`, which must be sorted by `idOf` ascending (asserted on the page).
 * `limit` is 1..pageLimitMax.
 */
export function pageById<T>(
  items: readonly T[],
  idOf: (item: T) => string,
  cursor: string | undefined,
  limit: number,
): Page<T> {
  assert(Number.isInteger(limit) && limit >= 1 && limit <= pageLimitMax, "pageById: limit within 1..pageLimitMax");
  const start = cursor === undefined || cursor === "" ? 0 : firstAtOrAfter(items, idOf, cursor);
  const page = items.slice(start, start + limit);
  for (let i = 1; i < page.length; i++) assert(idOf(page[i - 1]!) < idOf(page[i]!), "pageById: items sorted by id");
  const next = items[start + limit];
  return next === undefined
    ? { items: page, pagination: { hasMore: false } }
    : { items: page, pagination: { hasMore: true, cursor: idOf(next) } };
}

/** Index of the first item whose id is >= cursor (binary search over the sorted items). */
function firstAtOrAfter<T>(items: readonly T[], idOf: (item: T) => string, cursor: string): number {
  let low = 0;
  let high = items.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (idOf(items[middle]!) < cursor) low = middle + 1;
    else high = middle;
  }
  return low;
}

/** Sorts by id ascending (code-unit order, the order pageById and upstream's SQL index use). */
export function byId<T extends { id: string }>(a: T, b: T): number {
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}
