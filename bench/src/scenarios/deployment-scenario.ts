// The shape shared by the scenarios that load a deployment (verify, ratelimit, admin, mixed): open
// it (--target, one local node or --cluster N), seed it, wait until the seed is visible on every
// target, run the load phases, and stop the deployment when done or when seeding fails.
import type { RequestSpec } from "../load/plan.js";
import type { PhaseResult } from "../load/run-load.js";
import { createApi, createKeys, type SeededKey, type SeedTarget } from "../seed.js";
import { checkDeployment, openDeployment, type Deployment } from "./deployment.js";
import type { PhaseDefinition } from "./phase.js";
import type { PreparedScenario, Scenario, ScenarioContext, ScenarioOutcome } from "./types.js";

/** What a deployment scenario's `seed` gets: the run's context, the deployment, where to seed. */
export interface DeploymentRun {
  context: ScenarioContext;
  deployment: Deployment;
  /** The first target (a cluster's leader when the harness started it), with the root key. */
  seedTarget: SeedTarget;
}

/**
 * A scenario on a deployment: `seed` seeds it and says which phases to run and how to turn their
 * results into figures; the deployment is settled after seeding and closed with the scenario.
 */
export function deploymentScenario(
  description: string,
  seed: (run: DeploymentRun) => Promise<Omit<PreparedScenario, "close">>,
): Scenario {
  return {
    description,
    check: (context) => checkDeployment(context.options),
    prepare: async (context) => {
      const deployment = await openDeployment(context.options, context.log);
      try {
        const seedTarget: SeedTarget = {
          url: deployment.targets[0] as string,
          rootKey: deployment.rootKey,
          log: context.progress,
        };
        const prepared = await seed({ context, deployment, seedTarget });
        await deployment.settle(context.log);
        return { ...prepared, close: () => deployment.stop() };
      } catch (error) {
        await deployment.stop();
        throw error;
      }
    },
  };
}

/** A load phase over every target of the deployment. */
export function deploymentPhase(deployment: Deployment, label: string, requests: RequestSpec[]): PhaseDefinition {
  return { label, targets: deployment.targets, cpuSeconds: deployment.cpuSeconds, requests };
}

/** The outcome of a scenario of one phase: its figures, with the phase's throughput for the baselines. */
export function onePhaseOutcome(phase: PhaseResult, figures: ScenarioOutcome["figures"]): ScenarioOutcome {
  return { figures, throughputRps: phase.rps, throughputCpuCores: phase.targetCpuCores, phases: [phase], notes: [] };
}

/** An api named after the scenario with --keys plain keys (`<scenario>-<i>`). */
export async function seedApiWithKeys(
  run: DeploymentRun,
  scenario: string,
): Promise<{ apiId: string; keys: SeededKey[] }> {
  const apiId = await createApi(run.seedTarget, `bench-${scenario}-${Date.now()}`);
  const keys = await createKeys(run.seedTarget, apiId, run.context.options.keys, "keys", (i) => ({
    prefix: "bench",
    name: `${scenario}-${i}`,
  }));
  run.context.log(`seeded api ${apiId} with ${keys.length} keys`);
  return { apiId, keys };
}
