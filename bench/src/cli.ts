#!/usr/bin/env node
// `npm run bench -- <scenario> [flags]`: checks the scenario can run, runs the baselines, prepares
// the scenario (starts and seeds what it measures), runs it, writes the reports and prints the
// JSON summary last.
import { cpus, loadavg, tmpdir, totalmem } from "node:os";
import { isAbsolute, join } from "node:path";
import { ArgsError, parseArgs, usage, type BenchOptions } from "./args.js";
import { startBaselines, type BaselineResults } from "./baselines/run-baselines.js";
import { runPhases } from "./scenarios/phase.js";
import { stderrConsole } from "./console.js";
import { repoRoot } from "./paths.js";
import { stopAll } from "./procs/child.js";
import { BenchError, NotAvailableError } from "./errors.js";
import type { MachineInfo, Report } from "./report/model.js";
import { buildSummary } from "./report/summary.js";
import { renderTable } from "./report/table.js";
import { writeReport } from "./report/write.js";
import { scenarios } from "./scenarios/registry.js";
import type { ScenarioContext, ScenarioOutcome } from "./scenarios/types.js";
import {
  dataDirNotes,
  errorNotes,
  generatorBoundNotes,
  lowOkNotes,
  noisyMachineNotes,
  variationNotes,
} from "./report/notes.js";
import { filesystemTypeOf } from "./procs/filesystem.js";

const exitUsage = 2;
const exitNotAvailable = 3;

async function main(argv: readonly string[]): Promise<number> {
  const console = stderrConsole();
  let options: BenchOptions;
  try {
    options = parseArgs(argv, process.env);
  } catch (error) {
    if (!(error instanceof ArgsError)) throw error;
    // One line, so that a script calling the bench sees the mistake itself; --help prints the usage.
    console.log(`bench: ${error.message}${error.message.includes("--help") ? "" : " (see --help)"}`);
    return exitUsage;
  }
  if (options.help) {
    process.stdout.write(`${usage}\n`);
    return 0;
  }
  const stop = (signal: string): void => {
    console.log(`bench: ${signal}, stopping what was started`);
    void stopAll().finally(() => process.exit(130));
  };
  process.once("SIGINT", () => stop("SIGINT"));
  process.once("SIGTERM", () => stop("SIGTERM"));

  const context: ScenarioContext = { options, log: console.log, progress: console.progress };
  const startedAt = new Date().toISOString();
  const machine = machineInfo();
  try {
    const scenario = scenarios[options.scenario];
    await scenario.check(context);
    console.log(`bench ${options.scenario}: ${placement(options)}`);
    const running = await startBaselines(context);
    let baselines: BaselineResults;
    let outcome: ScenarioOutcome;
    try {
      const prepared = await scenario.prepare(context);
      try {
        // The scenario's phases first: anything left over from seeding (storage compaction)
        // then costs keyraft, not the baselines.
        const results = await runPhases(context, [...prepared.phases, ...running.phases]);
        baselines = running.results(results);
        outcome = await prepared.finish(results);
      } finally {
        await prepared.close();
      }
    } finally {
      await running.close();
    }
    const summary = buildSummary(options.scenario, outcome, baselines);
    const report: Report = {
      summary,
      startedAt,
      finishedAt: new Date().toISOString(),
      options: publicOptions(options),
      machine,
      placement: placement(options),
      phases: [...[baselines.fastify, baselines.redisLimiter].filter((phase) => phase !== null), ...outcome.phases],
      notes: [...baselines.notes, ...outcome.notes, ...noisyMachineNotes(machine)],
    };
    if (options.targets.length === 0) report.notes.push(...dataDirNotes(tmpdir(), filesystemTypeOf(tmpdir())));
    report.notes.push(
      ...errorNotes(report.phases),
      ...lowOkNotes(report.phases),
      ...generatorBoundNotes(report.phases, options.workers),
      ...variationNotes(report.phases),
    );
    const dir = isAbsolute(options.reportDir) ? options.reportDir : join(repoRoot, options.reportDir);
    const { jsonPath, htmlPath } = await writeReport(report, dir);
    console.log(`\n${renderTable(report)}\n`);
    console.log(`report: ${jsonPath}`);
    console.log(`report: ${htmlPath}`);
    process.stdout.write(`${JSON.stringify(summary)}\n`);
    return 0;
  } catch (error) {
    await stopAll();
    if (error instanceof NotAvailableError) {
      console.log(`bench: ${error.message}`);
      return exitNotAvailable;
    }
    if (error instanceof BenchError) {
      console.log(`bench: ${error.message}`);
      return 1;
    }
    throw error;
  }
}

/** Where everything runs, said in every report so that figures are read with it in mind. */
function placement(options: BenchOptions): string {
  const generator = `load generator: ${options.workers} worker thread(s) of this process, ${options.connections} closed-loop keep-alive connections`;
  const target =
    options.targets.length > 0
      ? `targets: ${options.targets.length} given with --target`
      : options.cluster !== null
        ? `targets: a ${options.cluster}-node keyraft cluster started as child processes on 127.0.0.1 (seeded through its leader, load spread over every node)`
        : "target: one keyraft node started as a child process on 127.0.0.1";
  const baselines = options.baselines
    ? "baselines: each its own child process on 127.0.0.1 (Redis baseline: plus redis-server), all started up front and idle except during their own phases"
    : "baselines: skipped";
  const order = `phases run one at a time${options.rounds > 1 ? `, interleaved in ${options.rounds} rounds` : ""}, the scenario's before the baselines'`;
  return `${generator}; ${target}; ${baselines}; ${order}; ${cpus().length} CPU(s) shared by all of them, no pinning`;
}

function publicOptions(options: BenchOptions): Record<string, unknown> {
  const { rootKey, ...rest } = options;
  return { ...rest, rootKey: rootKey === null ? null : "(given, not written)" };
}

function machineInfo(): MachineInfo {
  const list = cpus();
  return {
    cpus: list.length,
    cpuModel: list[0]?.model.trim() ?? "unknown",
    memoryGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    platform: `${process.platform} ${process.arch}`,
    node: process.version,
    loadAverage1m: Math.round((loadavg()[0] ?? 0) * 100) / 100,
  };
}

// Exit explicitly once output is flushed: idle keep-alive sockets of the set-up client would
// otherwise hold the process open for a few seconds.
const exitAfterFlush = (code: number): void => {
  process.stdout.write("", () => process.exit(code));
};
main(process.argv.slice(2)).then(exitAfterFlush, (error: unknown) => {
  process.stderr.write(`bench: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  void stopAll().finally(() => exitAfterFlush(1));
});
