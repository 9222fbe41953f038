// Warnings attached to a report: conditions under which its figures must be read with care.
import type { PhaseResult } from "../load/run-load.js";
import type { MachineInfo } from "./model.js";

/** A generator thread near a full core cannot push harder: that phase measured the generator too. */
export function generatorBoundNotes(phases: readonly PhaseResult[], workers: number): string[] {
  return phases
    .filter((phase) => phase.generatorCpuCores >= 0.9 * workers)
    .map(
      (phase) =>
        `${phase.label}: the load generator used ${phase.generatorCpuCores} cores with ${workers} worker thread(s), so it may have ` +
        "limited this phase; on a machine with spare cores try --workers 2, or run the generator on another machine with --target",
    );
}

export function noisyMachineNotes(machine: MachineInfo): string[] {
  return machine.loadAverage1m > machine.cpus * 0.5
    ? [
        `the machine was busy when the run started (load average ${machine.loadAverage1m} on ${machine.cpus} CPUs): compare ratios, not absolute figures`,
      ]
    : [];
}

/** Answers without the expected marker (e.g. not VALID) mean a phase may have timed an error path. */
export function lowOkNotes(phases: readonly PhaseResult[]): string[] {
  const notes: string[] = [];
  for (const phase of phases) {
    for (const [name, request] of Object.entries(phase.perRequest)) {
      if (request.marked === null || request.completed === 0) continue;
      const okFraction = request.marked / request.completed;
      if (okFraction < 0.99) {
        notes.push(
          `${phase.label}: only ${(okFraction * 100).toFixed(1)}% of ${name} answers were ok ("valid":true / "success":true)`,
        );
      }
    }
  }
  return notes;
}

/** Transport errors and non-2xx answers, with a few samples of what they were. */
export function errorNotes(phases: readonly PhaseResult[]): string[] {
  return phases
    .filter((phase) => phase.errors > 0 || phase.completed === 0)
    .map((phase) => {
      const samples =
        phase.errorSamples.length === 0 ? "no error recorded" : `e.g. ${phase.errorSamples.slice(0, 3).join("; ")}`;
      return phase.completed === 0
        ? `${phase.label}: no request completed within the measured time (${samples})`
        : `${phase.label}: ${phase.errors} errors of ${phase.completed} requests, ${samples}`;
    });
}

/** Durable writes on a RAM filesystem cost nothing: say so, since admin-write figures would flatter. */
export function dataDirNotes(dataDirParent: string, filesystemType: string | null): string[] {
  return filesystemType === "tmpfs" || filesystemType === "ramfs"
    ? [
        `the node's data dir is under ${dataDirParent}, a ${filesystemType} (RAM): fsync is free there, ` +
          "so durable-write figures flatter; set TMPDIR to a directory on a real disk",
      ]
    : [];
}

/** Throughput that swung a lot from second to second: the machine was noisy, figures are rough. */
export function variationNotes(phases: readonly PhaseResult[], thresholdPct = 15): string[] {
  return phases
    .filter((phase) => phase.rpsVariationPct > thresholdPct)
    .map(
      (phase) =>
        `${phase.label}: throughput varied ${phase.rpsVariationPct}% (standard deviation of per-second rps over their mean): the machine was noisy`,
    );
}
