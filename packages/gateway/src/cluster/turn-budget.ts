// Long work split into steps (a snapshot's encoding, or its decoding and restore on a node that
// installs it) that shares the event loop with requests: steps run back to back until the turn's
// budget is spent, then the loop gets a turn.
// Measured in ms, not in steps: the same number of records costs far more in a large, scattered
// heap (a sort step of 20,000 elements took about 40 ms at a million keys, and with a closed loop
// of clients each turn serves about one request per client, so such steps cut verifications to
// a few percent of their rate while a snapshot was taken).

/** A fresh turn of the event loop (I/O callbacks run before it resolves). */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

export class TurnBudget {
  private turnStartMs: number;

  /**
   * @param budgetMs the work's time per turn before it yields (0: one step per turn)
   * @param nowMs the clock (performance.now in the node; a fake one in tests)
   */
  constructor(
    private readonly budgetMs: number,
    private readonly nowMs: () => number,
    private readonly yieldTurn: () => Promise<void> = nextTurn,
  ) {
    if (!(budgetMs >= 0)) throw new Error(`TurnBudget: budgetMs must be >= 0, got ${budgetMs}`);
    this.turnStartMs = nowMs();
  }

  /** True when the work has used this turn's budget (the caller should then await `pause`). */
  get spent(): boolean {
    return this.nowMs() - this.turnStartMs >= this.budgetMs;
  }

  /** Yields a turn if the budget is spent; otherwise the work goes on in this one. */
  async pause(): Promise<void> {
    if (!this.spent) return;
    await this.yieldTurn();
    this.turnStartMs = this.nowMs();
  }

  /** Runs a generator to its end, yielding a turn whenever the budget is spent. */
  async run<T>(steps: Generator<void, T>): Promise<T> {
    for (;;) {
      const step = steps.next();
      if (step.done === true) return step.value;
      await this.pause();
    }
  }
}
