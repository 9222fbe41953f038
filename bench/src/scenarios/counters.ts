// counters: hot counters on a three-node cluster (docs/counters.md, issue 5). Throughput and p99
// of verification over all three nodes, in the same run: plain keys, keys with credits, keys
// with an `async: false` limit (every key limit is one: judged by its owner), and ratelimits.limit
// with `async: true` (answered locally, reconciled by beats). Then accuracy, measured with every
// node hit at once: credits overspent (admitted spends beyond a key's credits), the overshoot of
// `async: false` limits (key limits, and ratelimits.limit) and of `async: true` limits, each the
// worst over its keys or identifiers: max(0, admitted / limit - 1).
import type { PhaseResult } from "../load/run-load.js";
import { checkBenchClusterBuild, postToMember, startBenchCluster, type BenchCluster } from "./cluster.js";
import { requestSpec, resultOf, type PhaseDefinition } from "./phase.js";
import type { PreparedScenario, Scenario, ScenarioContext } from "./types.js";

/** Keys (or identifiers) per throughput group: large budgets, so the phases measure admissions. */
const throughputKeys = 200;
const hugeCredits = 1_000_000_000;
const hugeLimit = { limit: 1_000_000, duration: 60_000 };
/** Accuracy: keys with this many credits, each verified `accuracyHitsFactor` x as often, from every node at once. */
const accuracyKeys = 20;
const accuracyCredits = 100;
const accuracySyncLimit = 100;
const accuracyHitsFactor = 3;
/** Async accuracy: identifiers with this limit per window, driven at a steady rate from all nodes. */
const accuracyAsyncIdentifiers = 20;
const accuracyAsyncLimit = 1000;
const accuracyWindowMs = 60_000;
const accuracyConcurrencyPerNode = 16;
/**
 * Async bursts: each a fresh identifier with this limit per window, hit by `size` calls sent at
 * even instants over `spreadMs`, round-robin over the nodes (open loop: no call waits for another).
 */
const burstAsyncLimit = 50;
const burstShapes = [
  { size: 200, spreadMs: 125 },
  { size: 60, spreadMs: 0 },
  { size: 400, spreadMs: 500 },
  { size: 1000, spreadMs: 250 },
] as const;

type Member = BenchCluster["members"][number];

export const countersScenario: Scenario = {
  description:
    "three-node cluster: verification plain, with credits, with an async:false limit, ratelimits.limit async:true; credit and limit accuracy",
  check: checkBenchClusterBuild,
  prepare: async (context) => prepareCounters(context),
};

