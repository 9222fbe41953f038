// The lease holder of one node: spends credits locally from leases granted by the replicated
// ledger, asks for new ones, and settles them. A pure state machine: inputs are verifications,
// ledger outcomes, epochs seen in the local replica and the node's own monotonic time; outputs are
// journal records (to make durable first) and requests (to propose to the ledger after that).
//
// Safety rests on three rules, none of them on clocks:
//   1. spend from a lease only while spent + cost <= granted, journaling the spend before answering;
//   2. close a lease (journaled) before sending its settle, and never spend from it again;
//   3. after a restart, every lease known from the journal is closed: settle only.
// Clocks only bound for how long a lease is spent from: its deadline is requestSentAt + ttl on
// this node's monotonic clock, so a leader that saw the grant applied for ttl * (1 + drift) +
// margin of its own time knows the holder has stopped (see LeaseExpiryTracker).
import { assert } from "../assert.js";
import { DueQueue } from "./due-queue.js";
import type { HolderJournalRecord } from "./journal.js";
import { replayHolderJournal } from "./journal.js";
import type { CreditLeaseOutcome, GrantCreditLeaseCommand, SettleCreditLeaseCommand } from "./types.js";

export interface LeaseHolderOptions {
  /** How long a lease may be spent from, from the moment its request was sent (holder's clock). */
  ttlMs: number;
  /** A grant request without an answer for this long is abandoned (settled with 0 spent). */
  requestTimeoutMs: number;
  /** Settles are resent this often until the ledger answers. */
  settleRetryMs: number;
  /** Credits asked for a key's first lease, and the least ever asked (a verification costing more asks for its cost). */
  requestCredits: number;
  /**
   * Most credits asked per lease. A key whose lease was used up within an eighth of the ttl asks
   * for twice as much next time (up to this), one whose lease neared its deadline unused for half
   * as much (down to requestCredits): a busy key costs few lease commands and journal writes, a
   * quiet one holds little (a crash forfeits less than a quarter of a lease).
   */
  requestCreditsMax: number;
  /** Ask for the next lease once the usable credits of a key drop below this fraction of the last grant, or its deadline is this fraction of ttl away. */
  renewFraction: number;
  /** After a refusal, how long to wait before asking again for that key. */
  refusedBackoffMs: number;
}

export const leaseHolderDefaults: LeaseHolderOptions = {
  ttlMs: 2_000,
  requestTimeoutMs: 1_000,
  settleRetryMs: 500,
  requestCredits: 100,
  requestCreditsMax: 1600,
  renewFraction: 0.25,
  refusedBackoffMs: 250,
};

/** Keys with leases or pending work on one holder; past it new keys are not leased (verifications go to the ledger). */
export const holderKeysMax = 100_000;
/** Leases held at once per key (the current one and its renewal). */
export const holderLeasesPerKeyMax = 2;
/**
 * Entries in the poll's due queue (stale ones included: a key scheduled earlier than it was leaves
 * its later entry behind); past it the queue is rebuilt from the keys, one entry each.
 */
export const holderDueQueueMax = 4 * holderKeysMax;

export type HolderRequest = GrantCreditLeaseCommand | SettleCreditLeaseCommand;

interface HeldLease {
  seq: number;
  granted: number;
  spent: number;
  epoch: number;
  deadlineMonoMs: number;
}

interface PendingGrant {
  seq: number;
  requested: number;
  sentAtMonoMs: number;
}

interface OwedSettle {
  keyId: string;
  seq: number;
  spent: number;
  lastSentMonoMs: number;
}

interface KeyHold {
  leases: HeldLease[];
  pending: PendingGrant | null;
  /** Credits the last verification needed and could not get (drives the next request). */
  wanted: number;
  /** No request before this time (after a refusal). */
  retryAtMonoMs: number;
  /** The owner named by a low-credit refusal: verifications of this key go there. */
  forwardTo: string | null;
  lastGranted: number;
  /** Credits the next request asks for (adapts between requestCredits and requestCreditsMax). */
  requestSize: number;
  /** Last time a verification wanted credits of this key (renewals only for keys in use). */
  usedAtMonoMs: number;
  /** Highest ledger epoch of this key seen in the local replica: older grants are closed at once. */
  epochSeen: number;
  /** When the key was first held (a poll visits its due keys in this order, as a sweep over every key would). */
  order: number;
  /** The earliest time a poll must look at this key (its entry in the due queue); Infinity: only when something happens to it. */
  dueMs: number;
}

