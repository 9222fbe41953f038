// One randomized fault campaign against a real cluster: workloads (credit verifications, rate
// limits, admin register and set writes) run while faults (kill -9, SIGSTOP/SIGCONT, partitions,
// link cuts, and membership changes: a voter removed and added back) strike; then everything heals
// and the checks run. Fully described by its seed (the schedule;
// timing still varies between runs, as with any real cluster).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { certainWindowPeak, creditViolations, type Admission, type CreditObservation } from "./checks.js";
import { call, certainlyNotApplied, field } from "./http.js";
import {
  checkLinearizable,
  registerModel,
  resolveUnknownWrites,
  setModel,
  type Operation,
  type RegisterInput,
  type RegisterOutput,
  type SetInput,
  type SetOutput,
} from "./linearizability.js";
import { ProcessCluster } from "./processes.js";

export interface CampaignOptions {
  seed: number;
  durationMs: number;
  nodes: number;
  /** Rate-limit bound as a multiple of the limit (1 = exact across the cluster, as async:false limits are since they are judged by owners). */
  ratelimitBoundFactor: number;
  /**
   * Each node's wall clock is offset by its own amount in [0, clockSkewMs] (KEYRAFT_CLOCK_OFFSET_MS,
   * fixed per node across restarts). Default 150: within one bucket of the limit's window (200 ms),
   * the clock assumption of async: false limits (docs/counters.md).
   */
  clockSkewMs?: number;
  /**
   * Membership changes during the run (default 0): each removes a voter (cluster.removeNode),
   * stops it, then starts it on its data dir and adds it back (cluster.addNode) until it is a
   * voter again, while the other faults go on.
   */
  membershipChanges?: number;
  /**
   * Each membership change adds a brand-new node instead (an empty data dir, KEYRAFT_JOIN=true),
   * waits until it is a voter, then removes another voter for good (stopped, never started again).
   */
  membershipFresh?: boolean;
  /**
   * Power cuts during the run (default 0): one node, chosen by the seed, runs under strace; each
   * cut kills it and drops every write it had not fsynced (power-cut.ts), then restarts it.
   */
  powerCuts?: number;
  /** The nodes snapshot every this many entries (KEYRAFT_SNAPSHOT_EVERY); unset: their default. */
  snapshotEvery?: number;
  /**
   * Snapshots past this many bytes are stored as piece files of this size
   * (KEYRAFT_RAFT_SNAPSHOT_PIECE_BYTES): with snapshotEvery small, power cuts strike while pieces
   * are written. Unset: the nodes' default.
   */
  snapshotPieceBytes?: number;
  log?: (line: string) => void;
  keepData?: boolean;
}

export interface CampaignReport {
  seed: number;
  nodes: number;
  durationMs: number;
  faults: Record<string, number>;
  operations: Record<string, number>;
  violations: string[];
  linearizability: { register: string; set: string };
  converged: boolean;
  ratelimit: {
    limit: number;
    durationMs: number;
    certainWindowMax: number;
    /** When the first window reaching that maximum began, in ms since the campaign started (the log's clock). */
    peakAtMs: number | null;
    bound: number;
  };
  /** Each node's clock offset (KEYRAFT_CLOCK_OFFSET_MS). */
  clockOffsetsMs: Record<string, number>;
  credits: CreditObservation[];
  /** What each membership change did. */
  membership: MembershipStep[];
  /** What each power cut dropped. */
  powerCuts: PowerCutStep[];
  /**
   * Connections to nodes added back, through their inbound listener: identified by source, or
   * dropped unidentified. 0 identified is possible: a node added back dials its peers itself
   * (through its own links), and a Raft connection carries both directions.
   */
  addedBackConnections: { identified: number; unidentified: number };
  dataDir: string;
}

export interface PowerCutStep {
  nodeId: string;
  /** Files cut back, and the unsynced bytes dropped from them. */
  filesCut: number;
  bytesDropped: number;
  /** Files with unsynced positional writes, left whole. */
  filesKeptWhole: number;
}

export interface MembershipStep {
  /** The node removed (and added back, unless `addedNodeId` names the brand-new node added instead). */
  nodeId: string;
  addedNodeId?: string;
  /** Raft index of the removal and of the addition (as a learner); null when it did not happen. */
  removedAtIndex: number | null;
  addedAtIndex: number | null;
  /** From the addition until a member listed the added node (back, or new) among the voters; null when it never did in time. */
  voterAgainAfterMs: number | null;
}

