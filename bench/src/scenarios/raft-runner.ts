// raft: runs runRaftScenario from ./raft.js (written with the Raft package). It is loaded by a
// dynamic import so the harness builds and its other scenarios run before that file exists.
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { PreparedScenario, Scenario, ScenarioContext } from "./types.js";
import { NotAvailableError } from "../errors.js";
import type { runRaftScenario } from "./raft.js";

/** The function ./raft.ts exports. Its figures are numbers keyed by name (e.g. commitsPerSec). */
export type RunRaftScenario = (options: {
  durationS?: number;
  log: (line: string) => void;
}) => Promise<Record<string, number>>;

const raftModuleUrl = new URL("./raft.js", import.meta.url);

// The import below is dynamic (the harness ran before ./raft.ts existed); this keeps the agreed
// signature checked at compile time all the same.
type RaftSignatureCheck = typeof runRaftScenario extends RunRaftScenario ? true : never;
const raftSignatureOk: RaftSignatureCheck = true;
void raftSignatureOk;

export const raftScenario: Scenario = {
  description: "Raft replication (runRaftScenario from scenarios/raft.ts)",
  check: async () => {
    await loadRunRaftScenario();
  },
  prepare: async (context) => prepareRaft(context),
};

async function prepareRaft(context: ScenarioContext): Promise<PreparedScenario> {
  const run = await loadRunRaftScenario();
  return {
    phases: [],
    close: async () => {},
    finish: async () => {
      const figures = await run({ durationS: context.options.durationS, log: context.log });
      return { figures, throughputRps: throughputOf(figures), throughputCpuCores: null, phases: [], notes: [] };
    },
  };
}

async function loadRunRaftScenario(): Promise<RunRaftScenario> {
  if (!existsSync(fileURLToPath(raftModuleUrl))) {
    throw new NotAvailableError(
      "the raft scenario is not yet available: bench/src/scenarios/raft.ts (runRaftScenario) has not been written yet",
    );
  }
  const module = (await import(raftModuleUrl.href)) as { runRaftScenario?: unknown };
  if (typeof module.runRaftScenario !== "function") {
    throw new Error("bench/dist/scenarios/raft.js does not export a function runRaftScenario");
  }
  return module.runRaftScenario as RunRaftScenario;
}

/**
 * The figure the baseline ratios use: `rps` when the scenario names one, else its best
 * throughput, the largest figure whose name ends in Rps or PerSec (or contains PerSec followed by
 * a variant suffix, as in commitsPerSec64). Null when there is none.
 */
export function throughputOf(figures: Readonly<Record<string, number>>): number | null {
  if (typeof figures["rps"] === "number") return figures["rps"];
  const throughputs = Object.entries(figures)
    .filter(([name]) => /(Rps|PerSec)\d*$/.test(name))
    .map(([, value]) => value);
  return throughputs.length === 0 ? null : Math.max(...throughputs);
}