async function prepareCounters(context: ScenarioContext): Promise<PreparedScenario> {
  const { options, log } = context;
  const cluster = await startBenchCluster(log);
  try {
    const { apiId, leader } = cluster;
    const create = async (count: number, what: string, body: Record<string, unknown>) => {
      const keys: string[] = [];
      for (let i = 0; i < count; i++) {
        const created = await postToMember(leader, "/v1/keys.createKey", { apiId, ...body }, true);
        if (created.status !== 200)
          throw new Error(`createKey (${what}): ${created.status} ${JSON.stringify(created.body)}`);
        keys.push(created.body.key as string);
      }
      log(`counters: ${count} ${what} keys`);
      return keys;
    };
    const credited = await create(throughputKeys, "credits", { remaining: hugeCredits });
    const limited = await create(throughputKeys, "async:false limit", { ratelimit: { async: false, ...hugeLimit } });
    const accuracyCredited = await create(accuracyKeys, "accuracy credits", { remaining: accuracyCredits });
    const accuracyLimited = await create(accuracyKeys, "accuracy limit", {
      ratelimit: { async: false, limit: accuracySyncLimit, duration: accuracyWindowMs },
    });
    await waitEverywhere(
      cluster,
      [credited, limited, accuracyCredited, accuracyLimited].map((keys) => keys[keys.length - 1]!),
    );
    const identifiers = Array.from({ length: throughputKeys }, (_, i) => `user_${i}`);
    const verifyBody = (extra: string) => `{"key":{{pick}}${extra}}`;
    const phase = (label: string, pool: readonly string[], extra: string): PhaseDefinition => ({
      label,
      targets: cluster.targets,
      cpuSeconds: () => null,
      requests: [
        requestSpec(options, {
          name: "verifyKey",
          path: "/v1/keys.verifyKey",
          bodyTemplate: verifyBody(extra),
          pool,
          okMarker: '"valid":true',
        }),
      ],
    });
    const asyncBody = `{"namespace":"bench-async","identifier":{{pick}},"limit":${hugeLimit.limit},"duration":${hugeLimit.duration},"async":true}`;
    const labels = ["counters plain", "counters credits", "counters sync limit", "counters async limit"] as const;
    return {
      phases: [
        phase(labels[0], cluster.keys, ""),
        phase(labels[1], credited, `,"remaining":{"cost":1}`),
        phase(labels[2], limited, ""),
        {
          label: labels[3],
          targets: cluster.targets,
          cpuSeconds: () => null,
          requests: [
            requestSpec(options, {
              name: "limit",
              path: "/v1/ratelimits.limit",
              bodyTemplate: asyncBody,
              pool: identifiers,
              rootKey: cluster.rootKey,
              okMarker: '"success":true',
            }),
          ],
        },
      ],
      close: () => cluster.stop(),
      finish: async (results) => {
        const [plain, credits, sync, asyncPhase] = labels.map((label) => resultOf(results, label)) as [
          PhaseResult,
          PhaseResult,
          PhaseResult,
          PhaseResult,
        ];
        log("counters: accuracy (every node hit at once)");
        const creditsOverspent = await measureCredits(cluster, accuracyCredited);
        const syncOvershoot = await measureSyncLimit(cluster, accuracyLimited);
        const limitCallOvershoot = await measureLimitCalls(
          cluster,
          "bench-sync",
          false,
          accuracySyncLimit,
          accuracyKeys,
          accuracyHitsFactor * accuracySyncLimit,
        );
        const asyncOvershoot = await measureLimitCalls(
          cluster,
          "bench-async-accuracy",
          true,
          accuracyAsyncLimit,
          accuracyAsyncIdentifiers,
          accuracyHitsFactor * accuracyAsyncLimit,
        );
        const bursts = await measureAsyncBursts(cluster);
        const asyncBurstOvershoot = worstOvershoot(bursts, burstAsyncLimit);
        log(
          `counters: credits overspent ${creditsOverspent}; sync overshoot ${syncOvershoot} (verify), ` +
            `${limitCallOvershoot} (ratelimits.limit); async overshoot ${asyncOvershoot}; ` +
            `async burst overshoot ${asyncBurstOvershoot} (admitted ${bursts.join(", ")})`,
        );
        const p99 = (result: PhaseResult) => result.latency.p99Ms;
        return {
          figures: {
            plainRps: plain.rps,
            creditsRps: credits.rps,
            syncLimitRps: sync.rps,
            asyncLimitRps: asyncPhase.rps,
            creditsOverspent,
            syncOvershoot: Math.max(syncOvershoot, limitCallOvershoot),
            asyncOvershoot,
            asyncBurstOvershoot,
          },
          throughputRps: plain.rps,
          throughputCpuCores: null,
          phases: [plain, credits, sync, asyncPhase],
          notes: [
            `counters: p99 ms plain ${p99(plain)}, credits ${p99(credits)}, async:false limit ${p99(sync)}, async:true limit ${p99(asyncPhase)}`,
            `counters: ratios to plain: credits ${ratio(credits.rps, plain.rps)}, ` +
              `async:false limit ${ratio(sync.rps, plain.rps)}, ` +
              `async:true limit (ratelimits.limit, root-key auth) ${ratio(asyncPhase.rps, plain.rps)}`,
            `counters: accuracy: ${accuracyKeys} keys x ${accuracyCredits} credits and ` +
              `${accuracyKeys} keys x limit ${accuracySyncLimit}, each verified ${accuracyHitsFactor}x that from all nodes at once; ` +
              `async: ${accuracyAsyncIdentifiers} identifiers x limit ${accuracyAsyncLimit}, ${accuracyConcurrencyPerNode} clients per node`,
            `counters: async bursts: limit ${burstAsyncLimit} per minute, ` +
              `${burstShapes.map((b) => `${b.size} calls over ${b.spreadMs} ms`).join(", ")}, round-robin over the nodes; ` +
              `admitted ${bursts.join(", ")}`,
            "counters: key limits have no async flag (v1 stores none): the async:true figures are ratelimits.limit with async:true",
            "counters: three node processes and the load generator share this machine's cores",
          ],
        };
      },
    };
  } catch (error) {
    await cluster.stop();
    throw error;
  }
}

/** Sum over keys of the admitted spends beyond the key's credits. */
async function measureCredits(cluster: BenchCluster, keys: readonly string[]): Promise<number> {
  const admitted = await hitAll(cluster, keys, accuracyHitsFactor * accuracyCredits, (member, key) =>
    postToMember(member, "/v1/keys.verifyKey", { key, remaining: { cost: 1 } }, false).then(
      (answer) => answer.status === 200 && answer.body.valid === true,
    ),
  );
  let overspent = 0;
  for (const count of admitted) overspent += Math.max(0, count - accuracyCredits);
  return overspent;
}

