// @keyraft/raft/testing: a RaftNode as a child process with a JSON-lines control channel, for
// real-process tests and the raft benchmark (bench/src/scenarios/raft.ts), and the free-port
// helper of every test, benchmark and fault harness that starts processes. Kept out of the main
// index so that a user of the package does not get a test harness with it.
export { NodeProcess, defaultNodeProcessEntry } from "./driver/process-client.js";
export { freePort } from "./driver/free-port.js";
export type { NodeProcessSpawnOptions } from "./driver/process-client.js";
export type {
  NodeProcessConfig,
  ControlRequest,
  MachineState,
  LoadResult,
  LoopDelay,
} from "./driver/process-protocol.js";