export type HolderVerify =
  /** Admitted from a lease; `leaseRemaining` credits are left in this node's leases of the key. */
  | { type: "admitted"; leaseRemaining: number }
  /** Not enough in this node's leases: wait for the requested lease, forward to `forwardTo` if set, or ask the ledger directly. */
  | { type: "no-lease"; forwardTo: string | null; leaseRemaining: number };

export interface HolderOutput {
  journal: HolderJournalRecord[];
  requests: HolderRequest[];
}

export class LeaseHolder {
  private readonly keys = new Map<string, KeyHold>();
  private readonly owed = new Map<number, OwedSettle>();
  /** Keys by the time a poll must look at them (deadlines, timeouts, renewals, back-offs, and now after a change). */
  private readonly due = new DueQueue();
  private nextOrder = 0;
  /** No owed settle is due for a resend before this time. */
  private owedDueMs = Number.POSITIVE_INFINITY;
  private nextSeq: number;

  private constructor(
    readonly nodeId: string,
    private readonly options: LeaseHolderOptions,
    nextSeq: number,
  ) {
    assert(options.ttlMs > 0 && options.requestTimeoutMs > 0 && options.settleRetryMs > 0, "holder: positive timings");
    assert(
      options.requestCredits >= 1 && options.requestCreditsMax >= options.requestCredits,
      "holder: request sizes in range",
    );
    assert(options.renewFraction >= 0 && options.renewFraction < 1, "holder: renewFraction in range");
    this.nextSeq = nextSeq;
  }

  static create(nodeId: string, options: LeaseHolderOptions = leaseHolderDefaults): LeaseHolder {
    return new LeaseHolder(nodeId, options, 1);
  }

  /**
   * The holder after a crash: every lease in the journal that is not settled is closed (rule 3)
   * and owes a settle with exactly its journaled spends. Returns the close records to journal.
   */
  static restore(
    nodeId: string,
    journal: readonly HolderJournalRecord[],
    options: LeaseHolderOptions = leaseHolderDefaults,
  ): { holder: LeaseHolder; journal: HolderJournalRecord[] } {
    const { leases, seqMax } = replayHolderJournal(journal);
    const holder = new LeaseHolder(nodeId, options, seqMax + 1);
    const out: HolderJournalRecord[] = [];
    for (const lease of leases.values()) {
      if (lease.settled) continue;
      if (!lease.closed) out.push({ t: "close", keyId: lease.keyId, seq: lease.seq });
      holder.owe({ keyId: lease.keyId, seq: lease.seq, spent: lease.spent, lastSentMonoMs: -Infinity });
    }
    return { holder, journal: out };
  }

  private hold(keyId: string): KeyHold | undefined {
    let hold = this.keys.get(keyId);
    if (hold === undefined) {
      if (this.keys.size >= holderKeysMax) return undefined;
      hold = {
        leases: [],
        pending: null,
        wanted: 0,
        retryAtMonoMs: 0,
        forwardTo: null,
        lastGranted: 0,
        requestSize: this.options.requestCredits,
        usedAtMonoMs: -Infinity,
        epochSeen: 0,
        order: this.nextOrder++,
        dueMs: Number.POSITIVE_INFINITY,
      };
      this.keys.set(keyId, hold);
    }
    return hold;
  }

  private usable(hold: KeyHold, nowMonoMs: number): number {
    let sum = 0;
    for (const lease of hold.leases) if (nowMonoMs < lease.deadlineMonoMs) sum += lease.granted - lease.spent;
    return sum;
  }

  /** Whether this node keeps anything for `keyId` (a lease, a request, a back-off): a key it asked a lease for. */
  holds(keyId: string): boolean {
    return this.keys.has(keyId);
  }

  /** Credits this node may still spend for `keyId` right now (0 when it holds no live lease). */
  leaseRemaining(keyId: string, nowMonoMs: number): number {
    const hold = this.keys.get(keyId);
    return hold === undefined ? 0 : this.usable(hold, nowMonoMs);
  }

  /**
   * What this node spent from its lease `seq` of `keyId`: a held lease's spends, or a closed one's
   * until its settle is answered (after a restart: the journaled spends it will settle with).
   * 0 for a lease it does not know (abandoned before the grant, or already settled).
   */
  spentOf(keyId: string, seq: number): number {
    const hold = this.keys.get(keyId);
    if (hold !== undefined) for (const lease of hold.leases) if (lease.seq === seq) return lease.spent;
    const owed = this.owed.get(seq);
    return owed !== undefined && owed.keyId === keyId ? owed.spent : 0;
  }

