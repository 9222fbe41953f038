// Writes a report as <dir>/<scenario>-<timestamp>.json and .html and returns both paths.
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { renderHtml } from "./html.js";
import type { Report } from "./model.js";

export async function writeReport(report: Report, dir: string): Promise<{ jsonPath: string; htmlPath: string }> {
  await mkdir(dir, { recursive: true });
  const stamp = report.startedAt.replace(/[:.]/g, "-");
  const base = join(dir, `${report.summary.scenario}-${stamp}`);
  const jsonPath = `${base}.json`,
    htmlPath = `${base}.html`;
  await writeFile(jsonPath, `${JSON.stringify(report, null, 2)}\n`);
  await writeFile(htmlPath, renderHtml(report));
  return { jsonPath, htmlPath };
}
