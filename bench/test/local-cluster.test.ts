import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parseArgs } from "../src/args.js";
import { getJson, postJson } from "../src/http.js";
import { benchDist, defaultNodeEntry, repoRoot } from "../src/paths.js";
import { stopAll } from "../src/procs/child.js";
import { convergenceGoal } from "../src/procs/converge.js";
import { openDeployment, type Deployment } from "../src/scenarios/deployment.js";
import { createApi, createKeys } from "../src/seed.js";

// `--cluster N`: real node processes (the built gateway, as `npm test` builds it first). These
// tests check what the harness does with a cluster (start, seed through the leader, wait for
// the seed everywhere, spread the load, tear down), never how fast anything is.
const built = existsSync(join(repoRoot, defaultNodeEntry)) && existsSync(join(benchDist, "cli.js"));

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function verifiesValid(target: string, apiId: string, key: string): Promise<boolean> {
  const answer = await postJson(target, "/v1/keys.verifyKey", { apiId, key }, null);
  return answer.status === 200 && (answer.body as { valid?: unknown }).valid === true;
}

describe("convergenceGoal", () => {
  it("is the highest commit index, or null when a node does not report one", () => {
    expect(
      convergenceGoal([
        { commitIndex: 7, appliedIndex: 7 },
        { commitIndex: 9, appliedIndex: 4 },
        { commitIndex: 8, appliedIndex: 8 },
      ]),
    ).toBe(9);
    expect(convergenceGoal([{ commitIndex: 7, appliedIndex: 7 }, null])).toBeNull();
    expect(convergenceGoal([])).toBe(0);
  });
});

describe.skipIf(!built)("--cluster N", () => {
  afterAll(async () => {
    await stopAll();
  });

  it("starts N nodes, seeds through the leader, waits until every node sees the seed, and stops them all", async () => {
    const lines: string[] = [];
    const log = (line: string): void => {
      lines.push(line);
    };
    const deployment: Deployment = await openDeployment(parseArgs(["verify", "--cluster", "3"]), log);
    const pids: number[] = [];
    try {
      expect(deployment.targets).toHaveLength(3);
      expect(new Set(deployment.targets).size).toBe(3);
      expect(deployment.local).toBe(true);
      const statuses = await Promise.all(
        deployment.targets.map(
          async (target) =>
            (await getJson(target, "/v1/cluster.status", deployment.rootKey)).body as {
              role: string;
              nodeId: string;
              leader: string;
              voters: string[];
            },
        ),
      );
      expect(statuses[0]?.role).toBe("leader"); // seeding goes to targets[0]
      expect(new Set(statuses.map((status) => status.leader)).size).toBe(1);
      expect([...(statuses[0]?.voters ?? [])].sort()).toEqual(["n1", "n2", "n3"]);
      expect(deployment.cpuSeconds()).toBeGreaterThan(0);

      const seedTarget = { url: deployment.targets[0] as string, rootKey: deployment.rootKey, log };
      const apiId = await createApi(seedTarget, "bench-cluster-test");
      const keys = await createKeys(seedTarget, apiId, 40, "keys", (i) => ({ name: `k${i}` }));
      await deployment.settle(log);
      expect(lines.some((line) => /seed visible on all 3 nodes/.test(line))).toBe(true);
      // Right after settle, with no retry: every node knows every key (the last one written too).
      for (const target of deployment.targets) {
        for (const seeded of [keys[0], keys[keys.length - 1]])
          expect(await verifiesValid(target, apiId, seeded?.key as string)).toBe(true);
      }
      const pidLine = lines.find((line) => line.startsWith("cluster ready:")) ?? "";
      for (const match of pidLine.matchAll(/pid (\d+)/g)) pids.push(Number(match[1]));
      expect(pids).toHaveLength(3);
    } finally {
      await deployment.stop();
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
    for (const pid of pids) expect(alive(pid)).toBe(false);
  });

  it("runs a scenario end to end on a cluster: every verification on every node valid, the summary last", async () => {
    const reportDir = await mkdtemp(join(tmpdir(), "keyraft-bench-cluster-report-"));
    try {
      const child = spawn(
        process.execPath,
        [
          join(benchDist, "cli.js"),
          "verify",
          "--cluster",
          "2",
          "--duration",
          "1",
          "--warmup",
          "0",
          "--keys",
          "40",
          "--connections",
          "4",
          "--no-baselines",
          "--report-dir",
          reportDir,
        ],
        { cwd: repoRoot, stdio: ["ignore", "pipe", "pipe"] },
      );
      let stdout = "";
      let stderr = "";
      child.stdout.on("data", (chunk: Buffer) => {
        stdout += chunk.toString("utf8");
      });
      child.stderr.on("data", (chunk: Buffer) => {
        stderr += chunk.toString("utf8");
      });
      const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
      expect(code, stderr.slice(-2000)).toBe(0);
      const summary = JSON.parse(stdout.trim().split("\n").at(-1) as string) as Record<string, unknown>;
      expect(summary["scenario"]).toBe("verify");
      for (const figure of ["verifyRps", "verifyRatelimitRps", "verifyCreditsRps", "verifyPermissionsRps"])
        expect(summary[figure]).toBeGreaterThan(0);
      expect(stderr).toMatch(/a 2-node keyraft cluster/);
      expect(stderr).toMatch(/seed visible on all 2 nodes/);

      const reportFile = (await readdir(reportDir)).find((name) => name.endsWith(".json"));
      const report = JSON.parse(await readFile(join(reportDir, reportFile as string), "utf8")) as {
        options: { cluster: number };
        phases: Array<{
          label: string;
          completed: number;
          errors: number;
          perRequest: Record<string, { completed: number; marked: number | null }>;
        }>;
      };
      expect(report.options.cluster).toBe(2);
      expect(report.phases.map((phase) => phase.label)).toEqual([
        "verify plain",
        "verify ratelimit",
        "verify credits",
        "verify permissions",
      ]);
      for (const phase of report.phases) {
        expect(phase.completed).toBeGreaterThan(0);
        expect(phase.errors).toBe(0);
        // Both nodes knew every key from the first request on: every answer was valid.
        expect(phase.perRequest["verifyKey"]?.marked).toBe(phase.completed);
      }
    } finally {
      await rm(reportDir, { recursive: true, force: true });
    }
  });
});
