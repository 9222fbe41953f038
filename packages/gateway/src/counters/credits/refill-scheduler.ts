// Refill at 00:00 UTC as a replicated event (issue 5 item 3). The leader, at its first tick of a
// new UTC day, proposes refillCredits for every key whose refill instant passed; each replica then
// applies the same reset at the same log index (the command carries its `nowMs`). Commands that
// touch a key after the instant (a spend on the log, an update) apply the refill too, with their
// own replicated time, so a key is refilled identically even before the leader's command lands.
import {
  refillDueBetween,
  refillKeysPerCommandMax,
  type CommandOutcome,
  type KeyCommand,
  type KeyState,
  keyHasRefill,
} from "@keyraft/core";

const dayMs = 86_400_000;

export interface RefillSchedulerOptions {
  state: KeyState;
  isLeader(): boolean;
  propose(command: KeyCommand): Promise<CommandOutcome>;
  /** Wall clock, Unix ms (the refill instants are UTC). */
  nowMs(): number;
  onError(error: unknown): void;
}

/** Keys due for a refill at `nowMs`, in batches of at most refillKeysPerCommandMax. */
export function dueRefillBatches(state: KeyState, nowMs: number): string[][] {
  const batches: string[][] = [];
  let batch: string[] = [];
  for (const key of state.keys.valuesWith(keyHasRefill)) {
    // Unlimited keys with a refill included: the refill makes their credits finite (refilledCredits).
    if (key.refill === null) continue;
    if (!refillDueBetween(key.refill, key.refill.lastRefillAtMs, nowMs)) continue;
    batch.push(key.id);
    if (batch.length === refillKeysPerCommandMax) {
      batches.push(batch);
      batch = [];
    }
  }
  if (batch.length > 0) batches.push(batch);
  return batches;
}

export class RefillScheduler {
  /** The UTC day last scanned by this node as leader (null: scan at the next tick). */
  private scannedDay: number | null = null;
  private running = false;

  constructor(private readonly options: RefillSchedulerOptions) {}

  tick(): void {
    if (!this.options.isLeader()) {
      this.scannedDay = null; // a new leader scans at once: the old one may have stopped midway
      return;
    }
    const nowMs = this.options.nowMs();
    const day = Math.floor(nowMs / dayMs);
    if (this.running || this.scannedDay === day) return;
    this.running = true;
    void this.run(nowMs)
      .then(
        (complete) => {
          if (complete) this.scannedDay = day;
        },
        (error: unknown) => this.options.onError(error),
      )
      .finally(() => {
        this.running = false;
      });
  }

  private async run(nowMs: number): Promise<boolean> {
    let complete = true;
    for (const keyIds of dueRefillBatches(this.options.state, nowMs)) {
      const outcome = await this.options.propose({ type: "refillCredits", keyIds, nowMs }).catch((error: unknown) => {
        this.options.onError(error);
        return null;
      });
      if (outcome === null || !outcome.ok) complete = false;
    }
    return complete;
  }
}
