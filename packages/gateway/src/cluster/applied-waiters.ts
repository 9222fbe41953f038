// Waits for this node to apply a Raft index: a verification forwarded from a node that had applied
// index N is judged here only once this node has applied N too (counters/ratelimit/cluster-limits.ts),
// so a key written through the forwarding node is never NOT_FOUND at the node judging its limits.
// Bounded: at most `appliedWaitersMax` waiters, each for at most its own timeout.

/** Waiters at once; past it a new waiter is answered at once (judged with the view it has). */
export const appliedWaitersMax = 10_000;

interface Waiter {
  index: number;
  resolve: () => void;
  timer: NodeJS.Timeout;
}

export class AppliedWaiters {
  private readonly waiters = new Set<Waiter>();
  private appliedIndex = 0;

  /** The state machine applied `index` (entries and snapshots alike). */
  applied(index: number): void {
    if (index > this.appliedIndex) this.appliedIndex = index;
    if (this.waiters.size === 0) return;
    for (const waiter of this.waiters) if (waiter.index <= this.appliedIndex) this.settle(waiter);
  }

  /** Resolves once `index` is applied, or after `timeoutMs` (then the caller goes on with what it has). */
  waitFor(index: number, timeoutMs: number): Promise<void> {
    if (index <= this.appliedIndex || this.waiters.size >= appliedWaitersMax) return Promise.resolve();
    return new Promise((resolve) => {
      const waiter: Waiter = { index, resolve, timer: setTimeout(() => this.settle(waiter), timeoutMs) };
      waiter.timer.unref();
      this.waiters.add(waiter);
    });
  }

  /** Waiters now (for tests and metrics). */
  get size(): number {
    return this.waiters.size;
  }

  private settle(waiter: Waiter): void {
    if (!this.waiters.delete(waiter)) return;
    clearTimeout(waiter.timer);
    waiter.resolve();
  }
}
