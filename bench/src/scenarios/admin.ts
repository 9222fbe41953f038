// admin: admin writes (keys.updateKey and keys.setPermissions, half each) over --keys keys. Every
// write is a durable command, so this measures the command log (fsync, group commit) through HTTP.
import { createApi, createKeys, type SeedTarget } from "../seed.js";
import { checkDeployment, openDeployment } from "./deployment.js";
import { requestSpec, resultOf } from "./phase.js";
import type { PreparedScenario, Scenario, ScenarioContext } from "./types.js";

export const adminScenario: Scenario = {
  description: "admin writes: keys.updateKey and keys.setPermissions",
  check: (context) => checkDeployment(context.options),
  prepare: async (context) => prepareAdmin(context),
};

/** updateKey: changes name and meta every time, so that no write is a no-op. */
export const updateKeyTemplate = `{"keyId":{{pick}},"name":"bench-{{seq}}","meta":{"seq":{{seq}}}}`;
/** setPermissions: cycles through 8 permission names, so the set of permissions stays bounded. */
export const setPermissionsTemplate = `{"keyId":{{pick}},"permissions":[{"name":"bench.perm.{{seq8}}","create":true},{"name":"bench.read","create":true}]}`;

async function prepareAdmin(context: ScenarioContext): Promise<PreparedScenario> {
  const { options } = context;
  const deployment = await openDeployment(options, context.log);
  try {
    const seedTarget: SeedTarget = {
      url: deployment.targets[0] as string,
      rootKey: deployment.rootKey,
      log: context.progress,
    };
    const apiId = await createApi(seedTarget, `bench-admin-${Date.now()}`);
    const keys = await createKeys(seedTarget, apiId, options.keys, "keys", (i) => ({
      prefix: "bench",
      name: `admin-${i}`,
    }));
    context.log(`seeded api ${apiId} with ${keys.length} keys`);
    await deployment.settle(context.log);
    const keyIds = keys.map((seeded) => seeded.keyId);
    return {
      phases: [
        {
          label: "admin",
          targets: deployment.targets,
          cpuSeconds: deployment.cpuSeconds,
          requests: [
            requestSpec(options, {
              name: "updateKey",
              path: "/v1/keys.updateKey",
              bodyTemplate: updateKeyTemplate,
              pool: keyIds,
              rootKey: deployment.rootKey,
            }),
            requestSpec(options, {
              name: "setPermissions",
              path: "/v1/keys.setPermissions",
              bodyTemplate: setPermissionsTemplate,
              pool: keyIds,
              rootKey: deployment.rootKey,
            }),
          ],
        },
      ],
      close: () => deployment.stop(),
      finish: async (results) => {
        const phase = resultOf(results, "admin");
        const update = phase.perRequest["updateKey"];
        const permissions = phase.perRequest["setPermissions"];
        return {
          figures: {
            adminRps: phase.rps,
            updateKeyRps: update?.rps ?? null,
            setPermissionsRps: permissions?.rps ?? null,
            p50Ms: phase.latency.p50Ms,
            p99Ms: phase.latency.p99Ms,
            updateKeyP99Ms: update?.latency.p99Ms ?? null,
            setPermissionsP99Ms: permissions?.latency.p99Ms ?? null,
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
