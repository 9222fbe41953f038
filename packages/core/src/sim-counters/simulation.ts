// Deterministic simulation of the credit-lease protocol (docs/counters.md): N nodes, each with a
// LeaseHolder and a local journal, a replicated ledger modelled as a linearizable log that is
// available while a majority of nodes is up and connected, a seeded network that drops, delays,
// duplicates and partitions, crashes that lose the unsynced journal tail, and clocks that drift
// within the bound. After every step the checkers below run; after the fault phase everything
// heals and every lease must settle, returning every unspent credit.
import { replayHolderJournal } from "../leases/journal.js";
import {
  ledgerSeqMax,
  applyCreditAdjust,
  applyCreditDirectSpend,
  applyCreditLeaseCommand,
  applyCreditRefill,
  applyCreditSet,
  createCreditLedger,
  creditLedgerViolation,
} from "../leases/ledger.js";
import { creditLeasePolicyDefaults } from "../leases/policy.js";
import { LeaseExpiryTracker } from "../leases/expiry.js";
import { LeaseHolder, type HolderOutput, type LeaseHolderOptions } from "../leases/holder.js";
import type { CreditLeaseCommand, CreditLeaseOutcome, CreditLedgerRecord } from "../leases/types.js";
import type { HolderJournalRecord } from "../leases/journal.js";
import { SimRandom } from "./prng.js";

export interface CounterSimOptions {
  seed: number;
  /** Steps of the fault phase; one step is `stepMs` of true time. */
  steps: number;
  trace?: (line: string) => void;
  /**
   * "faults" (default): everything drawn from the seed, adversarial. "steady": no faults, plenty of
   * credits, a short network delay: the common case, where verifications should be local.
   */
  profile?: "faults" | "steady";
  /**
   * Storage that goes back: now and then a node restarts on a wiped journal (an empty data
   * directory under the same node id). It must refuse to start when the ledger knows lease numbers
   * of it (ledgerSeqMax), and then stays down: its leases are forfeited, never overspent.
   */
  storageGoesBack?: boolean;
  /** Mutation check only: start on a journal behind the ledger anyway. */
  acceptStaleJournal?: boolean;
}

export interface CounterSimStats {
  nodes: number;
  keys: number;
  verifications: number;
  admittedLocal: number;
  admittedForwarded: number;
  admittedCost: number;
  noLease: number;
  /** Verifications without a usable lease while the ledger had unleased credits for them (the cost of leasing). */
  noLeaseWithCredits: number;
  grants: number;
  settles: number;
  expires: number;
  crashes: number;
  partitions: number;
  resets: number;
  /** Restarts refused because the journal was behind the ledger (storageGoesBack). */
  refusedStarts: number;
  healSteps: number;
}

export interface CounterSimResult {
  seed: number;
  ok: boolean;
  failure?: string;
  stats: CounterSimStats;
}

const stepMs = 10;
/** Quiet steps allowed after healing for every lease to settle. */
const healStepsMax = 2_000;

type Envelope =
  | { to: "ledger"; from: string; command: CreditLeaseCommand; deliverAt: number }
  | { to: "node"; node: string; outcome: CreditLeaseOutcome; deliverAt: number };

interface SimNodeState {
  id: string;
  up: boolean;
  holder: LeaseHolder;
  /** Durable journal (synced records only). */
  journal: HolderJournalRecord[];
  /** Clock: mono = offsetMs + trueMs * rate (rate in [1, 1 + driftMax]); a restart draws a new offset. */
  offsetMs: number;
  rate: number;
  /** Epoch per key last applied in this node's replica. */
  epochsSeen: Map<string, number>;
  /** This step's output, not yet synced: a crash before the end of the step loses all of it. */
  buffer: {
    journal: HolderJournalRecord[];
    requests: HolderOutput["requests"];
    spends: { keyId: string; seq: number; cost: number; via: "local" | "forwarded" }[];
  };
}

class Failure extends Error {}

function check(cond: boolean, message: string): asserts cond {
  if (!cond) throw new Failure(message);
}

