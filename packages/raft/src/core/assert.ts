/** Crashes on a broken invariant. Assertions stay on in production: a Raft bug must stop the node, not corrupt the log. */
export function assert(cond: unknown, message: string): asserts cond {
  if (!cond) throw new RaftAssertionError(message);
}

export class RaftAssertionError extends Error {
  override readonly name = "RaftAssertionError";
}

/** For exhaustive switches: the compiler proves this is unreachable; at run time it crashes. */
export function unreachable(value: never): never {
  throw new RaftAssertionError(`unreachable: ${JSON.stringify(value)}`);
}
