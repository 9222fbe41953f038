// The node's side of credit leases (docs/counters.md §5 steps 4-6): one LeaseHolder, its journal
// and the outbox. `spend` is what verification calls for a cost on a key with finite credits:
// admitted from a local lease once the spend record is durable, or `null` when the caller must
// fall back to a spend decided on the log (today's spendCredits entry), which is always exact.
//
// Ordering rules kept here: every journal record is enqueued (in holder order) at the moment the
// holder produces it, so a spend is never written before the grant it spends from; requests are
// proposed only after their journal records are durable.
import {
  creditLedgerOf,
  assert,
  creditLeasePolicyDefaults,
  holderKeysMax,
  type CreditLeaseOutcome,
  type HolderOutput,
  type KeyState,
  type LeaseHolder,
} from "@keyraft/core";
import type { LeaseJournalStore } from "./journal-store.js";
import { creditSpendUnknown, ForwardedSpendUnknown, type ForwardedSpendReply } from "./forward.js";
import type { LeaseOutbox } from "./outbox.js";
import { ShownCredits } from "./shown-credits.js";
import { SpendReservations, type ReservationWrite } from "./spend-reservations.js";

export interface LeaseSpenderOptions {
  holder: LeaseHolder;
  journal: LeaseJournalStore;
  outbox: LeaseOutbox;
  /** The local replica (the unleased credits shown in responses). */
  state: KeyState;
  /** This node's monotonic clock (performance.now()). */
  monoNowMs(): number;
  /** This node's wall clock (the lazy refill view of the credits shown); default Date.now. */
  nowMs?: () => number;
  /** How long a verification waits for the lease its node asks for before spending on the log. */
  leaseWaitMs: number;
  /** Timer period of holder.poll (closing, renewing, abandoning, resending). */
  pollIntervalMs: number;
  onError(error: unknown): void;
  /** Asks the owner of a low key's last credits to spend for this node (absent: spend on the log). */
  forward?: (owner: string, keyId: string, cost: number) => Promise<ForwardedSpendReply>;
  /** The owner of a key's last credits (rendezvous hash over the voters as this node sees them). */
  ownerOf?: (keyId: string) => string;
}

/** Least time between two polls asked for by verifications that found no lease. */
export const requestSoonMinMs = 20;
/** Verifications waiting for a lease at once; past it they spend on the log at once. */
export const leaseWaitersMax = 10_000;

export type LeaseSpend =
  /**
   * Spent. `remaining`: the balance after this spend as this node shows it (shown-credits.ts), or
   * the owner's answer when forwarded (never above this node's).
   */
  | { t: "admitted"; remaining: number | null }
  /** The owner of the key's last credits found too few for this cost (nothing spent). */
  | { t: "exceeded"; remaining: number };

/** What the verify route needs (AppDeps.creditLeases). */
export interface CreditSpender {
  spend(keyId: string, cost: number, options?: { forwarded?: boolean }): Promise<LeaseSpend | null>;
  /**
   * As `spend` (not forwarded), but answered as a plain value when the lease's journal already
   * covers the spend: the verification's hot path then neither waits nor allocates a promise.
   */
  spendNow(keyId: string, cost: number): LeaseSpend | Promise<LeaseSpend | null>;
  /** The credits this node shows (getKey, verification answers). */
  readonly shown: ShownCredits;
}

export class LeaseSpender implements CreditSpender {
  private readonly waiters = new Map<string, Array<() => void>>();
  private waiting = 0;
  private timer: NodeJS.Timeout | null = null;
  private pollSoon = false;
  private lastPollMonoMs = Number.NEGATIVE_INFINITY;
  private stats = {
    leased: 0,
    waitedThenLeased: 0,
    fallback: 0,
    forwarded: 0,
    spendWrites: 0,
    // Spends from a lease whose answer waited for a journal write (GET /metrics).
    journalWaited: 0,
    // Lease outcomes of this node applied from the log (GET /metrics): renewals are grants too; expiries are forfeits.
    granted: 0,
    forfeited: 0,
    settled: 0,
  };
  private readonly reservations = new SpendReservations();
  /** keyId -> the lease number asked for and not answered yet (bounded like the holder's keys). */
  private readonly asked = new Map<string, number>();
  /** Keys whose first lease a verification wanted since the last poll (it asks for them). */
  private readonly wantedSincePoll = new Set<string>();

  readonly shown: ShownCredits;

