// The counter simulations' own door (`@keyraft/core/sim-counters`), kept apart from core's public
// index: only their command-line entry (packages/core/cli/sim-counters.ts) uses it.
export { runCounterSimulation } from "./simulation.js";
export type { CounterSimOptions, CounterSimResult, CounterSimStats } from "./simulation.js";
export { runRateLimitSimulation } from "./ratelimit-simulation.js";
export type { RateLimitSimOptions, RateLimitSimResult, RateLimitSimStats } from "./ratelimit-simulation.js";
export { runAsyncSimulation } from "./async-simulation.js";
export type { AsyncSimOptions, AsyncSimResult, AsyncSimStats } from "./async-simulation.js";