async function measureSyncLimit(cluster: BenchCluster, keys: readonly string[]): Promise<number> {
  const admitted = await hitAll(cluster, keys, accuracyHitsFactor * accuracySyncLimit, (member, key) =>
    postToMember(member, "/v1/keys.verifyKey", { key }, false).then(
      (answer) => answer.status === 200 && answer.body.valid === true,
    ),
  );
  return worstOvershoot(admitted, accuracySyncLimit);
}

async function measureLimitCalls(
  cluster: BenchCluster,
  namespace: string,
  isAsync: boolean,
  limit: number,
  identifiers: number,
  hitsPerIdentifier: number,
): Promise<number> {
  const names = Array.from({ length: identifiers }, (_, i) => `acc_${i}`);
  const admitted = await hitAll(cluster, names, hitsPerIdentifier, (member, identifier) =>
    postToMember(
      member,
      "/v1/ratelimits.limit",
      { namespace, identifier, limit, duration: accuracyWindowMs, async: isAsync },
      true,
    ).then((answer) => answer.status === 200 && answer.body.success === true),
  );
  return worstOvershoot(admitted, limit);
}

/** The burst phase: the admitted count of each burst shape, each on a fresh identifier. */
async function measureAsyncBursts(cluster: BenchCluster): Promise<number[]> {
  const admitted: number[] = [];
  const runId = Date.now().toString(36);
  for (const [index, shape] of burstShapes.entries()) {
    const identifier = `burst_${runId}_${index}`;
    const startMs = Date.now();
    const answers = await Promise.all(
      Array.from({ length: shape.size }, async (_, i) => {
        const waitMs = startMs + (shape.spreadMs * i) / shape.size - Date.now();
        if (waitMs > 0) await new Promise((resolve) => setTimeout(resolve, waitMs));
        const member = cluster.members[i % cluster.members.length]!;
        return postToMember(
          member,
          "/v1/ratelimits.limit",
          {
            namespace: "bench-async-burst",
            identifier,
            limit: burstAsyncLimit,
            duration: accuracyWindowMs,
            async: true,
          },
          true,
        )
          .then((answer) => answer.status === 200 && answer.body.success === true)
          .catch(() => false);
      }),
    );
    admitted.push(answers.filter(Boolean).length);
  }
  return admitted;
}

/**
 * `hitsPerSubject` requests per subject, spread evenly over the nodes, sent by
 * accuracyConcurrencyPerNode closed-loop clients per node that pick subjects in turn (so every
 * subject is hit from every node at the same time). Returns the admitted count per subject.
 */
async function hitAll(
  cluster: BenchCluster,
  subjects: readonly string[],
  hitsPerSubject: number,
  hit: (member: Member, subject: string) => Promise<boolean>,
): Promise<number[]> {
  const admitted = subjects.map(() => 0);
  const perNode = Math.ceil((subjects.length * hitsPerSubject) / cluster.members.length);
  await Promise.all(
    cluster.members.flatMap((member, nodeIndex) => {
      let next = 0;
      return Array.from({ length: accuracyConcurrencyPerNode }, async () => {
        while (next < perNode) {
          const n = next++;
          const index = (n + nodeIndex) % subjects.length;
          if (await hit(member, subjects[index]!).catch(() => false)) admitted[index]!++;
        }
      });
    }),
  );
  return admitted;
}

function worstOvershoot(admitted: readonly number[], limit: number): number {
  let worst = 0;
  for (const count of admitted) worst = Math.max(worst, count / limit - 1);
  return Math.round(worst * 10_000) / 10_000;
}

/** Waits until every node verifies (credit and limit cost 0: pure reads) each of `keys` (the last key of each group). */
async function waitEverywhere(cluster: BenchCluster, keys: readonly string[]): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (const member of cluster.members) {
    for (const key of keys) {
      for (;;) {
        const answer = await postToMember(
          member,
          "/v1/keys.verifyKey",
          { key, remaining: { cost: 0 }, ratelimit: { cost: 0 } },
          false,
        ).catch(() => null);
        if (answer !== null && answer.status === 200 && answer.body.code !== "NOT_FOUND") break;
        if (Date.now() > deadline) throw new Error(`${member.id} does not have the seeded keys within 30 s`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
  }
}

function ratio(value: number, base: number): number | null {
  return base > 0 ? Math.round((value / base) * 1000) / 1000 : null;
}
