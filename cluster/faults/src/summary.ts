// The campaign's report as a table for a person (the CLI prints it before the JSON line).
import type { CampaignReport } from "./campaign.js";

function rows(title: string, entries: readonly (readonly [string, string | number])[]): string[] {
  const width = Math.max(...entries.map(([name]) => name.length));
  return [title, ...entries.map(([name, value]) => `  ${name.padEnd(width)}  ${value}`)];
}

export function summaryTable(report: CampaignReport): string {
  const { operations: o, ratelimit: r } = report;
  const lines = [
    ...rows(`seed ${report.seed}: ${report.nodes} nodes, ${report.durationMs} ms`, [
      ["violations", report.violations.length],
      ["converged", String(report.converged)],
      ["linearizable", `register ${report.linearizability.register}, set ${report.linearizability.set}`],
    ]),
    ...rows(
      "faults injected",
      Object.entries(report.faults).map(([kind, count]) => [kind, count]),
    ),
    ...rows(
      "membership changes",
      report.membership.length === 0
        ? [["(none)", ""]]
        : report.membership.map((step, i) => [
            `${i + 1}. ${step.nodeId}`,
            (step.addedNodeId === undefined
              ? `removed at ${step.removedAtIndex ?? "-"}, added back at ${step.addedAtIndex ?? "-"}, `
              : `${step.addedNodeId} (new) added at ${step.addedAtIndex ?? "-"}, then ${step.nodeId} removed for good at ${step.removedAtIndex ?? "-"}, `) +
              `${step.addedNodeId === undefined ? "voter again" : "a voter"} after ${step.voterAgainAfterMs === null ? "-" : `${step.voterAgainAfterMs} ms`}`,
          ]),
    ),
    ...(report.membership.length === 0
      ? []
      : [
          `  connections to added-back nodes: ${report.addedBackConnections.identified} identified, ` +
            `${report.addedBackConnections.unidentified} dropped unidentified`,
        ]),
    ...rows(
      "power cuts",
      report.powerCuts.length === 0
        ? [["(none)", ""]]
        : report.powerCuts.map((step, i) => [
            `${i + 1}. ${step.nodeId}`,
            `${step.bytesDropped} unsynced bytes dropped from ${step.filesCut} files, ${step.filesKeptWhole} kept whole`,
          ]),
    ),
    ...rows("workload", [
      ["verifications (valid)", `${o["verify"] ?? 0} (${o["verifyValid"] ?? 0})`],
      ["admin writes (acked, unknown)", `${o["write"] ?? 0} (${o["writeAcked"] ?? 0}, ${o["writeUnknown"] ?? 0})`],
      ["linearizable reads", o["read"] ?? 0],
      [
        "rate-limit calls (admitted, bursts)",
        `${o["limit"] ?? 0} (${o["limitSuccess"] ?? 0}, ${o["limitBurst"] ?? 0})`,
      ],
      [
        "max admitted in one window",
        `${r.certainWindowMax} (limit ${r.limit} per ${r.durationMs} ms, bound ${r.bound}; first at +${r.peakAtMs ?? "-"} ms)`,
      ],
    ]),
    ...rows(
      "credits (admitted + remaining <= supplied)",
      report.credits.map((c) => [
        c.keyId,
        `admitted ${c.admittedCost} + remaining ${c.finalRemaining ?? "?"} / supplied ${c.supplied}`,
      ]),
    ),
  ];
  return lines.join("\n");
}