export function runCounterSimulation(options: CounterSimOptions): CounterSimResult {
  const random = new SimRandom(options.seed);
  const nodeCount = 3 + random.intBelow(3);
  const keyCount = 1 + random.intBelow(3);
  const driftMax = random.nextFloat() * 0.1;
  const steady = options.profile === "steady";
  const ttlMs = steady ? 2_000 : 100 + random.intBelow(19) * 50;
  const holderOptions: LeaseHolderOptions = {
    ttlMs,
    requestTimeoutMs: 50 + random.intBelow(10) * 20,
    settleRetryMs: 30 + random.intBelow(5) * 20,
    requestCredits: steady ? 100 : 1 + random.intBelow(30),
    requestCreditsMax: 0, // set below: a multiple of requestCredits, so leases grow and shrink
    renewFraction: random.nextFloat() * 0.5,
    refusedBackoffMs: 20 + random.intBelow(5) * 10,
  };
  holderOptions.requestCreditsMax = holderOptions.requestCredits * (steady ? 16 : 1 + random.intBelow(16));
  const expiryOptions = { ttlMs, driftMax, marginMs: random.chance(0.5) ? 0 : random.intBelow(3) * 10 };
  const policy = { lowWatermark: random.intBelow(40), shareDivisor: 1 + random.intBelow(3) };
  const dropRate = steady ? 0 : random.nextFloat() * 0.2;
  const duplicateRate = steady ? 0 : random.nextFloat() * 0.05;
  const delayMaxSteps = steady ? 1 : 1 + random.intBelow(8);
  const crashRate = steady ? 0 : random.nextFloat() * 0.01;
  const restartRate = 0.02 + random.nextFloat() * 0.1;
  const partitionRate = steady ? 0 : random.nextFloat() * 0.02;
  const healRate = 0.02 + random.nextFloat() * 0.05;
  const verifyPerStep = 1 + random.intBelow(4);
  const costMax = 1 + random.intBelow(6);
  const adminRate = steady ? 0 : random.nextFloat() * 0.04;

  /** Clock rate in [1, 1 + driftMax]: at either extreme half of the time, the worst case for expiry. */
  const drawRate = (): number =>
    random.chance(0.5) ? (random.chance(0.5) ? 1 : 1 + driftMax) : 1 + random.nextFloat() * driftMax;
  const ids = Array.from({ length: nodeCount }, (_, i) => `n${i + 1}`);
  const keyIds = Array.from({ length: keyCount }, (_, i) => `key_${i + 1}`);
  const nodes = new Map<string, SimNodeState>();
  for (const id of ids) {
    nodes.set(id, {
      id,
      up: true,
      holder: LeaseHolder.create(id, holderOptions),
      journal: [],
      offsetMs: random.intBelow(1_000_000),
      rate: drawRate(),
      epochsSeen: new Map(),
      buffer: { journal: [], requests: [], spends: [] },
    });
  }
  const ledgers = new Map<string, CreditLedgerRecord>();
  // Model bookkeeping: what each epoch of each key was given, and what was admitted against it.
  const epochBalanceMax = new Map<string, number>(); // `${key}/${epoch}` -> highest epochBalance seen
  const admittedByEpoch = new Map<string, number>();
  const leaseEpoch = new Map<string, number>(); // `${key}/${node}/${seq}` -> epoch of the grant
  let suppliedTotal = 0;
  let admittedTotal = 0;
  for (const keyId of keyIds) {
    const initial = steady ? 1_000_000 : random.intBelow(400);
    ledgers.set(keyId, createCreditLedger(keyId, initial));
    epochBalanceMax.set(`${keyId}/0`, initial);
    suppliedTotal += initial;
  }

  let network: Envelope[] = [];
  let groups = new Map<string, number>();
  let step = 0;
  let leaderId: string | null = null;
  const expiry = new LeaseExpiryTracker(expiryOptions);
  const stats: CounterSimStats = {
    nodes: nodeCount,
    keys: keyCount,
    verifications: 0,
    admittedLocal: 0,
    admittedForwarded: 0,
    admittedCost: 0,
    noLease: 0,
    noLeaseWithCredits: 0,
    grants: 0,
    settles: 0,
    expires: 0,
    crashes: 0,
    partitions: 0,
    resets: 0,
    refusedStarts: 0,
    healSteps: 0,
  };
  // Storage faults come from their own generator, so the seeds without them replay as before.
  const storageRandom = new SimRandom(options.seed ^ 0x51d_ba5e);
  /** Nodes that refused to start on a journal behind the ledger: down for good. */
  const refused = new Set<string>();
  const trace = options.trace;
  const trueMs = (): number => step * stepMs;
  const mono = (node: SimNodeState): number => Math.floor(node.offsetMs + trueMs() * node.rate);
  const node = (id: string): SimNodeState => {
    const n = nodes.get(id);
    if (n === undefined) throw new Error(`no node ${id}`);
    return n;
  };
  const connected = (a: string, b: string): boolean => (groups.get(a) ?? 0) === (groups.get(b) ?? 0);
  /** The group holding a majority of up nodes (the ledger is available there), or null. */
  const majorityGroup = (): number | null => {
    const counts = new Map<number, number>();
    for (const n of nodes.values())
      if (n.up) counts.set(groups.get(n.id) ?? 0, (counts.get(groups.get(n.id) ?? 0) ?? 0) + 1);
    for (const [group, count] of counts) if (count * 2 > nodeCount) return group;
    return null;
  };
  const reachesLedger = (id: string): boolean => {
    const g = majorityGroup();
    return g !== null && node(id).up && (groups.get(id) ?? 0) === g;
  };

  const openLeases = (): { keyId: string; nodeId: string; seq: number }[] => {
    const out: { keyId: string; nodeId: string; seq: number }[] = [];
    for (const record of ledgers.values())
      for (const l of record.leases)
        if (l.state === "open") out.push({ keyId: record.keyId, nodeId: l.nodeId, seq: l.seq });
    return out;
  };

  const updateLeader = (): void => {
    const g = majorityGroup();
    const candidates = g === null ? [] : ids.filter((id) => node(id).up && (groups.get(id) ?? 0) === g);
    const keep = leaderId !== null && candidates.includes(leaderId);
    const next = keep ? leaderId : (candidates[random.intBelow(Math.max(1, candidates.length))] ?? null);
    if (next !== leaderId) {
      leaderId = next;
      if (next === null) expiry.lostLeadership();
      else expiry.becameLeader(openLeases(), mono(node(next)));
      trace?.(`step ${step}: leader ${next ?? "none"}`);
    }
  };

  const recordEpochBalance = (record: CreditLedgerRecord): void => {
    const k = `${record.keyId}/${record.epoch}`;
    epochBalanceMax.set(k, Math.max(epochBalanceMax.get(k) ?? 0, record.epochBalance));
  };

  /** Applies a lease command at the ledger (the linearization point) and returns the outcome. */
  const applyAtLedger = (command: CreditLeaseCommand): CreditLeaseOutcome => {
    const record = ledgers.get(command.keyId);
    if (record === undefined) throw new Error("unknown key");
    const applied = applyCreditLeaseCommand(record, command, { voters: ids, policy });
    ledgers.set(command.keyId, applied.record);
    const violation = creditLedgerViolation(applied.record);
    check(violation === null, `ledger invariant: ${violation ?? ""}`);
    const o = applied.outcome;
    trace?.(
      `step ${step}: ledger ${command.type} ${command.keyId}/${command.nodeId}/${command.seq} -> ${JSON.stringify(o)}`,
    );
    if (o.type === "granted") {
      stats.grants++;
      leaseEpoch.set(`${o.keyId}/${o.nodeId}/${o.seq}`, o.epoch);
      if (leaderId !== null) expiry.onGrantApplied(o, mono(node(leaderId)));
    }
    if (o.type === "settled") {
      stats.settles++;
      expiry.onLeaseGone(o);
    }
    if (o.type === "expired") {
      stats.expires++;
      expiry.onLeaseGone(o);
    }
    return o;
  };

  const send = (envelope: Envelope): void => {
    if (random.chance(dropRate)) return;
    network.push(envelope);
    if (random.chance(duplicateRate))
      network.push({ ...envelope, deliverAt: envelope.deliverAt + random.intBelow(delayMaxSteps + 1) });
  };

  /** Buffers a node's output until the end of the step (its sync point). */
  const emit = (n: SimNodeState, out: HolderOutput): void => {
    n.buffer.journal.push(...out.journal);
    n.buffer.requests.push(...out.requests);
  };

  /** The sync point: the journal becomes durable, then requests leave and spends are answered. */
  const flush = (n: SimNodeState): void => {
    n.journal.push(...n.buffer.journal);
    for (const command of n.buffer.requests)
      send({ to: "ledger", from: n.id, command, deliverAt: step + 1 + random.intBelow(delayMaxSteps) });
    for (const spend of n.buffer.spends) {
      const epoch = leaseEpoch.get(`${spend.keyId}/${n.id}/${spend.seq}`);
      check(epoch !== undefined, "spend from a lease never granted");
      const k = `${spend.keyId}/${epoch}`;
      admittedByEpoch.set(k, (admittedByEpoch.get(k) ?? 0) + spend.cost);
      admittedTotal += spend.cost;
      stats.admittedCost += spend.cost;
      if (spend.via === "local") stats.admittedLocal++;
      else stats.admittedForwarded++;
    }
    n.buffer = { journal: [], requests: [], spends: [] };
  };

  /** A spend decided by a holder: the lease it came from must be open at the ledger (not expired) right now. */
  const decideSpends = (n: SimNodeState, journal: readonly HolderJournalRecord[], via: "local" | "forwarded"): void => {
    n.buffer.journal.push(...journal);
    for (const record of journal) {
      if (record.t !== "spend") continue;
      const lease = ledgers.get(record.keyId)?.leases.find((l) => l.nodeId === n.id && l.seq === record.seq);
      check(
        lease !== undefined,
        `${n.id} spent from lease ${record.seq} of ${record.keyId} that the ledger does not hold`,
      );
      check(
        lease.state === "open",
        `${n.id} spent from lease ${record.seq} of ${record.keyId} after the leader expired it`,
      );
      n.buffer.spends.push({ keyId: record.keyId, seq: record.seq, cost: record.cost, via });
    }
  };

  const checkAccounting = (): void => {
    check(admittedTotal <= suppliedTotal, `overspent: admitted ${admittedTotal} > supplied ${suppliedTotal}`);
    for (const [k, admitted] of admittedByEpoch) {
      const balance = epochBalanceMax.get(k) ?? 0;
      check(admitted <= balance, `overspent epoch ${k}: admitted ${admitted} > its balance ${balance}`);
    }
    for (const record of ledgers.values()) {
      const admitted = admittedByEpoch.get(`${record.keyId}/${record.epoch}`) ?? 0;
      check(
        admitted <= record.epochBalance - record.unleased,
        `overspent ${record.keyId}: admitted ${admitted} > handed out ${record.epochBalance - record.unleased}`,
      );
    }
  };

  const verifyOnce = (): void => {
    const upIds = ids.filter((id) => node(id).up);
    const id = upIds[random.intBelow(Math.max(1, upIds.length))];
    if (id === undefined) return;
    const n = node(id);
    const keyId = keyIds[random.intBelow(keyIds.length)] ?? "";
    const cost = random.intBelow(costMax + 1);
    stats.verifications++;
    const local = n.holder.verify(keyId, cost, mono(n));
    if (local.result.type === "admitted") {
      decideSpends(n, local.journal, "local"); // answered at the sync point, once durable
      return;
    }
    const target = local.result.forwardTo;
    if (target !== null && target !== id && node(target).up && connected(id, target)) {
      const owner = node(target);
      const forwarded = owner.holder.verify(keyId, cost, mono(owner));
      if (forwarded.result.type === "admitted") {
        decideSpends(owner, forwarded.journal, "forwarded");
        return;
      }
    }
    // The ledger path for a node without a lease: a direct spend through the log (when reachable).
    if (cost > 0 && random.chance(0.1) && reachesLedger(id)) {
      const record = ledgers.get(keyId);
      if (record === undefined) return;
      const direct = applyCreditDirectSpend(record, cost);
      if (direct.admitted) {
        ledgers.set(keyId, direct.record);
        const k = `${keyId}/${record.epoch}`;
        admittedByEpoch.set(k, (admittedByEpoch.get(k) ?? 0) + cost);
        admittedTotal += cost;
        stats.admittedCost += cost;
      }
      return;
    }
    stats.noLease++;
    if ((ledgers.get(keyId)?.unleased ?? 0) >= cost) stats.noLeaseWithCredits++;
  };

  const adminWrite = (): void => {
    const keyId = keyIds[random.intBelow(keyIds.length)] ?? "";
    const record = ledgers.get(keyId);
    if (record === undefined || majorityGroup() === null) return;
    const kind = random.intBelow(4);
    let next: CreditLedgerRecord;
    if (kind === 0) {
      const value = random.intBelow(300);
      next = applyCreditSet(record, value);
      suppliedTotal += value;
    } else if (kind === 1) {
      const delta = random.intBelow(100);
      next = applyCreditAdjust(record, delta);
      suppliedTotal += delta;
    } else if (kind === 2) {
      next = applyCreditAdjust(record, -random.intBelow(100));
    } else {
      const amount = random.intBelow(300);
      next = applyCreditRefill(record, amount);
      if (next !== record) suppliedTotal += amount;
    }
    if (next.epoch !== record.epoch) stats.resets++;
    ledgers.set(keyId, next);
    recordEpochBalance(next);
    trace?.(`step ${step}: admin on ${keyId}: epoch ${next.epoch} unleased ${next.unleased}`);
  };

  const deliver = (): void => {
    const due = network.filter((e) => e.deliverAt <= step);
    network = network.filter((e) => e.deliverAt > step);
    for (const envelope of due) {
      if (envelope.to === "ledger") {
        // A proposal reaches the log only while a majority is available (it may be applied after its sender is cut off).
        if (majorityGroup() === null) continue;
        const outcome = applyAtLedger(envelope.command);
        send({ to: "node", node: envelope.from, outcome, deliverAt: step + 1 + random.intBelow(delayMaxSteps) });
      } else {
        const n = node(envelope.node);
        if (!n.up || !reachesLedger(n.id)) continue;
        trace?.(
          `step ${step}: ${n.id} hears ${envelope.outcome.type} ${envelope.outcome.keyId}/${envelope.outcome.seq}`,
        );
        emit(n, n.holder.onOutcome(envelope.outcome, mono(n)));
      }
    }
  };

  const propagateEpochs = (): void => {
    for (const n of nodes.values()) {
      if (!reachesLedger(n.id)) continue;
      for (const [keyId, record] of ledgers) {
        if ((n.epochsSeen.get(keyId) ?? 0) === record.epoch) continue;
        n.epochsSeen.set(keyId, record.epoch);
        emit(n, n.holder.onEpoch(keyId, record.epoch, mono(n)));
      }
    }
  };

  const leaderExpires = (): void => {
    if (leaderId === null) return;
    for (const lease of expiry.due(mono(node(leaderId)))) applyAtLedger({ type: "expireCreditLease", ...lease });
  };

  /** Crashes strike before the sync point: the step's unsynced output is lost. */
  const crashesAndSync = (): void => {
    for (const n of nodes.values()) {
      if (!n.up) continue;
      if (random.chance(crashRate)) {
        n.up = false;
        n.buffer = { journal: [], requests: [], spends: [] };
        stats.crashes++;
        trace?.(`step ${step}: crash ${n.id}`);
        if (leaderId === n.id) {
          // The tracker lives in the leader's memory and counts on its monotonic clock: both die with it.
          leaderId = null;
          expiry.lostLeadership();
        }
      } else {
        flush(n);
      }
    }
  };

  const faults = (): void => {
    for (const n of nodes.values()) if (!n.up && random.chance(restartRate)) restart(n);
    if (random.chance(partitionRate)) {
      groups = new Map(ids.map((id) => [id, random.intBelow(2)]));
      stats.partitions++;
      trace?.(`step ${step}: partition ${JSON.stringify([...groups])}`);
    } else if (groups.size > 0 && random.chance(healRate)) {
      groups = new Map();
      trace?.(`step ${step}: heal`);
    }
  };

  const restart = (n: SimNodeState): void => {
    if (refused.has(n.id)) return;
    // Wiped only while the nodes down for good stay a minority (the ledger needs a majority; an
    // operator would restore the directory or start the node under a new id).
    const minorityLeft = refused.size + 1 <= Math.floor((ids.length - 1) / 2);
    if (options.storageGoesBack === true && minorityLeft && storageRandom.chance(0.3)) {
      n.journal = []; // the data directory was wiped (or replaced by an empty one)
      trace?.(`step ${step}: ${n.id} restarts on a wiped journal`);
    }
    if (
      options.acceptStaleJournal !== true &&
      ledgerSeqMax(ledgers.values(), n.id) > replayHolderJournal(n.journal).seqMax
    ) {
      refused.add(n.id);
      stats.refusedStarts++;
      trace?.(`step ${step}: ${n.id} refuses to start: its journal is behind the ledger`);
      return;
    }
    const restored = LeaseHolder.restore(n.id, n.journal, holderOptions);
    n.holder = restored.holder;
    n.up = true;
    n.offsetMs = random.intBelow(1_000_000);
    n.epochsSeen = new Map();
    n.journal.push(...restored.journal);
    trace?.(`step ${step}: restart ${n.id} (${restored.holder.owedSettles()} settles owed)`);
  };

  const pollAll = (): void => {
    for (const n of nodes.values()) if (n.up) emit(n, n.holder.poll(mono(n)));
  };

  try {
    for (; step < options.steps; step++) {
      faults();
      updateLeader();
      deliver();
      propagateEpochs();
      for (let i = 0; i < verifyPerStep; i++) verifyOnce();
      if (random.chance(adminRate)) adminWrite();
      leaderExpires();
      pollAll();
      crashesAndSync();
      checkAccounting();
    }
    // Healing: everything up and connected, no more losses, no new verifications.
    groups = new Map();
    for (const n of nodes.values()) if (!n.up) restart(n);
    const healStart = step;
    for (; step - healStart < healStepsMax; step++) {
      updateLeader();
      deliver();
      propagateEpochs();
      leaderExpires();
      pollAll();
      for (const n of nodes.values()) flush(n);
      checkAccounting();
      const settled = [...ledgers.values()].every((r) => r.leases.every((l) => refused.has(l.nodeId)));
      const owed = [...nodes.values()].every(
        (n) => refused.has(n.id) || (n.holder.owedSettles() === 0 && n.holder.heldLeases() === 0),
      );
      if (settled && owed && network.length === 0) break;
    }
    stats.healSteps = step - healStart;
    if (stats.healSteps >= healStepsMax) {
      const leases = [...ledgers.values()].flatMap((r) =>
        r.leases.map((l) => `${r.keyId}/${l.nodeId}/${l.seq}:${l.state}`),
      );
      const holders = [...nodes.values()].map(
        (n) => `${n.id}: owed ${n.holder.owedSettles()} held ${n.holder.heldLeases()}`,
      );
      check(
        false,
        `liveness: unsettled ${healStepsMax} steps after healing: ledger [${leases.join(" ")}], ${holders.join(", ")}, in flight ${network.length}`,
      );
    }
    for (const record of ledgers.values()) {
      const admitted = admittedByEpoch.get(`${record.keyId}/${record.epoch}`) ?? 0;
      // A node that refused to start forfeits its leases (underspend only, at most their grants).
      let forfeited = 0;
      for (const l of record.leases) if (l.epoch === record.epoch && refused.has(l.nodeId)) forfeited += l.granted;
      check(
        record.unleased <= record.epochBalance - admitted &&
          record.unleased >= record.epochBalance - admitted - forfeited,
        `credits lost on ${record.keyId}: unleased ${record.unleased}, balance ${record.epochBalance} - admitted ${admitted}, forfeited at most ${forfeited}`,
      );
    }
    return { seed: options.seed, ok: true, stats };
  } catch (error) {
    if (!(error instanceof Failure) && !(error instanceof Error)) throw error;
    return { seed: options.seed, ok: false, failure: `step ${step}: ${error.message}`, stats };
  }
}
