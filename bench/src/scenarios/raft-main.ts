// Standalone runner of the raft scenario (without the harness's baselines and reports):
//   node bench/dist/scenarios/raft-main.js [durationS]
// The last line on stdout is the JSON summary.
import { runRaftScenario } from "./raft.js";

const durationArg = process.argv[2];
const figures = await runRaftScenario({
  ...(durationArg === undefined ? {} : { durationS: Number(durationArg) }),
  log: (line) => process.stderr.write(`${line}\n`),
});
process.stdout.write(`${JSON.stringify({ scenario: "raft", ...figures })}\n`);
