// The node's side of credit leases (docs/counters.md §5 steps 4-6): one LeaseHolder, its journal
// and the outbox. `spend` is what verification calls for a cost on a key with finite credits:
// admitted from a local lease once the spend record is durable, or `null` when the caller must
// fall back to a spend decided on the log (today's spendCredits entry), which is always exact.
//
// Ordering rules kept here: every journal record is enqueued (in holder order) at the moment the
// holder produces it, so a spend is never written before the grant it spends from; requests are
// proposed only after their journal records are durable.
import { assert, type CreditLeaseOutcome, type HolderOutput, type KeyState, type LeaseHolder } from "@keyraft/core";
import type { LeaseJournalStore } from "./journal-store.js";
import type { LeaseOutbox } from "./outbox.js";
import { SpendReservations } from "./spend-reservations.js";

export interface LeaseSpenderOptions {
  holder: LeaseHolder;
  journal: LeaseJournalStore;
  outbox: LeaseOutbox;
  /** The local replica (the unleased credits shown in responses). */
  state: KeyState;
  /** This node's monotonic clock (performance.now()). */
  monoNowMs(): number;
  /** How long a verification waits for the lease its node asks for before spending on the log. */
  leaseWaitMs: number;
  /** Timer period of holder.poll (closing, renewing, abandoning, resending). */
  pollIntervalMs: number;
  onError(error: unknown): void;
}

/** Verifications waiting for a lease at once; past it they spend on the log at once. */
export const leaseWaitersMax = 10_000;

export interface LeaseSpend {
  /** Credits this node's leases hold for the key plus the replica's unleased ones (see docs/counters.md). */
  remaining: number;
}

/** What the verify route needs (AppDeps.creditLeases). */
export interface CreditSpender {
  spend(keyId: string, cost: number): Promise<LeaseSpend | null>;
}

export class LeaseSpender implements CreditSpender {
  private readonly waiters = new Map<string, Array<() => void>>();
  private waiting = 0;
  private timer: NodeJS.Timeout | null = null;
  private pollSoon = false;
  private stats = { leased: 0, waitedThenLeased: 0, fallback: 0, spendWrites: 0 };
  private readonly reservations = new SpendReservations();

  constructor(private readonly options: LeaseSpenderOptions) {}

  start(): void {
    this.timer = setInterval(() => this.poll(), this.options.pollIntervalMs);
    this.timer.unref();
    this.poll();
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    for (const wake of [...this.waiters.values()].flat()) wake();
    this.waiters.clear();
  }

  /** Journals the holder's records now (in order) and queues its requests once they are durable. */
  private emit(out: HolderOutput): void {
    this.reservations.observe(out.journal);
    if (out.journal.length === 0) {
      this.options.outbox.push(out.requests);
      return;
    }
    const durable = this.options.journal.append(out.journal);
    durable.then(
      () => this.options.outbox.push(out.requests),
      (error: unknown) => this.options.onError(error),
    );
  }

  poll(): void {
    this.emit(this.options.holder.poll(this.options.monoNowMs()));
  }

  private unleased(keyId: string): number {
    return this.options.state.creditLedgers.get(keyId)?.unleased ?? 0;
  }

  /** Spends `cost` (>= 1) of `keyId` from a lease; null: spend on the log instead. */
  async spend(keyId: string, cost: number): Promise<LeaseSpend | null> {
    const first = this.tryLease(keyId, cost);
    if (first.spend !== null) return first.spend;
    // The key runs low and another node owns its last credits, or too many wait: the log decides.
    if (first.forwardTo !== null || this.waiting >= leaseWaitersMax) {
      this.stats.fallback++;
      return null;
    }
    await this.waitForLease(keyId);
    const second = this.tryLease(keyId, cost);
    if (second.spend === null) {
      this.stats.fallback++;
      return null;
    }
    this.stats.waitedThenLeased++;
    return second.spend;
  }

