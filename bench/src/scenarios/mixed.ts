// mixed: 99% verifications and 1% admin writes (updateKey) over the same keys, the shape of
// production traffic: reads must stay fast while writes go through the durable command log.
import { updateKeyTemplate } from "./admin.js";
import { deploymentPhase, deploymentScenario, onePhaseOutcome, seedApiWithKeys } from "./deployment-scenario.js";
import { requestSpec, resultOf } from "./phase.js";

export const mixedScenario = deploymentScenario("99% keys.verifyKey, 1% keys.updateKey", async (run) => {
  const { options } = run.context;
  const { apiId, keys } = await seedApiWithKeys(run, "mixed");
  const verifyTemplate = `{"apiId":${JSON.stringify(apiId)},"key":{{pick}}}`;
  return {
    phases: [
      deploymentPhase(run.deployment, "mixed", [
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
          rootKey: run.deployment.rootKey,
        }),
      ]),
    ],
    finish: async (results) => {
      const phase = resultOf(results, "mixed");
      const verify = phase.perRequest["verifyKey"];
      const update = phase.perRequest["updateKey"];
      return onePhaseOutcome(phase, {
        mixedRps: phase.rps,
        verifyRps: verify?.rps ?? null,
        updateKeyRps: update?.rps ?? null,
        p50Ms: phase.latency.p50Ms,
        p99Ms: phase.latency.p99Ms,
        verifyP99Ms: verify?.latency.p99Ms ?? null,
        updateKeyP99Ms: update?.latency.p99Ms ?? null,
      });
    },
  };
});
