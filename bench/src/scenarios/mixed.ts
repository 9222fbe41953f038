// mixed: 99% verifications and 1% admin writes (updateKey) over the same keys, the shape of
// production traffic: reads must stay fast while writes go through the durable command log.
import { createApi, createKeys, type SeedTarget } from "../seed.js";
import { updateKeyTemplate } from "./admin.js";
import { checkDeployment, openDeployment } from "./deployment.js";
import { requestSpec, resultOf } from "./phase.js";
import type { PreparedScenario, Scenario, ScenarioContext } from "./types.js";

export const mixedScenario: Scenario = {
  description: "99% keys.verifyKey, 1% keys.updateKey",
  check: (context) => checkDeployment(context.options),
  prepare: async (context) => prepareMixed(context),
};

async function prepareMixed(context: ScenarioContext): Promise<PreparedScenario> {
  const { options } = context;
  const deployment = await openDeployment(options, context.log);
  try {
    const seedTarget: SeedTarget = {
      url: deployment.targets[0] as string,
      rootKey: deployment.rootKey,
      log: context.progress,
    };
    const apiId = await createApi(seedTarget, `bench-mixed-${Date.now()}`);
    const keys = await createKeys(seedTarget, apiId, options.keys, "keys", (i) => ({
      prefix: "bench",
      name: `mixed-${i}`,
    }));
    context.log(`seeded api ${apiId} with ${keys.length} keys`);
    await deployment.settle(context.log);
    const verifyTemplate = `{"apiId":${JSON.stringify(apiId)},"key":{{pick}}}`;
    return {
      phases: [
        {
          label: "mixed",
          targets: deployment.targets,
          cpuSeconds: deployment.cpuSeconds,
          requests: [
            requestSpec(options, {
              name: "verifyKey",
              weight: 99,
              path: "/v1/keys.verifyKey",
              bodyTemplate: verifyTemplate,
              pool: keys.map((seeded) => seeded.key),
              okMarker: '"valid":true',
            }),
            requestSpec(options, {
              name: "updateKey",
              weight: 1,
              path: "/v1/keys.updateKey",
              bodyTemplate: updateKeyTemplate,
              pool: keys.map((seeded) => seeded.keyId),
              rootKey: deployment.rootKey,
            }),
          ],
        },
      ],
      close: () => deployment.stop(),
      finish: async (results) => {
        const phase = resultOf(results, "mixed");
        const verify = phase.perRequest["verifyKey"];
        const update = phase.perRequest["updateKey"];
        return {
          figures: {
            mixedRps: phase.rps,
            verifyRps: verify?.rps ?? null,
            updateKeyRps: update?.rps ?? null,
            p50Ms: phase.latency.p50Ms,
            p99Ms: phase.latency.p99Ms,
            verifyP99Ms: verify?.latency.p99Ms ?? null,
            updateKeyP99Ms: update?.latency.p99Ms ?? null,
          },
          throughputRps: phase.rps,
          throughputCpuCores: phase.targetCpuCores,
          phases: [phase],
          notes: [],
        };
      },
    };
  } catch (error) {
    await deployment.stop();
    throw error;
  }
}
