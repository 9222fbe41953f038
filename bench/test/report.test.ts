import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { newHistogram, recordUs, summarize } from "../src/hdr.js";
import type { PhaseResult } from "../src/load/run-load.js";
import { renderHtml } from "../src/report/html.js";
import type { Report } from "../src/report/model.js";
import { buildSummary, ratio } from "../src/report/summary.js";
import { renderTable } from "../src/report/table.js";
import { errorNotes, generatorBoundNotes, lowOkNotes, noisyMachineNotes, variationNotes } from "../src/report/notes.js";
import { variationPct } from "../src/load/run-load.js";
import { writeReport } from "../src/report/write.js";
import { niceCeiling } from "../src/report/svg.js";

function phase(label: string, rps: number, latencyUs: number): PhaseResult {
  const histogram = newHistogram();
  for (let i = 0; i < 1000; i++) recordUs(histogram, latencyUs + i);
  const latency = summarize(histogram);
  return {
    label,
    measuredS: 3,
    completed: rps * 3,
    errors: 1,
    rps,
    latency,
    perRequest: { verifyKey: { completed: rps * 3, errors: 1, marked: rps * 3 - 1, rps, latency } },
    timeline: [1, 2, 3].map((atS) => ({ atS, rps: rps + atS, p99Ms: latency.p99Ms, errors: 0 })),
    rpsVariationPct: 3,
    statuses: { "200": rps * 3 - 1, "500": 1 },
    errorSamples: ["HTTP 500 from verifyKey"],
    generatorCpuCores: 0.8,
    targetCpuCores: 0.9,
  };
}

function sampleReport(): Report {
  const fastify = phase("baseline fastify", 20_000, 2_000);
  const plain = phase("verify plain", 16_000, 3_000);
  const summary = buildSummary(
    "verify",
    {
      figures: {
        verifyRps: 16_000,
        verifyRatelimitRps: 15_000,
        verifyCreditsRps: 14_000,
        verifyPermissionsRps: 13_000,
        p50Ms: 3,
        p99Ms: 4,
        coreDecisionsPerSec: 2_000_000,
      },
      throughputRps: 16_000,
      throughputCpuCores: 0.8,
      phases: [plain],
      notes: [],
    },
    { fastify, redisLimiter: null, notes: ['redis <skipped> & "quoted"'] },
  );
  return {
    summary,
    startedAt: "2026-11-22T03:00:00.000Z",
    finishedAt: "2026-11-22T03:01:00.000Z",
    options: { scenario: "verify", rootKey: null },
    placement: "generator and target on 2 CPUs",
    machine: { cpus: 2, cpuModel: "test cpu", memoryGiB: 4, platform: "linux x64", node: "v20", loadAverage1m: 0.5 },
    phases: [fastify, plain],
    notes: ['redis <skipped> & "quoted"'],
  };
}

/** Checks that every tag of an XML fragment is closed in order (the inline SVG must be well-formed). */
function expectBalancedXml(xml: string): void {
  const stack: string[] = [];
  for (const match of xml.matchAll(/<(\/?)([a-zA-Z][\w:-]*)[^>]*?(\/?)>/g)) {
    const [, closing, name, selfClosing] = match;
    if (selfClosing === "/") continue;
    if (closing === "/") expect(stack.pop()).toBe(name);
    else stack.push(name as string);
  }
  expect(stack).toEqual([]);
}