  /**
   * Spends `cost` from a live lease of `keyId` that fits it, earliest deadline first. The returned
   * journal must be durable before the verification is answered.
   */
  verify(keyId: string, cost: number, nowMonoMs: number): { result: HolderVerify; journal: HolderJournalRecord[] } {
    assert(Number.isSafeInteger(cost) && cost >= 0, "holder verify: cost is a non-negative integer");
    if (cost === 0) {
      // A pure read (decision 2): admitted even at 0 credits, spends nothing, asks for no lease.
      return { result: { type: "admitted", leaseRemaining: this.leaseRemaining(keyId, nowMonoMs) }, journal: [] };
    }
    const hold = this.hold(keyId);
    if (hold === undefined) return { result: { type: "no-lease", forwardTo: null, leaseRemaining: 0 }, journal: [] };
    hold.usedAtMonoMs = nowMonoMs;
    // The live lease that fits the cost with the earliest deadline, and the usable credits of all
    // live leases, in one pass (runs for every spend: no arrays built).
    let lease: HeldLease | undefined;
    let usable = 0;
    // Every lease within the renewal window of its deadline (a renewal may be due).
    let allNearDeadline = true;
    const renewWindowMs = this.options.ttlMs * this.options.renewFraction;
    for (const held of hold.leases) {
      if (held.deadlineMonoMs - nowMonoMs >= renewWindowMs) allNearDeadline = false;
      if (nowMonoMs >= held.deadlineMonoMs) continue;
      usable += held.granted - held.spent;
      if (held.granted - held.spent >= cost && (lease === undefined || held.deadlineMonoMs < lease.deadlineMonoMs))
        lease = held;
    }
    if (lease === undefined) {
      hold.wanted = Math.max(hold.wanted, cost);
      this.schedule(keyId, hold, nowMonoMs);
      return { result: { type: "no-lease", forwardTo: hold.forwardTo, leaseRemaining: usable }, journal: [] };
    }
    lease.spent += cost;
    assert(lease.spent <= lease.granted, "holder: never spends past a grant");
    // What the next poll acts on (a lease used up, a renewal running low or near its deadline):
    // the key is due now; otherwise its time-driven due time stands.
    if (
      lease.spent === lease.granted ||
      usable - cost < hold.lastGranted * this.options.renewFraction ||
      allNearDeadline
    )
      this.schedule(keyId, hold, nowMonoMs);
    return {
      result: { type: "admitted", leaseRemaining: usable - cost },
      journal: [{ t: "spend", keyId, seq: lease.seq, cost }],
    };
  }

  private close(keyId: string, hold: KeyHold, lease: HeldLease, nowMonoMs: number, out: HolderOutput): void {
    hold.leases = hold.leases.filter((l) => l !== lease);
    out.journal.push({ t: "close", keyId, seq: lease.seq });
    this.owe({ keyId, seq: lease.seq, spent: lease.spent, lastSentMonoMs: nowMonoMs });
    out.requests.push({ type: "settleCreditLease", keyId, nodeId: this.nodeId, seq: lease.seq, spent: lease.spent });
  }

  /**
   * Timers: closes leases past their deadline or used up, asks for leases, abandons and resends.
   * Looks only at the keys that are due (a deadline, a request timeout, a renewal window or a
   * back-off reached, or a verification or an outcome changed the key since), in the order the
   * keys were first held: the same outputs as `pollEveryKey`, at O(due · log keys).
   */
  poll(nowMonoMs: number): HolderOutput {
    const out: HolderOutput = { journal: [], requests: [] };
    const due: Array<{ keyId: string; hold: KeyHold }> = [];
    for (let entry = this.due.popDue(nowMonoMs); entry !== undefined; entry = this.due.popDue(nowMonoMs)) {
      const hold = this.keys.get(entry.keyId);
      if (hold === undefined || hold.dueMs !== entry.dueMs) continue; // stale: rescheduled, or the key was dropped
      hold.dueMs = Number.POSITIVE_INFINITY;
      due.push({ keyId: entry.keyId, hold });
    }
    if (due.length > 1) due.sort((a, b) => a.hold.order - b.hold.order);
    for (const { keyId, hold } of due) this.visit(keyId, hold, nowMonoMs, out);
    this.resendOwed(nowMonoMs, out);
    return out;
  }

