// Verifications over time by outcome: a stacked bar chart drawn by uPlot (served from its npm
// package; the global `uPlot` comes from vendor/uPlot.iife.min.js).
import { h } from "./ui.js";

export const outcomes = [
  ["valid", "Valid", "#16a34a"],
  ["rateLimited", "Rate limited", "#f59e0b"],
  ["usageExceeded", "Usage exceeded", "#a855f7"],
  ["disabled", "Disabled", "#64748b"],
  ["expired", "Expired", "#0ea5e9"],
  ["forbidden", "Forbidden", "#ef4444"],
  ["insufficientPermissions", "Insufficient permissions", "#db2777"],
];

/** rows: analytics rows with `time` (ms) and a count per outcome; one bar per bucket of `bucketMs`. */
export function verificationsChart(rows, { fromMs, toMs, bucketMs }) {
  const times = [];
  for (let t = Math.floor(fromMs / bucketMs) * bucketMs; t <= toMs; t += bucketMs) times.push(t);
  const byTime = new Map(rows.map((row) => [row.time, row]));
  const present = outcomes.filter(([name]) => rows.some((row) => (row[name] ?? 0) > 0));
  const shown = present.length > 0 ? present : outcomes.slice(0, 1);
  // Stacked: each series is the sum of itself and the ones below it.
  const stacked = [];
  let below = times.map(() => 0);
  for (const [name] of shown) {
    below = times.map((t, i) => below[i] + (byTime.get(t)?.[name] ?? 0));
    stacked.push(below);
  }
  const container = h("div.chart");
  const legend = h(
    "div.chart-legend",
    {},
    shown.map(([name, label, color]) => {
      const total = rows.reduce((sum, row) => sum + (row[name] ?? 0), 0);
      return h("span", {}, h("i", { style: undefined, dataset: { color } }), `${label}: ${total}`);
    }),
  );
  for (const swatch of legend.querySelectorAll("i")) swatch.style.background = swatch.dataset.color;
  let drawnWidth = 0;
  const draw = (width) => {
    drawnWidth = width;
    const bars = globalThis.uPlot.paths.bars({ size: [0.7, 40] });
    const series = [{}];
    // Drawn top series first so lower ones paint over them (a stack).
    for (let i = shown.length - 1; i >= 0; i--) {
      const [, label, color] = shown[i];
      series.push({ label, fill: color, stroke: color, width: 0, paths: bars, points: { show: false } });
    }
    const data = [times.map((t) => t / 1000), ...stacked.slice().reverse()];
    container.replaceChildren();
    new globalThis.uPlot(
      {
        width,
        height: 220,
        legend: { show: false },
        cursor: { drag: { x: false, y: false } },
        scales: { y: { range: (_u, _min, max) => [0, Math.max(1, Math.ceil(max * 1.15))] } },
        axes: [
          { stroke: "#64748b", grid: { stroke: "#eef2f7" } },
          { stroke: "#64748b", grid: { stroke: "#eef2f7" }, size: 44 },
        ],
        series,
      },
      data,
      container,
    );
  };
  // Drawn once the container is laid out, and again when its width changes.
  new ResizeObserver(() => {
    const width = Math.floor(container.clientWidth);
    if (width > 0 && width !== drawnWidth) draw(width);
  }).observe(container);
  return h("div.chart-block", {}, container, legend);
}
