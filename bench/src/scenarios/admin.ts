// admin: admin writes (keys.updateKey and keys.setPermissions, half each) over --keys keys. Every
// write is a durable command, so this measures the command log (fsync, group commit) through HTTP.
import { deploymentPhase, deploymentScenario, onePhaseOutcome, seedApiWithKeys } from "./deployment-scenario.js";
import { requestSpec, resultOf } from "./phase.js";

/** updateKey: changes name and meta every time, so that no write is a no-op. */
export const updateKeyTemplate = `{"keyId":{{pick}},"name":"bench-{{seq}}","meta":{"seq":{{seq}}}}`;
/** setPermissions: cycles through 8 permission names, so the set of permissions stays bounded. */
export const setPermissionsTemplate = `{"keyId":{{pick}},"permissions":[{"name":"bench.perm.{{seq8}}","create":true},{"name":"bench.read","create":true}]}`;

export const adminScenario = deploymentScenario("admin writes: keys.updateKey and keys.setPermissions", async (run) => {
  const { options } = run.context;
  const { keys } = await seedApiWithKeys(run, "admin");
  const keyIds = keys.map((seeded) => seeded.keyId);
  const rootKey = run.deployment.rootKey;
  return {
    phases: [
      deploymentPhase(run.deployment, "admin", [
        requestSpec(options, {
          name: "updateKey",
          path: "/v1/keys.updateKey",
          bodyTemplate: updateKeyTemplate,
          pool: keyIds,
          rootKey,
        }),
        requestSpec(options, {
          name: "setPermissions",
          path: "/v1/keys.setPermissions",
          bodyTemplate: setPermissionsTemplate,
          pool: keyIds,
          rootKey,
        }),
      ]),
    ],
    finish: async (results) => {
      const phase = resultOf(results, "admin");
      const update = phase.perRequest["updateKey"];
      const permissions = phase.perRequest["setPermissions"];
      return onePhaseOutcome(phase, {
        adminRps: phase.rps,
        updateKeyRps: update?.rps ?? null,
        setPermissionsRps: permissions?.rps ?? null,
        p50Ms: phase.latency.p50Ms,
        p99Ms: phase.latency.p99Ms,
        updateKeyP99Ms: update?.latency.p99Ms ?? null,
        setPermissionsP99Ms: permissions?.latency.p99Ms ?? null,
      });
    },
  };
});
