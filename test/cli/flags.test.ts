// Every command-line tool of the repository parses its flags with node:util's parseArgs and keeps
// one contract: --help prints the usage on stdout and exits 0; a bad flag or value prints one line
// on stderr and exits 2. Runs the built tools (npm test builds first; else `npx tsc -b`).
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const repoRoot = fileURLToPath(new URL("../../", import.meta.url));

interface Tool {
  /** The npm script that runs it. */
  script: string;
  entry: string;
  /** Arguments that come before the flags (the bench's scenario, ctl's command). */
  before: string[];
  /** A known flag with a value it refuses. */
  badValue: string[];
}

const tools: Tool[] = [
  { script: "bench", entry: "bench/dist/cli.js", before: ["verify"], badValue: ["--keys", "many"] },
  { script: "test:sim", entry: "packages/raft/dist/sim/cli.js", before: [], badValue: ["--seeds", "-1"] },
  {
    script: "test:sim-counters",
    entry: "packages/core/cli/dist/sim-counters.js",
    before: [],
    badValue: ["--steps", "x"],
  },
  { script: "test:faults", entry: "cluster/faults/dist/cli.js", before: [], badValue: ["--nodes", "x"] },
  { script: "cluster", entry: "cluster/run.mjs", before: [], badValue: ["--help=yes"] },
  { script: "cluster:ctl", entry: "cluster/ctl.mjs", before: ["status"], badValue: ["--timeout", "soon"] },
];

function run(entry: string, args: string[]): { status: number | null; stdout: string; stderr: string } {
  const result = spawnSync(process.execPath, [entry, ...args], {
    cwd: repoRoot,
    encoding: "utf8",
    timeout: 20_000,
    // No cluster to reach and no root key: nothing may start before the flags are judged.
    env: { ...process.env, KEYRAFT_URL: "http://127.0.0.1:9", KEYRAFT_ROOT_KEY: "" },
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

const lines = (text: string): string[] => text.split("\n").filter((line) => line !== "");

describe.each(tools)("npm run $script", ({ script, entry, before, badValue }) => {
  it("--help prints the usage and exits 0", () => {
    const result = run(entry, [...before, "--help"]);
    expect(result.stderr).toBe("");
    expect(result.stdout.startsWith(`usage: npm run ${script}`), result.stdout).toBe(true);
    expect(result.status).toBe(0);
  });

  it("an unknown flag: one line on stderr, exit 2", () => {
    const result = run(entry, [...before, "--no-such-flag"]);
    expect(lines(result.stderr), result.stderr).toHaveLength(1);
    expect(result.stderr).toContain("--no-such-flag");
    expect(result.stdout).toBe("");
    expect(result.status).toBe(2);
  });

  it(`a bad value (${badValue.join(" ")}): one line on stderr, exit 2`, () => {
    const result = run(entry, [...before, ...badValue]);
    expect(lines(result.stderr), result.stderr).toHaveLength(1);
    expect(result.stderr).toContain(badValue[0]?.split("=")[0]);
    expect(result.stdout).toBe("");
    expect(result.status).toBe(2);
  });
});

describe("the simulators still read their flags", () => {
  it("test:sim runs one seed", () => {
    const result = run("packages/raft/dist/sim/cli.js", ["--seed", "3", "--steps", "40"]);
    expect(result.stdout).toContain("1 seeds x 40 steps: ok");
    expect(result.status).toBe(0);
  });

  it("test:sim --driver runs one seed of the driver simulation", () => {
    const result = run("packages/raft/dist/sim/cli.js", ["--driver", "--seed", "3", "--steps", "40"]);
    expect(result.stdout).toContain("driver simulation, 1 seeds x 40 steps: ok");
    expect(result.status).toBe(0);
  });

  it("test:sim-counters runs seeds of both simulations", () => {
    const credit = run("packages/core/cli/dist/sim-counters.js", ["--seeds", "3", "--from", "5", "--steps", "40"]);
    expect(credit.stdout).toContain("3 seeds x 40 steps in");
    expect(credit.status).toBe(0);
    const ratelimit = run("packages/core/cli/dist/sim-counters.js", ["--ratelimit", "--seed", "2", "--steps", "40"]);
    expect(ratelimit.stdout).toContain("rate limits: 1 seeds x 40 steps in");
    expect(ratelimit.status).toBe(0);
  });
});
