/** Thrown when an invariant of keyraft's own code does not hold: a programmer error, never bad input. */
export class AssertionError extends Error {
  override name = "AssertionError";
}

/**
 * Crashes on a broken invariant. Assertions stay on in production: continuing with a broken
 * invariant (a counter that went negative, a bucket outside its ring) is worse than stopping.
 */
export function assert(cond: unknown, message: string): asserts cond {
  if (!cond) throw new AssertionError(message);
}
