// The self-contained HTML report: summary, table, latency-percentile and throughput-over-time charts
// as inline SVG. No script, no external resource.
import { escapeXml, lineChart, type Series } from "./svg.js";
import { phaseRow, tableColumns } from "./table.js";
import type { MachineInfo, Report } from "./model.js";

/** x position of a percentile on a "nines" scale: 90 → 1, 99 → 2, 99.9 → 3, capped at 5 nines. */
export function ninesOf(percentile: number): number {
  const capped = Math.min(percentile, 99.999);
  return -Math.log10(1 - capped / 100);
}

export function renderHtml(report: Report): string {
  // A phase mixing request kinds (mixed, admin) also gets one latency line per kind.
  const latencySeries: Series[] = report.phases.flatMap((phase) => {
    const kinds = Object.entries(phase.perRequest);
    const parts =
      kinds.length > 1
        ? kinds.map(([name, request]) => ({ name: `${phase.label} / ${name}`, latency: request.latency }))
        : [];
    return [{ name: phase.label, latency: phase.latency }, ...parts].map(({ name, latency }) => ({
      name,
      points: latency.percentilesMs.map(([p, ms]) => [ninesOf(p), ms] as const),
    }));
  });
  const throughputSeries: Series[] = report.phases.map((phase) => ({
    name: phase.label,
    points: phase.timeline.map((point) => [point.atS, point.rps] as const),
  }));
  const ninesTicks = [
    [ninesOf(50), "50%"],
    [1, "90%"],
    [2, "99%"],
    [3, "99.9%"],
    [4, "99.99%"],
    [5, "99.999%"],
  ] as const;
  const header = tableColumns;
  const tableRows = report.phases.map(
    (phase) =>
      `<tr>${phaseRow(phase)
        .map((cell) => `<td>${escapeXml(cell)}</td>`)
        .join("")}</tr>`,
  );
  const title = `keyraft bench: ${report.summary.scenario}, ${report.startedAt}`;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeXml(title)}</title>
<style>
body{font-family:system-ui,sans-serif;margin:2em;max-width:70em;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:.25em .6em;text-align:right}
td:first-child,th:first-child{text-align:left}pre{background:#f6f6f6;padding:1em;overflow-x:auto;white-space:pre-wrap}
figure{margin:1.5em 0}
</style></head><body>
<h1>${escapeXml(title)}</h1>
<p>Machine: ${escapeXml(machineLine(report.machine))}</p>
<p>Placement: ${escapeXml(report.placement)}</p>
<h2>Summary</h2>
<pre>${escapeXml(JSON.stringify(report.summary, null, 2))}</pre>
<h2>Phases</h2>
<table><thead><tr>${header.map((cell) => `<th>${escapeXml(cell)}</th>`).join("")}</tr></thead>
<tbody>${tableRows.join("\n")}</tbody></table>
<figure>${lineChart(latencySeries, { title: "Latency by percentile", xLabel: "percentile", yLabel: "latency (ms)", xTicks: ninesTicks })}</figure>
<figure>${lineChart(throughputSeries, { title: "Throughput over time", xLabel: "seconds since measuring started", yLabel: "requests per second" })}</figure>
${report.notes.length === 0 ? "" : `<h2>Notes</h2><ul>${report.notes.map((note) => `<li>${escapeXml(note)}</li>`).join("")}</ul>`}
<h2>Options</h2>
<pre>${escapeXml(JSON.stringify(report.options, null, 2))}</pre>
</body></html>
`;
}

function machineLine(machine: MachineInfo): string {
  return (
    `${machine.cpus} × ${machine.cpuModel}, ${machine.memoryGiB} GiB, ${machine.platform}, ` +
    `Node ${machine.node}, load average ${machine.loadAverage1m}`
  );
}
