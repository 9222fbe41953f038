// Minimal line charts as inline SVG (no scripts, no CDN): the HTML report opens anywhere, offline.

export interface Series {
  name: string;
  points: ReadonlyArray<readonly [number, number]>;
}

export interface ChartOptions {
  title: string;
  xLabel: string;
  yLabel: string;
  /** Tick positions on the x axis with their labels (default: 5 even ticks). */
  xTicks?: ReadonlyArray<readonly [number, string]>;
  width?: number;
  height?: number;
}

const palette = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"];

export function lineChart(series: readonly Series[], options: ChartOptions): string {
  const width = options.width ?? 760,
    height = options.height ?? 360;
  const margin = { left: 70, right: 40, top: 36, bottom: 80 };
  const plotW = width - margin.left - margin.right,
    plotH = height - margin.top - margin.bottom;
  const all = series.flatMap((s) => s.points);
  const xs = all.map(([x]) => x),
    ys = all.map(([, y]) => y);
  const xMin = xs.length === 0 ? 0 : Math.min(...xs),
    xMax = xs.length === 0 ? 1 : Math.max(...xs);
  const yMax = niceCeiling(ys.length === 0 ? 1 : Math.max(...ys));
  const sx = (x: number): number => margin.left + (xMax === xMin ? plotW / 2 : ((x - xMin) / (xMax - xMin)) * plotW);
  const sy = (y: number): number => margin.top + plotH - (yMax === 0 ? 0 : (y / yMax) * plotH);
  const parts: string[] = [];
  parts.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" ` +
      `viewBox="0 0 ${width} ${height}" role="img" aria-label="${escapeXml(options.title)}">`,
  );
  parts.push(
    `<text x="${width / 2}" y="20" text-anchor="middle" font-size="15" font-weight="bold">${escapeXml(options.title)}</text>`,
  );
  for (let i = 0; i <= 5; i++) {
    const y = (yMax / 5) * i;
    parts.push(
      `<line x1="${margin.left}" x2="${margin.left + plotW}" y1="${fmt(sy(y))}" y2="${fmt(sy(y))}" stroke="#ddd"/>`,
    );
    parts.push(
      `<text x="${margin.left - 6}" y="${fmt(sy(y) + 4)}" text-anchor="end" font-size="11">${escapeXml(formatNumber(y))}</text>`,
    );
  }
  const xTicks =
    options.xTicks ??
    Array.from({ length: 6 }, (_, i) => {
      const x = xMin + ((xMax - xMin) / 5) * i;
      return [x, formatNumber(x)] as const;
    });
  for (const [x, label] of xTicks) {
    parts.push(
      `<line x1="${fmt(sx(x))}" x2="${fmt(sx(x))}" y1="${margin.top}" y2="${margin.top + plotH}" stroke="#eee"/>`,
    );
    parts.push(
      `<text x="${fmt(sx(x))}" y="${margin.top + plotH + 16}" text-anchor="middle" font-size="11">${escapeXml(label)}</text>`,
    );
  }
  parts.push(
    `<rect x="${margin.left}" y="${margin.top}" width="${plotW}" height="${plotH}" fill="none" stroke="#999"/>`,
  );
  parts.push(
    `<text x="${margin.left + plotW / 2}" y="${margin.top + plotH + 34}" text-anchor="middle" font-size="12">${escapeXml(options.xLabel)}</text>`,
  );
  parts.push(
    `<text transform="translate(16 ${margin.top + plotH / 2}) rotate(-90)" text-anchor="middle" font-size="12">${escapeXml(options.yLabel)}</text>`,
  );
  series.forEach((s, i) => {
    const color = palette[i % palette.length] as string;
    const path = s.points.map(([x, y]) => `${fmt(sx(x))},${fmt(sy(y))}`).join(" ");
    if (s.points.length > 0) {
      parts.push(
        `<polyline fill="none" stroke="${color}" stroke-width="2" points="${path}"><title>${escapeXml(s.name)}</title></polyline>`,
      );
    }
    const legendX = margin.left + (i % 3) * (plotW / 3),
      legendY = margin.top + plotH + 52 + Math.floor(i / 3) * 16;
    parts.push(`<rect x="${fmt(legendX)}" y="${legendY - 9}" width="12" height="10" fill="${color}"/>`);
    parts.push(`<text x="${fmt(legendX + 16)}" y="${legendY}" font-size="11">${escapeXml(s.name)}</text>`);
  });
  parts.push("</svg>");
  return parts.join("");
}

/** A round number at or above value (1, 1.5, 2, 2.5, 3, 4, 5, 6, 8 × 10^k), so axis labels are readable. */
export function niceCeiling(value: number): number {
  if (!(value > 0)) return 1;
  const power = Math.pow(10, Math.floor(Math.log10(value)));
  for (const step of [1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10]) if (step * power >= value) return step * power;
  return 10 * power;
}

export function escapeXml(text: string): string {
  return text
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&#39;");
}

function formatNumber(value: number): string {
  if (Math.abs(value) >= 1000) return Math.round(value).toLocaleString("en-US");
  return String(Math.round(value * 100) / 100);
}

function fmt(value: number): string {
  return value.toFixed(1);
}
