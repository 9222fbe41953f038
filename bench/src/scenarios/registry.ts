import type { ScenarioName } from "../args.js";
import { adminScenario } from "./admin.js";
import { clusterScenario } from "./cluster.js";
import { countersScenario } from "./counters.js";
import { NotAvailableError } from "../errors.js";
import { mixedScenario } from "./mixed.js";
import { raftScenario } from "./raft-runner.js";
import { ratelimitScenario } from "./ratelimit.js";
import { scaleScenario } from "./scale.js";
import type { Scenario } from "./types.js";
import { verifyScenario } from "./verify.js";

function notYetAvailable(name: string, what: string): Scenario {
  return {
    description: `${what} (not yet available)`,
    check: async () => {
      throw new NotAvailableError(`the ${name} scenario is not yet available: it comes with the ${what} issue`);
    },
    prepare: async () => {
      throw new NotAvailableError(`the ${name} scenario is not yet available: it comes with the ${what} issue`);
    },
  };
}

export const scenarios: Record<ScenarioName, Scenario> = {
  verify: verifyScenario,
  ratelimit: ratelimitScenario,
  admin: adminScenario,
  mixed: mixedScenario,
  raft: raftScenario,
  cluster: clusterScenario,
  counters: countersScenario,
  scale: scaleScenario,
};
