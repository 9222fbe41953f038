// A sort that runs in steps, so a node sorting a million records for a snapshot keeps its event
// loop turning (one sort of a million ids took about a second in one piece). Bottom-up merge sort:
// runs of sortRunLength sorted with Array.prototype.sort, then merged in passes; the caller
// resumes it once per turn.
import { assert } from "../assert.js";

/** Elements sorted in one piece at the start; merging takes over from there. */
const sortRunLength = 1024;

/**
 * `items` sorted by `compare` (a new array; `items` is left as it is), yielding after about
 * `elementsPerStep` elements of work. Equal to `[...items].sort(compare)` for a total order
 * without ties (the ids a snapshot sorts by are unique).
 */
export function* sortedSteps<T>(
  items: readonly T[],
  compare: (a: T, b: T) => number,
  elementsPerStep: number,
): Generator<void, T[]> {
  assert(elementsPerStep >= 1, "sortedSteps: at least one element per step");
  const count = items.length;
  let source = items.slice();
  let work = 0;
  for (let start = 0; start < count; start += sortRunLength) {
    const run = source.slice(start, start + sortRunLength).sort(compare);
    for (let i = 0; i < run.length; i++) source[start + i] = run[i]!;
    work += run.length;
    if (work >= elementsPerStep) {
      work = 0;
      yield;
    }
  }
  let target = new Array<T>(count);
  for (let width = sortRunLength; width < count; width *= 2) {
    for (let left = 0; left < count; left += 2 * width) {
      const middle = Math.min(left + width, count);
      const right = Math.min(left + 2 * width, count);
      let i = left;
      let j = middle;
      for (let k = left; k < right; k++) {
        target[k] = j >= right || (i < middle && compare(source[i]!, source[j]!) <= 0) ? source[i++]! : source[j++]!;
        if (++work >= elementsPerStep) {
          work = 0;
          yield;
        }
      }
    }
    [source, target] = [target, source];
  }
  return source;
}
