// A child process the harness started and must stop: spawn, wait until ready, stop with
// SIGTERM and then SIGKILL after a timeout. Its output is kept (last lines only) for error messages.
import { spawn, type ChildProcess } from "node:child_process";
import { ProcessStartError } from "../errors.js";
import { limits } from "../limits.js";

export interface StartedProcess {
  name: string;
  pid: number;
  /** Last lines of its output (for diagnostics when it fails). */
  recentOutput(): string;
  /** Resolves when it has exited (SIGTERM, then SIGKILL after stopTimeoutMs). Idempotent. */
  stop(): Promise<void>;
  exited(): boolean;
}

export interface StartOptions {
  name: string;
  command: string;
  args: readonly string[];
  env: Readonly<Record<string, string>>;
  cwd: string;
  /** Resolves true once the process serves; polled until startTimeoutMs. */
  ready: () => Promise<boolean>;
  /** Clean-up after the process has exited (e.g. remove its data dir); also runs on Ctrl-C. */
  afterStop?: () => Promise<void>;
  /** Time between SIGTERM and SIGKILL (default limits.stopTimeoutMs). */
  stopTimeoutMs?: number;
}

const running = new Set<StartedProcess>();
/** Stops of things started elsewhere (a local cluster's members) that stopAll must run too. */
const otherStops = new Set<() => Promise<void>>();

/** Stops everything still running (used on SIGINT and on fatal errors). */
export async function stopAll(): Promise<void> {
  await Promise.all([...[...running].map((started) => started.stop()), ...[...otherStops].map((stop) => stop())]);
}

/** Makes stopAll run `stop` as well; returns the function that withdraws it (call it once stopped). */
export function stopWithAll(stop: () => Promise<void>): () => void {
  otherStops.add(stop);
  return () => {
    otherStops.delete(stop);
  };
}

export async function startProcess(options: StartOptions): Promise<StartedProcess> {
  const child = spawn(options.command, options.args, {
    cwd: options.cwd,
    env: { ...process.env, ...options.env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const lines: string[] = [];
  const keep = (chunk: Buffer): void => {
    for (const line of chunk.toString("utf8").split("\n")) {
      if (line.trim() === "") continue;
      lines.push(line);
      if (lines.length > limits.childLogLinesMax) lines.shift();
    }
  };
  child.stdout?.on("data", keep);
  child.stderr?.on("data", keep);
  const exit = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  let exited = false;
  void exit.then(() => {
    exited = true;
  });
  const spawnError = new Promise<Error>((resolve) => child.once("error", resolve));

  let stopping: Promise<void> | undefined;
  const started: StartedProcess = {
    name: options.name,
    pid: child.pid ?? -1,
    recentOutput: () => lines.join("\n"),
    exited: () => exited,
    stop: () => {
      stopping ??= stopChild(child, exit, () => exited, options.stopTimeoutMs ?? limits.stopTimeoutMs)
        .then(() => options.afterStop?.())
        .finally(() => running.delete(started));
      return stopping;
    },
  };
  running.add(started);
  const deadline = Date.now() + limits.startTimeoutMs;
  for (;;) {
    const failure = await Promise.race([
      spawnError.then((error) => `could not start: ${error.message}`),
      exit.then(() => `exited with code ${child.exitCode ?? "?"} (signal ${child.signalCode ?? "none"})`),
      sleep(100).then(() => null),
    ]);
    if (failure !== null) {
      await started.stop();
      throw new ProcessStartError(`${options.name} ${failure}; its last output:\n${started.recentOutput()}`);
    }
    if (await options.ready().catch(() => false)) return started;
    if (Date.now() > deadline) {
      await started.stop();
      throw new ProcessStartError(
        `${options.name} was not ready after ${limits.startTimeoutMs} ms; its last output:\n${started.recentOutput()}`,
      );
    }
  }
}

async function stopChild(
  child: ChildProcess,
  exit: Promise<void>,
  exited: () => boolean,
  timeoutMs: number,
): Promise<void> {
  if (exited() || child.exitCode !== null || child.signalCode !== null) return;
  child.kill("SIGTERM");
  const timer = setTimeout(() => {
    if (!exited()) child.kill("SIGKILL");
  }, timeoutMs);
  await exit;
  clearTimeout(timer);
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
