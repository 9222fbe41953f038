// Analytics survive a graceful restart: the series are written to `<dataDir>/analytics.json`
// on shutdown (write to a temporary file, then rename, so a crash never leaves half a file) and
// read back on start. A crash loses the analytics since the last save (they are not replicated).

import { readFile, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { VerificationSeries } from "@keyraft/core";
import type { VerificationRecorder } from "./recorder.js";

export const analyticsFileName = "analytics.json";
const fileVersion = 1;

interface AnalyticsFile {
  version: number;
  series: VerificationSeries[];
}

export async function saveAnalytics(recorder: VerificationRecorder, dataDir: string): Promise<number> {
  const series = recorder.snapshot();
  const path = join(dataDir, analyticsFileName);
  const file: AnalyticsFile = { version: fileVersion, series };
  await writeFile(`${path}.tmp`, JSON.stringify(file));
  await rename(`${path}.tmp`, path);
  return series.length;
}

function isSeries(value: unknown): value is VerificationSeries {
  if (typeof value !== "object" || value === null) return false;
  const series = value as Partial<VerificationSeries>;
  return (
    typeof series.hourMs === "number" &&
    typeof series.keyId === "string" &&
    typeof series.apiId === "string" &&
    Array.isArray(series.tags) &&
    typeof series.counts === "object" &&
    series.counts !== null
  );
}

/** Loads saved series into `recorder`; returns how many (0 when there is no file). */
export async function loadAnalytics(recorder: VerificationRecorder, dataDir: string): Promise<number> {
  let text: string;
  try {
    text = await readFile(join(dataDir, analyticsFileName), "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return 0;
    throw error;
  }
  const file = JSON.parse(text) as Partial<AnalyticsFile>;
  if (file.version !== fileVersion || !Array.isArray(file.series))
    throw new Error(`${analyticsFileName}: unknown format`);
  const series = file.series.filter(isSeries);
  recorder.restore(series);
  return series.length;
}