  /** `poll` looking at every key, due or not: the reference the due queue must agree with (tests). */
  pollEveryKey(nowMonoMs: number): HolderOutput {
    const out: HolderOutput = { journal: [], requests: [] };
    for (const [keyId, hold] of this.keys) this.visit(keyId, hold, nowMonoMs, out);
    this.resendOwed(nowMonoMs, out);
    return out;
  }

  /** One key's timers: closes, abandons, asks; drops the key when nothing is left, else schedules its next look. */
  private visit(keyId: string, hold: KeyHold, nowMonoMs: number, out: HolderOutput): void {
    // No copy of the leases unless one closes (close replaces the array).
    let closing = false;
    for (const lease of hold.leases)
      if (nowMonoMs >= lease.deadlineMonoMs || lease.spent === lease.granted) closing = true;
    if (closing) {
      for (const lease of [...hold.leases]) {
        if (nowMonoMs >= lease.deadlineMonoMs || lease.spent === lease.granted)
          this.close(keyId, hold, lease, nowMonoMs, out);
      }
    }
    if (hold.pending !== null && nowMonoMs - hold.pending.sentAtMonoMs >= this.options.requestTimeoutMs) {
      // Abandon: the settle with 0 spent returns the grant if it was applied, or fences it if not.
      const seq = hold.pending.seq;
      hold.pending = null;
      out.journal.push({ t: "close", keyId, seq });
      this.owe({ keyId, seq, spent: 0, lastSentMonoMs: nowMonoMs });
      out.requests.push({ type: "settleCreditLease", keyId, nodeId: this.nodeId, seq, spent: 0 });
    }
    this.maybeRequest(keyId, hold, nowMonoMs, out);
    if (hold.leases.length === 0 && hold.pending === null && hold.wanted === 0 && hold.forwardTo === null) {
      this.keys.delete(keyId);
      return;
    }
    this.schedule(keyId, hold, this.nextDueMs(hold, nowMonoMs));
  }

  /**
   * The next time after `nowMonoMs` at which time alone may give a poll something to do for the
   * key: a lease's deadline or the start of its renewal window, the pending request's timeout,
   * the end of a back-off. (Everything else that makes a key due is a call: verify, onOutcome,
   * onEpoch.) Infinity when there is none.
   */
  private nextDueMs(hold: KeyHold, nowMonoMs: number): number {
    let dueMs = Number.POSITIVE_INFINITY;
    const renewWindowMs = this.options.ttlMs * this.options.renewFraction;
    for (const lease of hold.leases) {
      if (lease.deadlineMonoMs > nowMonoMs && lease.deadlineMonoMs < dueMs) dueMs = lease.deadlineMonoMs;
      // The renewal window opens just after renewAt (nearDeadline is strict): a key looked at
      // exactly then is looked at again by the next poll.
      const renewAtMs = lease.deadlineMonoMs - renewWindowMs;
      if (renewAtMs >= nowMonoMs && renewAtMs < dueMs) dueMs = renewAtMs;
    }
    if (hold.pending !== null) {
      const timeoutAtMs = hold.pending.sentAtMonoMs + this.options.requestTimeoutMs;
      if (timeoutAtMs > nowMonoMs && timeoutAtMs < dueMs) dueMs = timeoutAtMs;
    }
    if (hold.retryAtMonoMs > nowMonoMs && hold.retryAtMonoMs < dueMs) dueMs = hold.retryAtMonoMs;
    return dueMs;
  }

  /** The key is due at `dueMs` (or earlier, if it already was). */
  private schedule(keyId: string, hold: KeyHold, dueMs: number): void {
    if (dueMs >= hold.dueMs) return;
    hold.dueMs = dueMs;
    if (this.due.size >= holderDueQueueMax) {
      // Mostly stale entries: one per key that has a due time.
      this.due.clear();
      for (const [id, held] of this.keys) if (held.dueMs !== Number.POSITIVE_INFINITY) this.due.push(held.dueMs, id);
      return;
    }
    this.due.push(dueMs, keyId);
  }

  /** A settle is owed (sent at `lastSentMonoMs`): resent every `settleRetryMs` until the ledger answers. */
  private owe(settle: OwedSettle): void {
    this.owed.set(settle.seq, settle);
    this.owedDueMs = Math.min(this.owedDueMs, settle.lastSentMonoMs + this.options.settleRetryMs);
  }

