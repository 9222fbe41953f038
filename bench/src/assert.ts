/** Crashes on a broken invariant (a programmer error), with a message that says which. */
export function assert(condition: unknown, message: string): asserts condition {
  if (!condition) throw new Error(`assertion failed: ${message}`);
}