describe("summary", () => {
  it("puts verify's fixed figures first and computes ratios to each baseline", () => {
    const summary = sampleReport().summary;
    expect(Object.keys(summary).slice(0, 9)).toEqual([
      "scenario",
      "baselineRps",
      "verifyRps",
      "verifyRatelimitRps",
      "verifyCreditsRps",
      "ratio",
      "p50Ms",
      "p99Ms",
      "coreDecisionsPerSec",
    ]);
    expect(summary["baselineRps"]).toBe(20_000);
    expect(summary["ratio"]).toBe(0.8);
    expect(summary.ratios).toEqual({ fastify: 0.8, redisLimiter: null });
    // Per target core: (16,000 / 0.8) / (20,000 / 0.9) = 0.9.
    expect(summary.perCoreRatios).toEqual({ fastify: 0.9, redisLimiter: null });
    expect(summary.baselines.redisLimiter).toBeNull();
    expect(summary.baselines.fastify?.rps).toBe(20_000);
    expect(Object.keys(summary).slice(-2)).toEqual(["baselines", "ratios"]);
  });

  it("divides verification with a rate limit by the Redis limiter route's throughput (null without Redis)", () => {
    expect(sampleReport().summary["verifyRatelimitRatioToRedis"]).toBeNull();
    const redis = phase("baseline redis limiter", 10_000, 2_500);
    const summary = buildSummary(
      "verify",
      {
        figures: { verifyRps: 16_000, verifyRatelimitRps: 15_000, verifyCreditsRps: 14_000 },
        throughputRps: 16_000,
        throughputCpuCores: 0.8,
        phases: [],
        notes: [],
      },
      { fastify: null, redisLimiter: redis, notes: [] },
    );
    expect(summary["verifyRatelimitRatioToRedis"]).toBe(1.5);
    expect(summary["verifyRatelimitRps"]).toBe(15_000);
  });

  it("ratio is null without a usable denominator", () => {
    expect(ratio(10, null)).toBeNull();
    expect(ratio(10, 0)).toBeNull();
    expect(ratio(null, 5)).toBeNull();
    expect(ratio(1, 3)).toBe(0.333);
  });
});

describe("report writer", () => {
  const dirs: string[] = [];
  afterAll(async () => {
    await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
  });

  it("writes a JSON file that reads back equal and an HTML page with both charts", async () => {
    const dir = await mkdtemp(join(tmpdir(), "keyraft-bench-report-"));
    dirs.push(dir);
    const report = sampleReport();
    const { jsonPath, htmlPath } = await writeReport(report, join(dir, "nested"));
    expect(jsonPath).toMatch(/verify-2026-11-22T03-00-00-000Z\.json$/);
    expect(JSON.parse(await readFile(jsonPath, "utf8"))).toEqual(report);
    const html = await readFile(htmlPath, "utf8");
    expect(html.startsWith("<!doctype html>")).toBe(true);
    expect(html).toContain("Latency by percentile");
    expect(html).toContain("Throughput over time");
    const svgs = html.match(/<svg[\s\S]*?<\/svg>/g) ?? [];
    expect(svgs).toHaveLength(2);
    for (const svg of svgs) {
      expectBalancedXml(svg);
      expect(svg).toContain("<polyline");
    }
    expectBalancedXml(html.slice(html.indexOf("<html"), html.lastIndexOf("</html>") + 7).replace(/<meta[^>]*>/g, ""));
    // Self-contained: no script, no external resource; text is escaped.
    expect(html).not.toMatch(/<script|<link|src=/);
    expect(html).toContain("redis &lt;skipped&gt; &amp; &quot;quoted&quot;");
    expect(html).not.toContain("<skipped>");
  });

  it("renders a terminal table with one row per phase and the ratios", () => {
    const table = renderTable(sampleReport());
    const lines = table.split("\n");
    expect(lines[0]).toMatch(/^phase\s+rps\s+± %\s+p50 ms/);
    expect(lines.some((line) => /^baseline fastify\s+20,000\s/.test(line))).toBe(true);
    expect(lines.some((line) => /^verify plain\s+16,000\s/.test(line))).toBe(true);
    expect(table).toMatch(/ratio to fastify\s+0\.8/);
    expect(table).toMatch(/ratio to redis limiter\s+- \(no baseline\)/);
  });

  it("renders an empty phase list without failing", () => {
    const report = { ...sampleReport(), phases: [] };
    expect(renderHtml(report)).toContain("<svg");
  });
});

