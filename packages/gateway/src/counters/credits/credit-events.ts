// Watches the key-state machine as it applies commands and reports what the credit-lease parts
// of a node need: every lease outcome (the holder takes its own, the leader's expiry tracker all
// of them) and every reset of a key's ledger epoch (the holder stops spending older leases).
// A thin wrapper: apply is the machine's, plus a look at the ledgers the command touched.
import { creditLedgerOf } from "@keyraft/core";
import type { CommandOutcome, CreditLeaseOutcome, KeyCommand, KeyStateMachine } from "@keyraft/core";

export interface CreditEventListener {
  /** A lease command was applied (for any node). */
  onLease(outcome: CreditLeaseOutcome): void;
  /** The ledger of `keyId` moved to `epoch` (a set, or a refill that reset it). */
  onEpoch(keyId: string, epoch: number): void;
  /** A snapshot replaced the state (the leader re-reads the open leases). */
  onRestore(): void;
  /**
   * The credits this node shows for `keyId` right after an apply (shown-credits.ts): the
   * `remaining` a spend or an update on the log answers, taken at the apply, not when the
   * proposer reads it, so concurrent answers show each balance once. Absent: the replica's.
   */
  shown?(keyId: string): number | null;
}

/** Commands whose outcome carries the key's `remaining`. */
function answersRemaining(command: KeyCommand): string | null {
  return command.type === "spendCredits" || command.type === "updateRemaining" ? command.keyId : null;
}

/** Keys whose ledger epoch a command may change. */
function resetKeys(command: KeyCommand): readonly string[] {
  switch (command.type) {
    case "updateKey":
    case "updateRemaining":
    case "spendCredits":
      return [command.keyId];
    case "refillCredits":
      return command.keyIds;
    default:
      return [];
  }
}

export class ObservedKeyMachine implements KeyStateMachine {
  private listener: CreditEventListener | null = null;

  constructor(private readonly inner: KeyStateMachine) {}

  get state() {
    return this.inner.state;
  }

  /** Events go to `listener` from now on (before: none are kept; the holder resends what it owes). */
  listen(listener: CreditEventListener | null): void {
    this.listener = listener;
  }

  apply(command: KeyCommand): CommandOutcome {
    const listener = this.listener;
    if (listener === null) return this.inner.apply(command);
    const keys = resetKeys(command);
    const state = this.inner.state;
    const before = keys.map((keyId) => creditLedgerOf(state, keyId)?.epoch);
    const outcome = this.inner.apply(command);
    if (!outcome.ok) return outcome;
    if (outcome.lease !== undefined) listener.onLease(outcome.lease);
    if (outcome.leases !== undefined) for (const lease of outcome.leases) listener.onLease(lease);
    keys.forEach((keyId, i) => {
      const epoch = creditLedgerOf(state, keyId)?.epoch;
      if (epoch !== undefined && epoch !== before[i]) listener.onEpoch(keyId, epoch);
    });
    const answered = answersRemaining(command);
    if (answered !== null && typeof outcome.remaining === "number" && listener.shown !== undefined) {
      const shown = listener.shown(answered);
      if (shown !== null) return { ...outcome, remaining: shown };
    }
    return outcome;
  }

  snapshot() {
    return this.inner.snapshot();
  }

  capture() {
    return this.inner.capture();
  }

  restore(snapshot: unknown): void {
    this.inner.restore(snapshot);
    this.listener?.onRestore();
  }

  *restoreSteps(snapshot: unknown, recordsPerStep: number, ownership?: "copy" | "adopt"): Generator<void, void> {
    yield* this.inner.restoreSteps(snapshot, recordsPerStep, ownership);
    this.listener?.onRestore();
  }
}