  /** Resends the owed settles not answered within `settleRetryMs`; looks at them only when one is due. */
  private resendOwed(nowMonoMs: number, out: HolderOutput): void {
    if (nowMonoMs < this.owedDueMs) return;
    let nextDueMs = Number.POSITIVE_INFINITY;
    for (const settle of this.owed.values()) {
      if (nowMonoMs - settle.lastSentMonoMs >= this.options.settleRetryMs) {
        settle.lastSentMonoMs = nowMonoMs;
        out.requests.push({
          type: "settleCreditLease",
          keyId: settle.keyId,
          nodeId: this.nodeId,
          seq: settle.seq,
          spent: settle.spent,
        });
      }
      nextDueMs = Math.min(nextDueMs, settle.lastSentMonoMs + this.options.settleRetryMs);
    }
    this.owedDueMs = nextDueMs;
  }

  private maybeRequest(keyId: string, hold: KeyHold, nowMonoMs: number, out: HolderOutput): void {
    if (hold.pending !== null || nowMonoMs < hold.retryAtMonoMs) return;
    if (hold.leases.length >= holderLeasesPerKeyMax) return;
    const usable = this.usable(hold, nowMonoMs);
    const renewWindowMs = this.options.ttlMs * this.options.renewFraction;
    const inUse = hold.leases.length > 0 && nowMonoMs - hold.usedAtMonoMs < this.options.ttlMs;
    const runningLow = inUse && usable < hold.lastGranted * this.options.renewFraction;
    // Renewed ahead of its deadline for a key used within the renewal window (its use inside the
    // window asks for it), or used within the ttl while its newest lease was spent from: a gap in
    // a key's traffic shorter than about a ttl is bridged, and a key whose traffic stopped takes
    // at most one renewal it does not spend (its unspent renewal is not renewed again) rather
    // than one every ttl while it was in use.
    const newest = hold.leases[hold.leases.length - 1];
    let nearDeadline =
      newest !== undefined && (nowMonoMs - hold.usedAtMonoMs < renewWindowMs || (inUse && newest.spent > 0));
    for (const lease of hold.leases) if (lease.deadlineMonoMs - nowMonoMs >= renewWindowMs) nearDeadline = false;
    if (hold.wanted === 0 && !runningLow && !nearDeadline) return;
    this.adaptRequestSize(hold, runningLow, nowMonoMs);
    const requested = Math.max(hold.requestSize, hold.wanted);
    const seq = this.nextSeq++;
    hold.pending = { seq, requested, sentAtMonoMs: nowMonoMs };
    hold.wanted = 0;
    out.journal.push({ t: "request", keyId, seq });
    out.requests.push({ type: "grantCreditLease", keyId, nodeId: this.nodeId, seq, requested });
  }

  /**
   * Doubles the next request when the newest lease ran low within an eighth of the ttl, halves it
   * when a renewal is due with the lease still mostly unspent (its deadline came first).
   */
  private adaptRequestSize(hold: KeyHold, runningLow: boolean, nowMonoMs: number): void {
    const newest = hold.leases[hold.leases.length - 1];
    if (newest === undefined) return;
    const ageMs = nowMonoMs - (newest.deadlineMonoMs - this.options.ttlMs);
    if (runningLow && ageMs < this.options.ttlMs / 8)
      hold.requestSize = Math.min(hold.requestSize * 2, this.options.requestCreditsMax);
    else if (!runningLow) hold.requestSize = Math.max(Math.floor(hold.requestSize / 2), this.options.requestCredits);
  }

  /** An outcome of a lease command this node proposed (or saw applied for its own node id). */
  onOutcome(outcome: CreditLeaseOutcome, nowMonoMs: number): HolderOutput {
    const out = this.applyOutcome(outcome, nowMonoMs);
    // A grant or a refusal changes what the key's next poll does (a settle, an expiry do not).
    const hold = outcome.type === "granted" || outcome.type === "refused" ? this.keys.get(outcome.keyId) : undefined;
    if (hold !== undefined && outcome.nodeId === this.nodeId) this.schedule(outcome.keyId, hold, nowMonoMs);
    return out;
  }