describe("report notes", () => {
  it("flags phases whose generator was near a full core per worker thread", () => {
    const busy = { ...phase("verify plain", 1000, 1000), generatorCpuCores: 0.95 };
    const idle = { ...phase("verify credits", 1000, 1000), generatorCpuCores: 0.5 };
    const notes = generatorBoundNotes([busy, idle], 1);
    expect(notes).toHaveLength(1);
    expect(notes[0]).toMatch(/^verify plain: the load generator used 0.95 cores/);
    expect(generatorBoundNotes([busy], 2)).toEqual([]);
  });

  it("flags phases whose answers were mostly not ok, and phases with errors", () => {
    const good = phase("verify plain", 1000, 1000);
    const bad = phase("verify credits", 1000, 1000);
    bad.perRequest = {
      verifyKey: { ...(bad.perRequest["verifyKey"] as NonNullable<(typeof bad.perRequest)[string]>), marked: 1500 },
    };
    expect(lowOkNotes([good, bad])).toEqual([
      'verify credits: only 50.0% of verifyKey answers were ok ("valid":true / "success":true)',
    ]);
    expect(errorNotes([good])[0]).toBe("verify plain: 1 errors of 3000 requests, e.g. HTTP 500 from verifyKey");
    expect(errorNotes([{ ...good, errors: 0 }])).toEqual([]);
    expect(errorNotes([{ ...good, errors: 0, completed: 0, errorSamples: ["Headers Timeout Error"] }])).toEqual([
      "verify plain: no request completed within the measured time (e.g. Headers Timeout Error)",
    ]);
  });

  it("flags phases whose throughput swung from second to second", () => {
    const steady = phase("verify plain", 1000, 1000);
    const noisy = { ...phase("verify credits", 1000, 1000), rpsVariationPct: 40 };
    expect(variationNotes([steady, noisy])).toEqual([
      "verify credits: throughput varied 40% (standard deviation of per-second rps over their mean): the machine was noisy",
    ]);
  });

  it("computes the variation of per-second throughput", () => {
    expect(variationPct([100, 100, 100])).toBe(0);
    expect(variationPct([5])).toBe(0);
    expect(variationPct([90, 110])).toBe(14.14);
  });

  it("flags a busy machine", () => {
    const machine = sampleReport().machine;
    expect(noisyMachineNotes({ ...machine, loadAverage1m: 0.2 })).toEqual([]);
    expect(noisyMachineNotes({ ...machine, loadAverage1m: 3 })[0]).toMatch(/busy/);
  });
});

describe("chart axis", () => {
  it("rounds the axis maximum up to a readable number", () => {
    expect(niceCeiling(23_000)).toBe(25_000);
    expect(niceCeiling(9.1)).toBe(10);
    expect(niceCeiling(0.7)).toBe(0.8);
    expect(niceCeiling(100)).toBe(100);
    expect(niceCeiling(0)).toBe(1);
  });
});

import { filesystemTypeOf } from "../src/procs/filesystem.js";
import { dataDirNotes } from "../src/report/notes.js";

describe("data dir filesystem", () => {
  const mounts = [
    "/dev/vda / ext4 rw 0 0",
    "tmpfs /tmp tmpfs rw 0 0",
    "tmpfs /tmpx/y tmpfs rw 0 0",
    "/dev/vdb /data xfs rw 0 0",
  ].join("\n");

  it("finds the filesystem of the longest mount point containing the path", () => {
    expect(filesystemTypeOf("/tmp", mounts)).toBe("tmpfs");
    expect(filesystemTypeOf("/tmp/keyraft-bench-1", mounts)).toBe("tmpfs");
    expect(filesystemTypeOf("/tmpx", mounts)).toBe("ext4");
    expect(filesystemTypeOf("/data/a", mounts)).toBe("xfs");
    expect(filesystemTypeOf("/home", "")).toBeNull();
  });

  it("warns only for RAM filesystems", () => {
    expect(dataDirNotes("/tmp", "tmpfs")[0]).toMatch(/fsync is free/);
    expect(dataDirNotes("/tmp", "ext4")).toEqual([]);
    expect(dataDirNotes("/tmp", null)).toEqual([]);
  });
});
