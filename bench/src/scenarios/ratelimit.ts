// ratelimit: ratelimits.limit over --keys identifiers in one namespace that holds overrides
// (exact ones and wildcards), so that every call also resolves its override.
import { setOverrides, touchNamespace } from "../seed.js";
import { deploymentPhase, deploymentScenario, onePhaseOutcome } from "./deployment-scenario.js";
import { requestSpec, resultOf } from "./phase.js";

export const ratelimitRequest = { limit: 1_000, duration: 10_000 };
/** Exact overrides: every this-many-th identifier gets one. */
const exactOverrideEvery = 100;

export const ratelimitScenario = deploymentScenario(
  "ratelimits.limit over many identifiers, with exact and wildcard overrides",
  async ({ context, deployment, seedTarget }) => {
    const { options } = context;
    const namespace = `bench-${Date.now()}`;
    await touchNamespace(seedTarget, namespace);
    const identifiers = Array.from({ length: options.keys }, (_, i) => `user_${i}`);
    const overrides = identifiers
      .filter((_, i) => i % exactOverrideEvery === 0)
      .map((identifier) => ({ identifier, limit: 1_000_000, duration: 60_000 }));
    // Wildcards: every identifier starting with user_1 or user_2 (about a fifth of them) matches one.
    overrides.push(
      { identifier: "user_1*", limit: 500, duration: 10_000 },
      { identifier: "user_2*", limit: 2_000, duration: 10_000 },
    );
    await setOverrides(seedTarget, namespace, overrides);
    context.log(
      `seeded namespace ${namespace} with ${overrides.length} overrides over ${identifiers.length} identifiers`,
    );
    const bodyTemplate =
      `{"namespace":${JSON.stringify(namespace)},"identifier":{{pick}},` +
      `"limit":${ratelimitRequest.limit},"duration":${ratelimitRequest.duration}}`;
    return {
      phases: [
        deploymentPhase(deployment, "ratelimit", [
          requestSpec(options, {
            name: "limit",
            path: "/v1/ratelimits.limit",
            bodyTemplate,
            pool: identifiers,
            rootKey: deployment.rootKey,
            okMarker: '"success":true',
          }),
        ]),
      ],
      finish: async (results) => {
        const phase = resultOf(results, "ratelimit");
        const admitted = phase.perRequest["limit"]?.marked ?? null;
        return onePhaseOutcome(phase, {
          ratelimitRps: phase.rps,
          p50Ms: phase.latency.p50Ms,
          p99Ms: phase.latency.p99Ms,
          admittedFraction: admitted === null || phase.completed === 0 ? null : round(admitted / phase.completed),
          overrides: overrides.length,
        });
      },
    };
  },
);

function round(value: number): number {
  return Math.round(value * 10_000) / 10_000;
}