  constructor(private readonly options: LeaseSpenderOptions) {
    this.shown = new ShownCredits(options.state, options.holder, options.nowMs ?? Date.now);
  }

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
    // The holder's records, each new lease's first reservation after its grant (one write for both).
    const journal = this.reservations.observe(out.journal);
    for (const record of out.journal) {
      if (record.t === "request") {
        if (this.asked.size < holderKeysMax) this.asked.set(record.keyId, record.seq);
      } else if ((record.t === "grant" || record.t === "close") && this.asked.get(record.keyId) === record.seq) {
        this.asked.delete(record.keyId);
      }
    }
    if (out.journal.length === 0) {
      this.options.outbox.push(out.requests);
      return;
    }
    const durable = this.options.journal.append(journal.records);
    journal.onQueued(durable);
    durable.then(
      () => this.options.outbox.push(out.requests),
      (error: unknown) => this.options.onError(error),
    );
  }

  poll(): void {
    this.lastPollMonoMs = this.options.monoNowMs();
    this.emit(this.options.holder.poll(this.options.monoNowMs()));
    this.wantedSincePoll.clear();
  }

  /** Spends `cost` (>= 1) of `keyId` from a lease; null: spend on the log instead. */
  async spend(keyId: string, cost: number, options: { forwarded?: boolean } = {}): Promise<LeaseSpend | null> {
    const first = this.tryLease(keyId, cost);
    if (first.spend !== null) return first.spend;
    return this.spendWithoutLease(keyId, cost, first.forwardTo, options.forwarded === true);
  }

  spendNow(keyId: string, cost: number): LeaseSpend | Promise<LeaseSpend | null> {
    const first = this.tryLease(keyId, cost);
    if (first.spend !== null) return first.spend;
    return this.spendWithoutLease(keyId, cost, first.forwardTo, false);
  }

  /** No lease could spend now: forward to the owner, wait for a lease on its way, or null (the log). */
  private async spendWithoutLease(
    keyId: string,
    cost: number,
    forwardTo: string | null,
    forwarded: boolean,
  ): Promise<LeaseSpend | null> {
    const options = { forwarded };
    if (forwardTo !== null) return this.forward(forwardTo, keyId, cost, options.forwarded === true);
    // Already low in the replica and owned elsewhere: the owner holds (or will get) the last
    // credits; a refusal would only say "empty" once its lease took them all.
    const owner = this.lowKeyOwner(keyId);
    if (owner !== null) return this.forward(owner, keyId, cost, options.forwarded === true);
    // Wait only for a lease already on its way (a key in use): the verification that asks for a
    // key's first lease spends on the log at once rather than waiting for the grant alone.
    const onItsWay = this.asked.has(keyId) || this.wantedSincePoll.has(keyId);
    if (!onItsWay && this.wantedSincePoll.size < leaseWaitersMax) this.wantedSincePoll.add(keyId);
    if (!onItsWay || this.waiting >= leaseWaitersMax) {
      this.stats.fallback++;
      return null;
    }
    await this.waitForLease(keyId);
    const second = this.tryLease(keyId, cost);
    if (second.spend !== null) {
      this.stats.waitedThenLeased++;
      return second.spend;
    }
    const secondOwner = second.forwardTo ?? this.lowKeyOwner(keyId);
    if (secondOwner !== null) return this.forward(secondOwner, keyId, cost, options.forwarded === true);
    this.stats.fallback++;
    return null;
  }

  /** The key's owner when the replica shows it low and another node owns it, else null. */
  private lowKeyOwner(keyId: string): string | null {
    const ledger = creditLedgerOf(this.options.state, keyId);
    if (
      ledger === undefined ||
      this.options.ownerOf === undefined ||
      ledger.unleased > creditLeasePolicyDefaults.lowWatermark
    )
      return null;
    const owner = this.options.ownerOf(keyId);
    return owner === this.options.holder.nodeId ? null : owner;
  }

  /**
   * The key runs low and another node owns its last credits: ask it (never forwarding a spend
   * that was forwarded here), else null and the log decides.
   */
  private async forward(owner: string, keyId: string, cost: number, forwarded: boolean): Promise<LeaseSpend | null> {
    const { forward } = this.options;
    if (forward !== undefined && !forwarded) {
      const reply = await forward(owner, keyId, cost).catch((error: unknown) => {
        // The owner may have spent: never spend again here (that would charge twice).
        if (error instanceof ForwardedSpendUnknown) throw creditSpendUnknown(error);
        this.options.onError(error);
        return null;
      });
      if (reply !== null && reply.t !== "undecided") {
        this.stats.forwarded++;
        return this.relayed(keyId, reply);
      }
    }
    this.stats.fallback++;
    return null;
  }

  /**
   * The owner's answer as this node shows it: the owner may know less than this replica (a reset
   * applied here first) or more (its own unsettled spends), and both are at least the true
   * balance, so the lower one is shown.
   */
  private relayed(keyId: string, reply: LeaseSpend): LeaseSpend {
    const key = this.options.state.keys.get(keyId);
    if (reply.remaining === null || key === undefined || key.remaining === null) return reply;
    const nowMs = (this.options.nowMs ?? Date.now)();
    const here = this.shown.at(key, nowMs) ?? reply.remaining;
    return { ...reply, remaining: this.shown.displayed(key, Math.min(here, reply.remaining), nowMs) };
  }

  /** A spend from a live lease, answered once durable; else the owner named by a low-credit refusal (or null). */
  private tryLease(
    keyId: string,
    cost: number,
  ): { spend: LeaseSpend | Promise<LeaseSpend>; forwardTo: null } | { spend: null; forwardTo: string | null } {
    const { result, journal } = this.options.holder.verify(keyId, cost, this.options.monoNowMs());
    if (result.type === "no-lease") {
      this.requestSoon();
      return { spend: null, forwardTo: result.forwardTo === this.options.holder.nodeId ? null : result.forwardTo };
    }
    this.stats.leased++;
    // The balance after this spend, taken now: concurrent answers show each balance once.
    const answer: LeaseSpend = { t: "admitted", remaining: this.shown.now(keyId) };
    const record = journal[0];
    assert(journal.length === 1 && record?.t === "spend", "lease spender: one spend record per admitted verification");
    const cover = this.reservations.cover(record);
    switch (cover.type) {
      case "durable":
        if (cover.ahead !== null) this.writeAhead(cover.ahead);
        return { spend: answer, forwardTo: null };
      case "pending":
        if (cover.ahead !== null) this.writeAhead(cover.ahead);
        // This answer waits for the journal: what was written ahead goes to disk without delay.
        this.stats.journalWaited++;
        this.options.journal.hurry();
        return { spend: cover.durable.then(() => answer), forwardTo: null };
      case "write": {
        this.stats.spendWrites++;
        this.stats.journalWaited++;
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

  /** Journals the next reservation of a lease while the current one still covers its spends (nothing waits for it). */
  private writeAhead(write: ReservationWrite): void {
    this.stats.spendWrites++;
    const durable = this.options.journal.appendAhead([write.record]);
    write.onQueued(durable);
    durable.catch((error: unknown) => this.options.onError(error));
  }

  /**
   * Asks for the lease soon rather than at the next timer tick: a poll at most every
   * `requestSoonMinMs` (a poll looks at the keys that are due, which a burst of first
   * verifications makes many: one poll takes them together).
   */
  private requestSoon(): void {
    if (this.pollSoon) return;
    this.pollSoon = true;
    const sinceMs = this.options.monoNowMs() - this.lastPollMonoMs;
    const run = () => {
      this.pollSoon = false;
      this.poll();
    };
    if (sinceMs >= requestSoonMinMs) setImmediate(run);
    else setTimeout(run, Math.ceil(requestSoonMinMs - sinceMs));
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
    if (outcome.type === "granted") this.stats.granted++;
    else if (outcome.type === "expired") this.stats.forfeited++;
    else if (outcome.type === "settled") this.stats.settled++;
    if (outcome.type === "refused" && this.asked.get(outcome.keyId) === outcome.seq) this.asked.delete(outcome.keyId);
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
    for (const keyId of this.reservations.keysWithLeases())
      this.emit(this.options.holder.onEpoch(keyId, Number.MAX_SAFE_INTEGER, now));
    const deadline = now + timeoutMs;
    while (this.options.holder.owedSettles() > 0 && this.options.monoNowMs() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  onEpoch(keyId: string, epoch: number): void {
    this.emit(this.options.holder.onEpoch(keyId, epoch, this.options.monoNowMs()));
  }

  status() {
    return {
      ...this.stats,
      heldLeases: this.options.holder.heldLeases(),
      owedSettles: this.options.holder.owedSettles(),
      waiting: this.waiting,
    };
  }
}
