// verify: keys.verifyKey against a node holding --keys keys, in four phases: plain, with a rate
// limit, with credits, and with a permission query. The keys are split into four equal groups,
// one per phase, so that each phase verifies keys configured for it.
import type { PhaseResult } from "../load/run-load.js";
import { createApi, createKeys } from "../seed.js";
import { measureCoreDecisions } from "./core-decisions.js";
import { deploymentPhase, deploymentScenario } from "./deployment-scenario.js";
import { PhaseWriteCounter, scrapeTargets } from "./disk-writes.js";
import { requestSpec, resultOf } from "./phase.js";
import { ratio } from "../report/summary.js";

/** Per-key limit of the rate-limit group: generous, so most verifications are admitted. */
export const verifyRatelimit = { limit: 1_000, duration: 1_000 };
/** Credits of the credits group: enough never to run out during a run. */
export const verifyCredits = 1_000_000_000;
export const verifyPermissions = ["bench.read", "bench.write"];

export const verifyScenario = deploymentScenario(
  "keys.verifyKey: plain, with a rate limit, with credits, with a permission query",
  async ({ context, deployment, seedTarget }) => {
    const { options } = context;
    const apiId = await createApi(seedTarget, `bench-verify-${Date.now()}`);
    const groupSize = Math.max(1, Math.floor(options.keys / 4));
    const plain = await createKeys(seedTarget, apiId, groupSize, "plain", (i) => ({
      prefix: "bench",
      name: `plain-${i}`,
    }));
    const limited = await createKeys(seedTarget, apiId, groupSize, "rate-limited", (i) => ({
      prefix: "bench",
      name: `limited-${i}`,
      ratelimit: { async: false, ...verifyRatelimit },
    }));
    const credited = await createKeys(seedTarget, apiId, groupSize, "credits", (i) => ({
      prefix: "bench",
      name: `credits-${i}`,
      remaining: verifyCredits,
    }));
    const permitted = await createKeys(seedTarget, apiId, options.keys - 3 * groupSize, "permissions", (i) => ({
      prefix: "bench",
      name: `permissions-${i}`,
      permissions: verifyPermissions,
    }));
    context.log(`seeded api ${apiId} with ${options.keys} keys (4 groups)`);
    const pool = (keys: ReadonlyArray<{ key: string }>): string[] => keys.map((seeded) => seeded.key);
    const body = (extra: string): string => `{"apiId":${JSON.stringify(apiId)},"key":{{pick}}${extra}}`;
    // The node's database writes per verification, per phase (only a node the harness started:
    // a --target deployment may serve its metrics elsewhere or behind a token).
    const scrape = deployment.local ? scrapeTargets(deployment.targets) : async () => null;
    const writes = new Map<string, PhaseWriteCounter>();
    const phase = (label: string, keys: string[], extra: string) => {
      const counter = new PhaseWriteCounter(scrape);
      writes.set(label, counter);
      return {
        ...deploymentPhase(deployment, label, [
          requestSpec(options, {
            name: "verifyKey",
            path: "/v1/keys.verifyKey",
            bodyTemplate: body(extra),
            pool: keys,
            okMarker: '"valid":true',
          }),
        ]),
        around: counter,
      };
    };
    return {
      phases: [
        phase("verify plain", pool(plain), ""),
        phase("verify ratelimit", pool(limited), ""),
        phase("verify credits", pool(credited), `,"remaining":{"cost":1}`),
        phase(
          "verify permissions",
          pool(permitted),
          `,"authorization":{"permissions":{"and":${JSON.stringify(verifyPermissions)}}}`,
        ),
      ],
      finish: async (results) => {
        const [plainPhase, ratelimitPhase, creditsPhase, permissionsPhase] = [
          "verify plain",
          "verify ratelimit",
          "verify credits",
          "verify permissions",
        ].map((label) => resultOf(results, label)) as [PhaseResult, PhaseResult, PhaseResult, PhaseResult];
        context.progress("measuring core verification decisions in process");
        const core = await measureCoreDecisions(options.keys, options.distribution, options.zipfExponent);
        const writesOf = (label: string) => ({ ...writes.get(label)!.result() });
        return {
          figures: {
            verifyRps: plainPhase.rps,
            verifyRatelimitRps: ratelimitPhase.rps,
            verifyCreditsRps: creditsPhase.rps,
            verifyPermissionsRps: permissionsPhase.rps,
            creditsRatio: ratio(creditsPhase.rps, plainPhase.rps),
            diskWritesPerVerification: {
              plain: writesOf("verify plain"),
              ratelimit: writesOf("verify ratelimit"),
              credits: writesOf("verify credits"),
              permissions: writesOf("verify permissions"),
            },
            p50Ms: plainPhase.latency.p50Ms,
            p99Ms: plainPhase.latency.p99Ms,
            coreDecisionsPerSec: core.decisionsPerSec,
            coreRatelimitDecisionsPerSec: core.ratelimitDecisionsPerSec,
          },
          throughputRps: plainPhase.rps,
          throughputCpuCores: plainPhase.targetCpuCores,
          phases: [plainPhase, ratelimitPhase, creditsPhase, permissionsPhase],
          notes: core.note === null ? [] : [core.note],
        };
      },
    };
  },
);