  private applyOutcome(outcome: CreditLeaseOutcome, nowMonoMs: number): HolderOutput {
    const out: HolderOutput = { journal: [], requests: [] };
    if (outcome.nodeId !== this.nodeId) return out;
    const hold = this.keys.get(outcome.keyId);
    const pending = hold?.pending?.seq === outcome.seq ? hold.pending : null;
    switch (outcome.type) {
      case "granted": {
        if (hold?.leases.some((l) => l.seq === outcome.seq) === true) return out; // a duplicate answer
        if (hold === undefined || pending === null) {
          // Not waited for (abandoned, or from before a restart): its settle is owed already or now.
          if (!this.owed.has(outcome.seq)) {
            this.owe({ keyId: outcome.keyId, seq: outcome.seq, spent: 0, lastSentMonoMs: nowMonoMs });
            out.requests.push({
              type: "settleCreditLease",
              keyId: outcome.keyId,
              nodeId: this.nodeId,
              seq: outcome.seq,
              spent: 0,
            });
          }
          return out;
        }
        hold.pending = null;
        hold.forwardTo = outcome.low && outcome.ownerNodeId !== this.nodeId ? outcome.ownerNodeId : null;
        hold.lastGranted = outcome.granted;
        // The verifications that found no lease while this one was on its way spend from it: their
        // want is met (left standing, it would ask for a second lease at once).
        if (outcome.granted >= hold.wanted) hold.wanted = 0;
        const lease: HeldLease = {
          seq: outcome.seq,
          granted: outcome.granted,
          spent: 0,
          epoch: outcome.epoch,
          deadlineMonoMs: pending.sentAtMonoMs + this.options.ttlMs,
        };
        out.journal.push({
          t: "grant",
          keyId: outcome.keyId,
          seq: outcome.seq,
          granted: outcome.granted,
          epoch: outcome.epoch,
        });
        hold.leases.push(lease);
        // Past its deadline already, or granted before a reset this node has seen: settle it now.
        if (nowMonoMs >= lease.deadlineMonoMs || outcome.epoch < hold.epochSeen)
          this.close(outcome.keyId, hold, lease, nowMonoMs, out);
        return out;
      }
      case "refused": {
        if (hold === undefined || pending === null) return out;
        hold.pending = null;
        hold.retryAtMonoMs = nowMonoMs + this.options.refusedBackoffMs;
        if (outcome.reason === "stale-seq") {
          // The answer to a duplicate of the request: the first copy may have been granted and its
          // answer lost. Abandon it like a timed-out request: settle 0, which returns any grant.
          out.journal.push({ t: "close", keyId: outcome.keyId, seq: outcome.seq });
          this.owe({ keyId: outcome.keyId, seq: outcome.seq, spent: 0, lastSentMonoMs: nowMonoMs });
          out.requests.push({
            type: "settleCreditLease",
            keyId: outcome.keyId,
            nodeId: this.nodeId,
            seq: outcome.seq,
            spent: 0,
          });
        }
        hold.forwardTo = outcome.reason === "low-not-owner" ? outcome.ownerNodeId : null;
        return out;
      }
      case "settled":
      case "ignored": {
        if (this.owed.delete(outcome.seq)) out.journal.push({ t: "settled", keyId: outcome.keyId, seq: outcome.seq });
        return out;
      }
      case "expired":
        return out; // the holder's own deadline already stopped it (or will, before the leader's)
      default: {
        const never: never = outcome;
        throw new Error(`unknown outcome ${JSON.stringify(never)}`);
      }
    }
  }

  /** The local replica applied a reset of `keyId` to `epoch`: leases of older epochs stop now. */
  onEpoch(keyId: string, epoch: number, nowMonoMs: number): HolderOutput {
    const out: HolderOutput = { journal: [], requests: [] };
    const hold = this.keys.get(keyId);
    if (hold === undefined) return out;
    hold.epochSeen = Math.max(hold.epochSeen, epoch);
    for (const lease of [...hold.leases]) if (lease.epoch < epoch) this.close(keyId, hold, lease, nowMonoMs, out);
    this.schedule(keyId, hold, nowMonoMs);
    return out;
  }

  /** Settles owed (for tests and status). */
  owedSettles(): number {
    return this.owed.size;
  }

  /** Leases held and requests pending (for tests and status). */
  heldLeases(): number {
    let n = 0;
    for (const hold of this.keys.values()) n += hold.leases.length + (hold.pending === null ? 0 : 1);
    return n;
  }
}
