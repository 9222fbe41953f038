// @keyraft/bench public surface: the pieces a scenario written elsewhere may reuse. Named exports only.
export { ArgsError, parseArgs, scenarioNames, usage } from "./args.js";
export type { BenchOptions, Distribution, ScenarioName } from "./args.js";
export { runLoad } from "./load/run-load.js";
export type { LoadHooks, PhaseResult, RequestResult, TimelinePoint } from "./load/run-load.js";
export type { LoadPlan, RequestSpec } from "./load/plan.js";
export { newHistogram, recordUs, summarize } from "./hdr.js";
export type { Histogram, LatencySummary } from "./hdr.js";
export { indexSampler, zipfCdf } from "./zipf.js";
export { seededRandom } from "./prng.js";
export type { RunRaftScenario } from "./scenarios/raft-runner.js";
