// Assembles the credit leases of one node (docs/counters.md §5): the journal restored and
// compacted, the holder rebuilt from it (its close records made durable before anything is
// served), the spender the verify route calls, the outbox, and the leader's expiry and refill
// timers, all fed by the key-state machine's apply events.
import { performance } from "node:perf_hooks";
import {
  ledgerSeqMax,
  LeaseHolder,
  ownerOf,
  replayHolderJournal,
  type CommandOutcome,
  type KeyCommand,
  type KeyState,
} from "@keyraft/core";
import type { Logger } from "pino";
import type { StoreDb } from "../../store/level-db.js";
import type { ObservedKeyMachine } from "./credit-events.js";
import {
  expiryMarginMs,
  holderOptions,
  holderPollIntervalMs,
  leaderTickMs,
  leaseWaitMs,
  type CreditLeaseConfig,
} from "./config.js";
import { spendOnLog, type CreditTransport } from "./forward.js";
import { LeaseJournalStore } from "./journal-store.js";
import { HolderClock } from "./holder-clock.js";
import { LeaseExpiryDriver } from "./lease-expiry.js";
import { LeaseSpender } from "./lease-spender.js";
import { LeaseOutbox } from "./outbox.js";
import { RefillScheduler } from "./refill-scheduler.js";

export interface CreditLeasesOptions {
  nodeId: string;
  db: StoreDb;
  machine: ObservedKeyMachine;
  config: CreditLeaseConfig;
  propose(command: KeyCommand): Promise<CommandOutcome>;
  isLeader(): boolean;
  voters(): string[];
  /** Forwarded spends of low keys to and from their owner (the cluster channel). */
  transport: CreditTransport;
  nowMs(): number;
  logger: Logger;
  onFatal(error: Error): void;
}

/** The node's lease journal is older than the replicated ledger's record of it: the node must not start. */
export class JournalBehindLedgerError extends Error {
  constructor(nodeId: string, journalSeqMax: number, ledgerSeqMax: number) {
    super(
      `credit lease journal of node ${nodeId} is behind the ledger (its highest lease number ${journalSeqMax}, ` +
        `the ledger's ${ledgerSeqMax}): the data directory is older than this node's history or was wiped; ` +
        "restore it, or start this node under a new node id",
    );
    this.name = "JournalBehindLedgerError";
  }
}

export interface CreditLeases {
  spender: LeaseSpender;
  status(): Record<string, number>;
  close(): Promise<void>;
}

/** Failed proposals are expected during elections; log them at most this often. */
const errorLogEveryMs = 5_000;
/** A graceful stop waits at most this long for its leases' settles. */
const drainTimeoutMs = 1_500;

export async function startCreditLeases(options: CreditLeasesOptions): Promise<CreditLeases> {
  const { logger, config } = options;
  const monoNowMs = () => performance.now();
  // The holder's deadlines keep running through a suspend of the machine (holder-clock.ts).
  const holderClock = new HolderClock(monoNowMs, options.nowMs);
  const holderNowMs = () => holderClock.nowMs();
  let lastErrorLogMs = Number.NEGATIVE_INFINITY;
  const onError = (error: unknown) => {
    const now = monoNowMs();
    if (now - lastErrorLogMs < errorLogEveryMs) return;
    lastErrorLogMs = now;
    logger.warn(
      { err: error instanceof Error ? error.message : String(error) },
      "credit leases: a proposal failed (retried by the holder's timers)",
    );
  };
  const { store: journal, records } = await LeaseJournalStore.open(options.db, { onFatal: options.onFatal });
  // A journal older than what the ledger knows of this node (an old or wiped data directory under
  // the same id) would reuse lease numbers and could settle a lease it spent from as unspent: a
  // storage fault stops the node rather than becoming an overspend.
  const journalSeqMax = replayHolderJournal(records).seqMax;
  const ledgerSeq = ledgerSeqMax(options.machine.state.creditLedgers.values(), options.nodeId);
  if (ledgerSeq > journalSeqMax) {
    await journal.close();
    throw new JournalBehindLedgerError(options.nodeId, journalSeqMax, ledgerSeq);
  }
  const restored = LeaseHolder.restore(options.nodeId, records, holderOptions(config));
  // Rule 3: leases known from before the restart are closed (durably) before anything else.
  await journal.append(restored.journal);
  const holder = restored.holder;
  logger.info(
    { owedSettles: holder.owedSettles(), leasesOnDisk: journal.leasesOnDisk() },
    "credit lease journal restored",
  );

  const votersOrSelf = () => {
    const voters = options.voters();
    return voters.length === 0 ? [options.nodeId] : voters;
  };
  const outbox = new LeaseOutbox({ propose: options.propose, voters: options.voters, onError });
  const state: KeyState = options.machine.state;
  const spender = new LeaseSpender({
    holder,
    journal,
    outbox,
    state,
    monoNowMs: holderNowMs,
    nowMs: options.nowMs,
    leaseWaitMs,
    pollIntervalMs: holderPollIntervalMs,
    onError,
    forward: (owner, keyId, cost) => options.transport.call(owner, keyId, cost),
    ownerOf: (keyId) => ownerOf(keyId, votersOrSelf()),
  });
  // As the owner of low keys: spend for the other nodes, from a lease or on the log.
  options.transport.serve(async (keyId, cost) => {
    if (typeof keyId !== "string" || !Number.isSafeInteger(cost) || cost < 1)
      return { t: "undecided", message: "malformed credit spend" };
    const spent = await spender.spend(keyId, cost, { forwarded: true });
    if (spent !== null) return spent;
    return spendOnLog(options.propose, keyId, cost, options.nowMs(), () => spender.shown.now(keyId) ?? 0);
  });
  const expiry = new LeaseExpiryDriver({
    ttlMs: config.leaseTtlMs,
    driftMax: config.clockDriftMax,
    marginMs: expiryMarginMs,
    state,
    isLeader: options.isLeader,
    propose: options.propose,
    monoNowMs,
    onError,
  });
  const refills = new RefillScheduler({
    state,
    isLeader: options.isLeader,
    propose: options.propose,
    nowMs: options.nowMs,
    onError,
  });
  options.machine.listen({
    onLease(outcome) {
      spender.onLease(outcome);
      expiry.onLease(outcome);
    },
    onEpoch: (keyId, epoch) => spender.onEpoch(keyId, epoch),
    onRestore: () => expiry.onRestore(),
    shown: (keyId) => spender.shown.now(keyId),
  });
  spender.start();
  const leaderTimer = setInterval(() => {
    expiry.tick();
    refills.tick();
  }, leaderTickMs);
  leaderTimer.unref();

  return {
    spender,
    status: () => ({
      ...spender.status(),
      ...outbox.stats(),
      expiryWatched: expiry.watched(),
      leasesOnDisk: journal.leasesOnDisk(),
      journalWrites: journal.recordsWritten,
    }),
    async close() {
      await spender.drain(drainTimeoutMs);
      logger.info({ ...spender.status(), ...outbox.stats() }, "credit leases stopped");
      clearInterval(leaderTimer);
      options.machine.listen(null);
      spender.stop();
      await journal.close();
    },
  };
}