  /** A spend from a live lease, answered once durable; else the owner named by a low-credit refusal (or null). */
  private tryLease(keyId: string, cost: number): { spend: Promise<LeaseSpend>; forwardTo: null } | { spend: null; forwardTo: string | null } {
    const { result, journal } = this.options.holder.verify(keyId, cost, this.options.monoNowMs());
    if (result.type === "no-lease") {
      this.requestSoon();
      return { spend: null, forwardTo: result.forwardTo === this.options.holder.nodeId ? null : result.forwardTo };
    }
    this.stats.leased++;
    const answer: LeaseSpend = { remaining: result.leaseRemaining + this.unleased(keyId) };
    const record = journal[0];
    assert(journal.length === 1 && record?.t === "spend", "lease spender: one spend record per admitted verification");
    const cover = this.reservations.cover(record);
    switch (cover.type) {
      case "durable":
        return { spend: Promise.resolve(answer), forwardTo: null };
      case "pending":
        return { spend: cover.durable.then(() => answer), forwardTo: null };
      case "write": {
        this.stats.spendWrites++;
        const durable = this.options.journal.append([cover.record]);
        cover.onQueued(durable);
        return { spend: durable.then(() => answer), forwardTo: null };
      }
      default: {
        const never: never = cover;
        throw new Error(`unknown cover ${JSON.stringify(never)}`);
      }
    }
  }

  /** Asks for the lease now rather than at the next timer tick. */
  private requestSoon(): void {
    if (this.pollSoon) return;
    this.pollSoon = true;
    setImmediate(() => {
      this.pollSoon = false;
      this.poll();
    });
  }

  private waitForLease(keyId: string): Promise<void> {
    return new Promise((resolve) => {
      let done = false;
      const wake = () => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        this.waiting--;
        resolve();
      };
      const timer = setTimeout(() => {
        const list = this.waiters.get(keyId);
        if (list !== undefined) {
          const rest = list.filter((w) => w !== wake);
          if (rest.length === 0) this.waiters.delete(keyId);
          else this.waiters.set(keyId, rest);
        }
        wake();
      }, this.options.leaseWaitMs);
      this.waiting++;
      const list = this.waiters.get(keyId);
      if (list === undefined) this.waiters.set(keyId, [wake]);
      else list.push(wake);
    });
  }

  private wake(keyId: string): void {
    const list = this.waiters.get(keyId);
    if (list === undefined) return;
    this.waiters.delete(keyId);
    for (const wake of list) wake();
  }

  /** A lease command was applied on this node's replica. */
  onLease(outcome: CreditLeaseOutcome): void {
    const { holder } = this.options;
    if (outcome.nodeId !== holder.nodeId) return;
    this.emit(holder.onOutcome(outcome, this.options.monoNowMs()));
    if (outcome.type === "granted" || outcome.type === "refused") this.wake(outcome.keyId);
  }

  /**
   * A graceful stop: closes every lease now and waits (at most `timeoutMs`) for the settles to be
   * applied, so the exact spends are reported rather than the journal's reservations after the
   * next start. Leases still unsettled then are settled after the restart, as after a crash.
   */
  async drain(timeoutMs: number): Promise<void> {
    const now = this.options.monoNowMs();
    // An epoch above any real one closes every lease of the key (the holder stops spending it).
    for (const keyId of this.reservations.keysWithLeases()) this.emit(this.options.holder.onEpoch(keyId, Number.MAX_SAFE_INTEGER, now));
    const deadline = now + timeoutMs;
    while (this.options.holder.owedSettles() > 0 && this.options.monoNowMs() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  onEpoch(keyId: string, epoch: number): void {
    this.emit(this.options.holder.onEpoch(keyId, epoch, this.options.monoNowMs()));
  }

  status() {
    return { ...this.stats, heldLeases: this.options.holder.heldLeases(), owedSettles: this.options.holder.owedSettles(), waiting: this.waiting };
  }
}