const requestTimeoutMs = 3_000;
const creditsPerKey = 300;
const registerKeys = 3;
const creditKeys = 2;
const topUpCredits = 30;
/** The nodes' credit lease ttl (KEYRAFT_CREDIT_LEASE_TTL_MS). */
const creditLeaseTtlMs = 1_000;
/** The final credit read waits at most this long for the nodes' credit leases to settle (ttl + request timeout + settle retries). */
const creditLeaseSettleWaitMs = 10_000;
const limit = 20;
const limitDurationMs = 2_000;
/** Default per-node clock skew: below one bucket (a tenth) of the limit's window. */
export const defaultClockSkewMs = 150;
/** How long one membership request (remove, add) is retried, and how long an added node may take to become a voter. */
const membershipStepWaitMs = 30_000;

function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export async function runCampaign(options: CampaignOptions): Promise<CampaignReport> {
  // Log lines carry the time since the start on the monotonic clock the admissions are timed on.
  const campaignStartMs = performance.now();
  const log = (line: string): void =>
    options.log?.(`+${((performance.now() - campaignStartMs) / 1000).toFixed(2)}s ${line}`);
  const random = mulberry32(options.seed);
  const pick = <T>(items: readonly T[]): T | undefined => items[Math.floor(random() * items.length)];
  const dir = mkdtempSync(join(tmpdir(), "keyraft-faults-"));
  const rootKey = `faults_root_${options.seed}_${"x".repeat(16)}`;
  // A short credit lease ttl: leases expire, renew and settle many times within a campaign.
  const env: Record<string, string> = {
    KEYRAFT_CREDIT_LEASE_TTL_MS: String(creditLeaseTtlMs),
    ...(options.snapshotEvery === undefined ? {} : { KEYRAFT_SNAPSHOT_EVERY: String(options.snapshotEvery) }),
    ...(options.snapshotPieceBytes === undefined
      ? {}
      : { KEYRAFT_RAFT_SNAPSHOT_PIECE_BYTES: String(options.snapshotPieceBytes) }),
  };
  // Per-node clock skew on a stream of its own (the workload's choices per seed stay as they were).
  const skewRandom = mulberry32(options.seed ^ 0x5bd1e995);
  const clockSkewMs = options.clockSkewMs ?? defaultClockSkewMs;
  const clockOffsetsMs: Record<string, number> = {};
  // The node that runs under strace for power cuts, on a stream of its own.
  const powerCutRandom = mulberry32(options.seed ^ 0x165667b1);
  const powerCutNode = `n${1 + Math.floor(powerCutRandom() * options.nodes)}`;
  const cluster = await ProcessCluster.start({
    nodes: options.nodes,
    dir,
    rootKey,
    secret: `secret-${options.seed}-${"s".repeat(32)}`,
    env,
    traced: new Set((options.powerCuts ?? 0) > 0 ? [powerCutNode] : []),
    nodeEnv: (id) => {
      clockOffsetsMs[id] ??= Math.floor(skewRandom() * (clockSkewMs + 1));
      return { KEYRAFT_CLOCK_OFFSET_MS: String(clockOffsetsMs[id]) };
    },
  });
  const faults: Record<string, number> = {
    kill9: 0,
    pause: 0,
    partition: 0,
    linkCut: 0,
    memberRemoved: 0,
    memberAdded: 0,
    powerCut: 0,
  };
  const membership: MembershipStep[] = [];
  const powerCuts: PowerCutStep[] = [];
  const operations: Record<string, number> = {
    verify: 0,
    verifyValid: 0,
    limit: 0,
    limitSuccess: 0,
    write: 0,
    writeAcked: 0,
    writeUnknown: 0,
    read: 0,
  };
  const violations: string[] = [];
  const report: CampaignReport = {
    seed: options.seed,
    nodes: options.nodes,
    durationMs: options.durationMs,
    faults,
    operations,
    violations,
    linearizability: { register: "not run", set: "not run" },
    converged: false,
    ratelimit: {
      limit,
      durationMs: limitDurationMs,
      certainWindowMax: 0,
      peakAtMs: null,
      bound: limit * options.ratelimitBoundFactor,
    },
    clockOffsetsMs,
    credits: [],
    membership,
    powerCuts,
    addedBackConnections: cluster.proxy.inboundCounts,
    dataDir: dir,
  };
  const anyUp = (): string => cluster.url(pick(cluster.upIds()) ?? cluster.ids[0] ?? "n1");
  const admin = async (path: string, body: unknown): Promise<unknown> => {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const answer = await call(anyUp(), path, body, rootKey, requestTimeoutMs);
      if (answer.status === 200) return answer.body;
      if (Date.now() > deadline)
        throw new Error(`setup ${path} failed: ${answer.status} ${JSON.stringify(answer.body)}`);
      await sleep(200);
    }
  };
  try {
    // Setup (retried until the cluster has a leader and serves).
    log(`campaign seed ${options.seed}: ${options.nodes} nodes, ${options.durationMs} ms, data in ${dir}`);
    const apiId = String(field(await admin("/v1/apis.createApi", { name: "faults" }), "apiId"));
    const creditKeyIds: string[] = [];
    const creditSecrets = new Map<string, string>();
    for (let i = 0; i < creditKeys; i++) {
      const created = await admin("/v1/keys.createKey", { apiId, remaining: creditsPerKey, name: `credits-${i}` });
      creditKeyIds.push(String(field(created, "keyId")));
      creditSecrets.set(String(field(created, "keyId")), String(field(created, "key")));
    }
    const registers: string[] = [];
    for (let i = 0; i < registerKeys; i++)
      registers.push(String(field(await admin("/v1/keys.createKey", { apiId, name: "r0" }), "keyId")));
    const setKeyId = String(field(await admin("/v1/keys.createKey", { apiId, name: "set" }), "keyId"));
    const barrierKeyId = String(field(await admin("/v1/keys.createKey", { apiId, name: "barrier" }), "keyId"));
    log(`setup done: api ${apiId}`);

    const registerHistory: Operation<RegisterInput, RegisterOutput>[] = [];
    const setHistory: Operation<SetInput, SetOutput>[] = [];
    const acknowledgedAdds = new Set<string>();
    const admitted = new Map<string, number>(creditKeyIds.map((k) => [k, 0]));
    const supplied = new Map<string, number>(creditKeyIds.map((k) => [k, creditsPerKey]));
    const limitAdmissions: Admission[] = [];
    const stopAtMs = Date.now() + options.durationMs;
    let writeCounter = 0;

    // Reads answer from the node's local replica (by design, not linearizable on their own). A
    // read here is a barrier write on the same node (a Raft entry, answered once applied there)
    // followed by the local read: the node has applied at least the barrier, committed after the
    // read began, so the value read is the state at a commit point inside the read's interval.
    let barrierCounter = 0;
    const linearizableRead = async (keyId: string): Promise<unknown> => {
      const url = anyUp();
      const barrier = await call(
        url,
        "/v1/keys.updateKey",
        { keyId: barrierKeyId, name: `b${++barrierCounter}` },
        rootKey,
        requestTimeoutMs,
      );
      if (barrier.status !== 200) return null;
      const answer = await call(
        url,
        `/v1/keys.getKey?keyId=${encodeURIComponent(keyId)}`,
        undefined,
        rootKey,
        requestTimeoutMs,
      );
      return answer.status === 200 ? answer.body : null;
    };

    const verifyWorker = async (): Promise<void> => {
      while (Date.now() < stopAtMs) {
        const keyId = pick(creditKeyIds) ?? "";
        const cost = 1 + Math.floor(random() * 3);
        operations["verify"] = (operations["verify"] ?? 0) + 1;
        const answer = await call(
          anyUp(),
          "/v1/keys.verifyKey",
          { key: creditSecrets.get(keyId), remaining: { cost } },
          null,
          requestTimeoutMs,
        );
        if (answer.status === 200 && field(answer.body, "valid") === true) {
          operations["verifyValid"] = (operations["verifyValid"] ?? 0) + 1;
          admitted.set(keyId, (admitted.get(keyId) ?? 0) + cost);
        }
      }
    };
    // Tops the credit keys up while faults strike, so verifications keep spending throughout.
    // An increment with an unknown outcome may or may not count: `supplied` is the most the keys got.
    const topUpWorker = async (): Promise<void> => {
      while (Date.now() < stopAtMs - 2_000) {
        await sleep(1_000);
        const keyId = pick(creditKeyIds) ?? "";
        const answer = await call(
          anyUp(),
          "/v1/keys.updateRemaining",
          { keyId, op: "increment", value: topUpCredits },
          rootKey,
          requestTimeoutMs,
        );
        if (answer.status === 200 || !certainlyNotApplied(answer))
          supplied.set(keyId, (supplied.get(keyId) ?? 0) + topUpCredits);
      }
    };
    // Call and return times of admissions on the monotonic clock: a wall clock stepped back during
    // a run would put admissions of two windows at overlapping times and report an overshoot the
    // nodes never made (their limiters judge at their clock's high-water mark, so a step back
    // freezes their windows instead).
    const limitCall = async (): Promise<void> => {
      const callMs = performance.now();
      operations["limit"] = (operations["limit"] ?? 0) + 1;
      const answer = await call(
        anyUp(),
        "/v1/ratelimits.limit",
        { namespace: "faults", identifier: "hot", limit, duration: limitDurationMs },
        rootKey,
        requestTimeoutMs,
      );
      if (answer.status === 200 && field(answer.body, "success") === true) {
        operations["limitSuccess"] = (operations["limitSuccess"] ?? 0) + 1;
        limitAdmissions.push({ callMs, returnMs: performance.now() });
      }
    };
    const limitWorker = async (): Promise<void> => {
      while (Date.now() < stopAtMs) {
        if (random() < 0.1) {
          // A burst: 5-40 calls at once, each to a random node up (the owner judges them all).
          operations["limitBurst"] = (operations["limitBurst"] ?? 0) + 1;
          const size = 5 + Math.floor(random() * 36);
          await Promise.all(Array.from({ length: size }, () => limitCall()));
        } else await limitCall();
        await sleep(20);
      }
    };
    const registerWorker = async (clientId: number): Promise<void> => {
      while (Date.now() < stopAtMs) {
        const keyId = pick(registers) ?? "";
        const callMs = Date.now();
        if (random() < 0.5) {
          const value = `w${++writeCounter}`;
          operations["write"] = (operations["write"] ?? 0) + 1;
          const answer = await call(anyUp(), "/v1/keys.updateKey", { keyId, name: value }, rootKey, requestTimeoutMs);
          if (answer.status === 200) {
            operations["writeAcked"] = (operations["writeAcked"] ?? 0) + 1;
            registerHistory.push({
              key: keyId,
              clientId,
              input: { op: "write", value },
              output: { ok: true },
              callMs,
              returnMs: Date.now(),
            });
          } else if (!certainlyNotApplied(answer)) {
            operations["writeUnknown"] = (operations["writeUnknown"] ?? 0) + 1;
            // By status (0: no answer): what made outcomes unknown.
            operations[`writeUnknown${answer.status}`] = (operations[`writeUnknown${answer.status}`] ?? 0) + 1;
            registerHistory.push({
              key: keyId,
              clientId,
              input: { op: "write", value },
              output: undefined,
              callMs,
              returnMs: Infinity,
            });
          }
        } else {
          operations["read"] = (operations["read"] ?? 0) + 1;
          const answer = await linearizableRead(keyId);
          if (answer !== null) {
            registerHistory.push({
              key: keyId,
              clientId,
              input: { op: "read" },
              output: { value: (field(answer, "name") as string | undefined) ?? null },
              callMs,
              returnMs: Date.now(),
            });
          }
        }
      }
    };
    const setWorker = async (clientId: number): Promise<void> => {
      while (Date.now() < stopAtMs) {
        const callMs = Date.now();
        if (random() < 0.5) {
          const value = `perm.${options.seed}.${++writeCounter}`;
          operations["write"] = (operations["write"] ?? 0) + 1;
          const answer = await call(
            anyUp(),
            "/v1/keys.addPermissions",
            { keyId: setKeyId, permissions: [{ name: value, create: true }] },
            rootKey,
            requestTimeoutMs,
          );
          if (answer.status === 200) {
            operations["writeAcked"] = (operations["writeAcked"] ?? 0) + 1;
            acknowledgedAdds.add(value);
            setHistory.push({
              key: "set",
              clientId,
              input: { op: "add", value },
              output: { ok: true },
              callMs,
              returnMs: Date.now(),
            });
          } else if (!certainlyNotApplied(answer)) {
            operations["writeUnknown"] = (operations["writeUnknown"] ?? 0) + 1;
            // By status (0: no answer): what made outcomes unknown.
            operations[`writeUnknown${answer.status}`] = (operations[`writeUnknown${answer.status}`] ?? 0) + 1;
            setHistory.push({
              key: "set",
              clientId,
              input: { op: "add", value },
              output: undefined,
              callMs,
              returnMs: Infinity,
            });
          }
        } else {
          operations["read"] = (operations["read"] ?? 0) + 1;
          const answer = await linearizableRead(setKeyId);
          const permissions = field(answer, "permissions");
          if (answer !== null) {
            setHistory.push({
              key: "set",
              clientId,
              input: { op: "read" },
              output: { values: Array.isArray(permissions) ? permissions.map(String) : [] },
              callMs,
              returnMs: Date.now(),
            });
          }
        }
      }
    };
    const faultWorker = async (): Promise<void> => {
      // Its own stream: the fault schedule (kinds, victims, hold times) depends on the seed only.
      const random = mulberry32(options.seed ^ 0x5bd1e995);
      const pick = <T>(items: readonly T[]): T | undefined => items[Math.floor(random() * items.length)];
      const minority = Math.floor((options.nodes - 1) / 2);
      while (Date.now() < stopAtMs - 1_000) {
        await sleep(500 + random() * 1_500);
        const kind = Math.floor(random() * 4);
        const victims = cluster
          .memberIds()
          .sort(() => random() - 0.5)
          .slice(0, Math.max(1, Math.floor(random() * minority) + 1));
        const holdMs = 500 + random() * 2_000;
        if (kind === 0) {
          faults["kill9"] = (faults["kill9"] ?? 0) + victims.length;
          log(`fault: kill -9 ${victims.join(",")} for ${Math.round(holdMs)} ms`);
          await Promise.all(victims.map((id) => cluster.kill9(id)));
          await sleep(holdMs);
          for (const id of victims) cluster.restart(id);
        } else if (kind === 1) {
          faults["pause"] = (faults["pause"] ?? 0) + victims.length;
          log(`fault: SIGSTOP ${victims.join(",")} for ${Math.round(holdMs)} ms`);
          for (const id of victims) cluster.pause(id);
          await sleep(holdMs);
          for (const id of victims) cluster.resume(id);
        } else if (kind === 2) {
          faults["partition"] = (faults["partition"] ?? 0) + 1;
          const rest = cluster.memberIds().filter((id) => !victims.includes(id));
          log(`fault: partition [${victims.join(",")}] | [${rest.join(",")}] for ${Math.round(holdMs)} ms`);
          cluster.proxy.partition([victims, rest]);
          await sleep(holdMs);
          cluster.proxy.healAll();
        } else {
          const a = pick(cluster.memberIds()) ?? "n1";
          const b = pick(cluster.memberIds().filter((id) => id !== a)) ?? "n2";
          faults["linkCut"] = (faults["linkCut"] ?? 0) + 1;
          log(`fault: cut link ${a}-${b} for ${Math.round(holdMs)} ms`);
          cluster.proxy.cutLink(a, b);
          await sleep(holdMs);
          cluster.proxy.healLink(a, b);
        }
      }
    };

    // A membership request through any member up (forwarded to the leader), retried while no
    // leader takes it (or it was lost with one, or another change is pending); both are idempotent
    // (a member already in or out answers 200).
    const membershipCall = async (path: string, body: unknown): Promise<number | null> => {
      const deadline = Date.now() + membershipStepWaitMs;
      while (Date.now() < deadline) {
        const answer = await call(anyUp(), path, body, rootKey, requestTimeoutMs);
        if (answer.status === 200) return Number(field(answer.body, "index"));
        // Transient, retried as 429 is: a change right after another (a removal after an addition's
        // promotion) waits until the leader applied that one; a change whose entry a new leader
        // overwrote was not made.
        const answerText = JSON.stringify(answer.body);
        const transient =
          answer.status === 412 &&
          (answerText.includes("RAFT_ERR_CONF_CHANGE_PENDING") || answerText.includes("RAFT_ERR_LEADERSHIP_LOST"));
        if (answer.status >= 400 && answer.status < 500 && answer.status !== 429 && !transient) {
          violations.push(`${path} ${JSON.stringify(body)} refused: ${answer.status} ${JSON.stringify(answer.body)}`);
          return null;
        }
        await sleep(250);
      }
      violations.push(`${path} ${JSON.stringify(body)} not taken within ${membershipStepWaitMs} ms`);
      return null;
    };
    /** Whether a node up that says it leads lists `id` among its voters. */
    const leaderListsVoter = async (id: string): Promise<boolean> => {
      for (const other of cluster.upIds()) {
        const answer = await call(cluster.url(other), "/v1/cluster.status", undefined, rootKey, requestTimeoutMs);
        const voters = field(answer.body, "voters");
        if (answer.status === 200 && field(answer.body, "role") === "leader")
          return Array.isArray(voters) && voters.includes(id);
      }
      return false;
    };
    /** Until a node up that leads lists `id` among its voters; the time it took, or null after membershipStepWaitMs. */
    const untilVoter = async (id: string): Promise<number | null> => {
      const addedAtMs = Date.now();
      let voter = await leaderListsVoter(id);
      while (!voter && Date.now() - addedAtMs < membershipStepWaitMs) {
        await sleep(250);
        voter = await leaderListsVoter(id);
      }
      return voter ? Date.now() - addedAtMs : null;
    };
    /** A brand-new node added, then another voter (`pickAt` of the others) removed for good; false: give up. */
    const freshChange = async (pickAt: number): Promise<boolean> => {
      const added = await cluster.addFresh();
      const others = cluster.memberIds().filter((id) => id !== added);
      const nodeId = others[Math.floor(pickAt * others.length)] ?? "n1";
      const step: MembershipStep = {
        nodeId,
        addedNodeId: added,
        removedAtIndex: null,
        addedAtIndex: null,
        voterAgainAfterMs: null,
      };
      membership.push(step);
      log(`fault: add ${added} (new), then remove ${nodeId} for good`);
      step.addedAtIndex = await membershipCall("/v1/cluster.addNode", {
        nodeId: added,
        address: await cluster.addBackAddress(added),
      });
      if (step.addedAtIndex === null) return false;
      faults["memberAdded"] = (faults["memberAdded"] ?? 0) + 1;
      step.voterAgainAfterMs = await untilVoter(added);
      if (step.voterAgainAfterMs === null) {
        violations.push(
          `${added} added at index ${step.addedAtIndex} but not a voter within ${membershipStepWaitMs} ms`,
        );
        return false;
      }
      log(`membership: ${added} a voter ${step.voterAgainAfterMs} ms after its addition`);
      step.removedAtIndex = await membershipCall("/v1/cluster.removeNode", { nodeId });
      if (step.removedAtIndex === null) return false;
      faults["memberRemoved"] = (faults["memberRemoved"] ?? 0) + 1;
      await cluster.stopRemoved(nodeId);
      return true;
    };
    const membershipWorker = async (): Promise<void> => {
      // Its own stream: which voter, when and for how long depend on the seed only.
      const random = mulberry32(options.seed ^ 0x27d4eb2f);
      const changes = options.membershipChanges ?? 0;
      const startMs = Date.now();
      // Each change starts inside its slot of the run (the first half of it), so they spread over the run.
      const slotMs = Math.max(0, options.durationMs - 3_000) / Math.max(1, changes);
      for (let i = 0; i < changes; i++) {
        const startAtMs = startMs + slotMs * (i + random() * 0.5);
        const holdMs = 500 + random() * 2_000;
        const pickAt = random();
        await sleep(Math.max(0, startAtMs - Date.now()));
        if (options.membershipFresh === true) {
          if (!(await freshChange(pickAt))) return;
          continue;
        }
        const members = cluster.memberIds();
        const nodeId = members[Math.floor(pickAt * members.length)] ?? "n1";
        const step: MembershipStep = { nodeId, removedAtIndex: null, addedAtIndex: null, voterAgainAfterMs: null };
        membership.push(step);
        log(`fault: remove ${nodeId} from the cluster, add it back after ${Math.round(holdMs)} ms`);
        step.removedAtIndex = await membershipCall("/v1/cluster.removeNode", { nodeId });
        if (step.removedAtIndex === null) return;
        faults["memberRemoved"] = (faults["memberRemoved"] ?? 0) + 1;
        await cluster.stopRemoved(nodeId);
        await sleep(holdMs);
        cluster.startRemoved(nodeId);
        const address = await cluster.addBackAddress(nodeId);
        step.addedAtIndex = await membershipCall("/v1/cluster.addNode", { nodeId, address });
        if (step.addedAtIndex === null) return;
        faults["memberAdded"] = (faults["memberAdded"] ?? 0) + 1;
        const addedAtMs = Date.now();
        let voter = await leaderListsVoter(nodeId);
        while (!voter && Date.now() - addedAtMs < membershipStepWaitMs) {
          await sleep(250);
          voter = await leaderListsVoter(nodeId);
        }
        if (voter) step.voterAgainAfterMs = Date.now() - addedAtMs;
        else {
          violations.push(
            `${nodeId} added back at index ${step.addedAtIndex} but not a voter within ${membershipStepWaitMs} ms`,
          );
          return;
        }
        log(`membership: ${nodeId} a voter again ${step.voterAgainAfterMs} ms after its addition`);
      }
    };

    const powerCutWorker = async (): Promise<void> => {
      const cuts = options.powerCuts ?? 0;
      const startMs = Date.now();
      const slotMs = Math.max(0, options.durationMs - 3_000) / Math.max(1, cuts);
      for (let i = 0; i < cuts; i++) {
        const startAtMs = startMs + slotMs * (i + powerCutRandom() * 0.5);
        const holdMs = 500 + powerCutRandom() * 2_000;
        await sleep(Math.max(0, startAtMs - Date.now()));
        // A node removed or already down has no power to cut: counted as not done.
        if (cluster.state(powerCutNode) !== "up") {
          log(`power cut of ${powerCutNode} skipped: it is ${cluster.state(powerCutNode)}`);
          continue;
        }
        const plan = await cluster.powerCut(powerCutNode);
        if (plan === null) continue;
        faults["powerCut"] = (faults["powerCut"] ?? 0) + 1;
        const step: PowerCutStep = {
          nodeId: powerCutNode,
          filesCut: plan.truncations.length,
          bytesDropped: plan.truncations.reduce((sum, t) => sum + t.fromBytes - t.toBytes, 0),
          filesKeptWhole: plan.keptWhole.length,
        };
        powerCuts.push(step);
        log(
          `fault: power cut ${powerCutNode} for ${Math.round(holdMs)} ms: ${step.bytesDropped} unsynced bytes dropped from ${step.filesCut} files` +
            ` (${plan.truncations.map((t) => `${relative(dir, t.path)} ${t.fromBytes}->${t.toBytes}`).join(", ")})` +
            (plan.keptWhole.length === 0 ? "" : `, kept whole (positional writes): ${plan.keptWhole.join(", ")}`),
        );
        await sleep(holdMs);
        cluster.restart(powerCutNode);
      }
    };

    await Promise.all([
      powerCutWorker(),
      membershipWorker(),
      verifyWorker(),
      verifyWorker(),
      topUpWorker(),
      limitWorker(),
      limitWorker(),
      registerWorker(1),
      registerWorker(2),
      setWorker(3),
      setWorker(4),
      faultWorker(),
    ]);
    log("workload done; healing");
    cluster.healAll();

    // Convergence: every node serves and reports the same applied index, and the same register values.
    const convergeDeadline = Date.now() + 60_000;
    while (Date.now() < convergeDeadline && !report.converged) {
      await sleep(500);
      const statuses = await Promise.all(
        cluster
          .memberIds()
          .map((id) => call(cluster.url(id), "/v1/cluster.status", undefined, rootKey, requestTimeoutMs)),
      );
      if (!statuses.every((s) => s.status === 200)) continue;
      const applied = statuses.map((s) => Number(field(s.body, "appliedIndex")));
      const commits = statuses.map((s) => Number(field(s.body, "commitIndex")));
      if (new Set(applied).size !== 1 || applied[0] !== Math.max(...commits)) continue;
      // Every member is a voter on every member (membership changes undone, or new nodes in).
      const everyVoter = statuses.every((s) => {
        const voters = field(s.body, "voters");
        return Array.isArray(voters) && cluster.memberIds().every((id) => voters.includes(id));
      });
      if (!everyVoter) continue;
      const views = await Promise.all(
        cluster
          .memberIds()
          .map(async (id) =>
            (
              await Promise.all(
                registers.map((k) =>
                  call(cluster.url(id), `/v1/keys.getKey?keyId=${k}`, undefined, rootKey, requestTimeoutMs),
                ),
              )
            ).map((a) => JSON.stringify(field(a.body, "name"))),
          ),
      );
      report.converged = views.every((v) => JSON.stringify(v) === JSON.stringify(views[0]));
    }
    if (!report.converged) violations.push("nodes did not converge within 60 s after healing");

    // Final reads on every node join the histories: after healing, nothing acknowledged may be missing.
    for (const id of cluster.memberIds()) {
      for (const keyId of registers) {
        const callMs = Date.now();
        const answer = await call(
          cluster.url(id),
          `/v1/keys.getKey?keyId=${keyId}`,
          undefined,
          rootKey,
          requestTimeoutMs,
        );
        if (answer.status === 200)
          registerHistory.push({
            key: keyId,
            clientId: 100,
            input: { op: "read" },
            output: { value: (field(answer.body, "name") as string | undefined) ?? null },
            callMs,
            returnMs: Date.now(),
          });
      }
      const callMs = Date.now();
      const answer = await call(
        cluster.url(id),
        `/v1/keys.getKey?keyId=${setKeyId}`,
        undefined,
        rootKey,
        requestTimeoutMs,
      );
      const permissions = field(answer.body, "permissions");
      const values = Array.isArray(permissions) ? permissions.map(String) : [];
      if (answer.status === 200) {
        setHistory.push({
          key: "set",
          clientId: 100,
          input: { op: "read" },
          output: { values },
          callMs,
          returnMs: Date.now(),
        });
        for (const add of acknowledgedAdds)
          if (!values.includes(add)) violations.push(`acknowledged add ${add} missing on ${id} after healing`);
      }
    }

    const register = checkLinearizable(
      registerModel("r0"),
      resolveUnknownWrites(
        registerHistory,
        (input) => input.op === "write",
        (value, output) => "value" in output && output.value === value,
      ),
    );
    const set = checkLinearizable(
      setModel(),
      resolveUnknownWrites(
        setHistory,
        (input) => input.op === "add",
        (value, output) => "values" in output && output.values.includes(value),
      ),
    );
    report.linearizability = { register: register.result, set: set.result };
    if (register.result === "illegal")
      violations.push(
        `register history not linearizable on ${register.key}: ${register.longestPrefix.slice(-5).join(" ")}`,
      );
    if (set.result === "illegal")
      violations.push(`set history not linearizable: ${set.longestPrefix.slice(-5).join(" ")}`);
    if (register.result === "unknown") violations.push(`register history undecided: ${register.reason}`);
    if (set.result === "unknown") violations.push(`set history undecided: ${set.reason}`);

    for (const keyId of creditKeyIds) {
      // Verifications spend from per-node credit leases; until a lease is settled its spent credits
      // still count in `remaining` (docs/counters.md). Read again (bounded) until the leases settle.
      const read = async () => {
        const answer = await call(anyUp(), `/v1/keys.getKey?keyId=${keyId}`, undefined, rootKey, requestTimeoutMs);
        const remaining = field(answer.body, "remaining");
        return {
          keyId,
          supplied: supplied.get(keyId) ?? creditsPerKey,
          admittedCost: admitted.get(keyId) ?? 0,
          finalRemaining: typeof remaining === "number" ? remaining : null,
        };
      };
      let outcome = await read();
      for (
        let waitedMs = 0;
        creditViolations([outcome]).length > 0 && waitedMs < creditLeaseSettleWaitMs;
        waitedMs += 250
      ) {
        await new Promise((resolve) => setTimeout(resolve, 250));
        outcome = await read();
      }
      report.credits.push(outcome);
    }
    violations.push(...creditViolations(report.credits));
    const peak = certainWindowPeak(limitAdmissions, limitDurationMs);
    report.ratelimit.certainWindowMax = peak.count;
    report.ratelimit.peakAtMs = peak.fromMs === null ? null : Math.round(peak.fromMs - campaignStartMs);
    if (report.ratelimit.certainWindowMax > report.ratelimit.bound) {
      violations.push(
        `rate limit admitted ${report.ratelimit.certainWindowMax} within one window of ${limitDurationMs} ms from +${report.ratelimit.peakAtMs} ms, bound ${report.ratelimit.bound}`,
      );
    }
    return report;
  } finally {
    await cluster.stop();
    if (options.keepData !== true && violations.length === 0) rmSync(dir, { recursive: true, force: true });
  }
}
