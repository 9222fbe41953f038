// The short fault campaign of CI: three real nodes, kill -9 / SIGSTOP / partitions / link cuts and
// one power cut (a node killed and its unsynced writes dropped, when strace is there) for ~25 s of
// workload, then heal and check (credits never overspent, rate limits within their bound, no
// acknowledged write lost, register and set histories linearizable, convergence).
// One membership change (a voter removed, stopped, started again and added back) by default;
// FAULTS_MEMBERSHIP_CHANGES=n sets how many (0: none). Before the fixes of docs/counters-proofs.md
// (the fault harness), membership changes with a power cut admitted more than the limit in a window
// in 3 runs of 10.
// Needs the build (`npm test` runs `tsc -b` first); `npm run test:faults` runs the long campaign.
import { describe, expect, it } from "vitest";
import { runCampaign } from "../../cluster/faults/src/campaign.js";
import { clusterUnavailableReason, powerCutUnavailableReason } from "../../cluster/faults/src/processes.js";

const missing = clusterUnavailableReason();
// One power cut when strace can trace here (it drops the unsynced writes); none otherwise, said in the name.
const noPowerCut = powerCutUnavailableReason();
const powerCuts = noPowerCut === null ? 1 : 0;
const membershipChanges = Number(process.env["FAULTS_MEMBERSHIP_CHANGES"] ?? 1);
const seed = Number(process.env["FAULTS_SEED"] ?? 1 + Math.floor(Math.random() * 100_000));

describe("fault campaign (short)", () => {
  it.skipIf(missing !== null)(
    `seed ${seed}: no overspent credit, limits within bound, no lost write, linearizable, converged${missing === null ? "" : ` (SKIPPED: ${missing})`}${noPowerCut === null ? "" : ` (no power cut: ${noPowerCut})`}`,
    async () => {
      const lines: string[] = [];
      const nodes = 3;
      // The campaign's limit is async:false, judged by its owner across the cluster: exact, bound = the limit (factor 1).
      const report = await runCampaign({
        seed,
        durationMs: 25_000,
        nodes,
        ratelimitBoundFactor: 1,
        membershipChanges,
        powerCuts,
        log: (line) => lines.push(line),
      });
      const replay =
        `replay: FAULTS_SEED=${seed} FAULTS_MEMBERSHIP_CHANGES=${membershipChanges} npx vitest run test/faults/campaign.test.ts ` +
        `(or npm run test:faults -- --seed ${seed} --duration 25000 --membership-changes ${membershipChanges} --power-cuts ${powerCuts})`;
      const context = `${replay}\n${lines.join("\n")}\n${JSON.stringify(report)}`;
      expect(report.violations, context).toEqual([]);
      expect(report.converged, context).toBe(true);
      expect(report.linearizability, context).toEqual({ register: "ok", set: "ok" });
      // The campaign did what it claims: faults struck and every workload ran.
      expect(
        Object.values(report.faults).reduce((a, b) => a + b, 0),
        context,
      ).toBeGreaterThan(0);
      // The voter was removed, added back, and a voter again (the convergence above also needs it).
      expect(report.faults["memberRemoved"], context).toBe(membershipChanges);
      expect(report.faults["memberAdded"], context).toBe(membershipChanges);
      for (const step of report.membership) expect(step.voterAgainAfterMs, context).not.toBeNull();
      expect(report.addedBackConnections.unidentified, context).toBe(0);
      // The power cut struck unless its node was down or removed at that moment.
      expect(report.faults["powerCut"] ?? 0, context).toBe(report.powerCuts.length);
      expect(report.powerCuts.length, context).toBeLessThanOrEqual(powerCuts);
      expect(report.operations["verifyValid"], context).toBeGreaterThan(0);
      expect(report.operations["limitSuccess"], context).toBeGreaterThan(0);
      expect(report.operations["writeAcked"], context).toBeGreaterThan(0);
    },
    150_000,
  );
});
