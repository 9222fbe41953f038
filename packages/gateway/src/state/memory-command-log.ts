// An in-memory CommandLog for tests and tools: applies synchronously in append order and resolves
// at once (nothing is durable). The LevelDB log (store/) is the production implementation.

import type { CommandLog, CounterDurability, ReplicatedStateMachine } from "../store/types.js";

/** Commands the memory log keeps for inspection; older ones are dropped. */
export const memoryLogEntriesMax = 100_000;

export class MemoryCommandLog<Command, Outcome> implements CommandLog<Command, Outcome> {
  private index = 0;
  private closed = false;
  /** The most recent commands (at most memoryLogEntriesMax), oldest first. */
  readonly entries: Command[] = [];

  constructor(private readonly machine: ReplicatedStateMachine<Command, Outcome>) {}

  append(command: Command): Promise<Outcome> {
    if (this.closed) return Promise.reject(new Error("MemoryCommandLog: closed"));
    const outcome = this.machine.apply(command);
    this.index++;
    this.entries.push(command);
    if (this.entries.length > memoryLogEntriesMax) this.entries.shift();
    return Promise.resolve(outcome);
  }

  appliedIndex(): number {
    return this.index;
  }

  close(): Promise<void> {
    this.closed = true;
    return Promise.resolve();
  }
}

/** A CounterDurability that never waits (rate-limit windows are not persisted). */
export const volatileCounterDurability: CounterDurability = { cover: () => null };
