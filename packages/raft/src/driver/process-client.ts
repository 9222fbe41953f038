// Spawns node-process.ts as a child process and talks to it over its JSON-lines control channel.
// Used by the real-process tests and the raft benchmark; the caller must kill() what it spawns.

import { spawn, type ChildProcessByStdio } from "node:child_process";
import { createInterface } from "node:readline";
import type { Readable, Writable } from "node:stream";
import { fileURLToPath } from "node:url";
import type { NodeId } from "../core/types.js";
import { RaftNodeError, type RaftNodeErrorCode } from "../errors.js";
import {
  secretEnvVar,
  type ControlRequest,
  type ControlResponse,
  type NodeProcessConfig,
  type StartedEvent,
} from "./process-protocol.js";

/** Requests awaiting a response from one child. */
export const pendingRequestsMax = 10_000;

export interface NodeProcessSpawnOptions {
  config: NodeProcessConfig;
  secret: string;
  /** Script to run. Default: the compiled node-process.js next to this file. */
  entry?: string;
  /** Extra node flags (e.g. a TypeScript loader when running from source). */
  execArgv?: string[];
  /** Each stderr line of the child (its structured logs). Default: ignored. */
  onStderr?: (line: string) => void;
  startTimeoutMs?: number;
}

export function defaultNodeProcessEntry(): string {
  return fileURLToPath(new URL("./node-process.js", import.meta.url));
}

export class NodeProcess {
  private readonly pending = new Map<
    number,
    { resolve: (value: unknown) => void; reject: (error: Error) => void; timer: NodeJS.Timeout }
  >();
  private nextId = 1;
  private readonly exit: Promise<number | null>;
  exitCode: number | null | undefined = undefined;

  private constructor(
    readonly id: NodeId,
    readonly port: number,
    private readonly child: ChildProcessByStdio<Writable, Readable, Readable>,
    lines: ReturnType<typeof createInterface>,
  ) {
    lines.on("line", (line) => this.onLine(line));
    this.exit = new Promise((resolve) => child.once("exit", (code) => resolve(code)));
    void this.exit.then((code) => {
      this.exitCode = code;
      for (const waiter of this.pending.values()) {
        clearTimeout(waiter.timer);
        waiter.reject(new Error(`node process ${id} exited (${code})`));
      }
      this.pending.clear();
    });
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  get running(): boolean {
    return this.exitCode === undefined;
  }

  static async spawn(options: NodeProcessSpawnOptions): Promise<NodeProcess> {
    const entry = options.entry ?? defaultNodeProcessEntry();
    const child = spawn(process.execPath, [...(options.execArgv ?? []), entry, JSON.stringify(options.config)], {
      env: { ...process.env, [secretEnvVar]: options.secret },
      stdio: ["pipe", "pipe", "pipe"],
    });
    const errLines = createInterface({ input: child.stderr });
    const stderrTail: string[] = [];
    errLines.on("line", (line) => {
      options.onStderr?.(line);
      stderrTail.push(line);
      if (stderrTail.length > 20) stderrTail.shift();
    });
    const lines = createInterface({ input: child.stdout });
    const started = await new Promise<StartedEvent>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`node process ${options.config.id} did not start`)),
        options.startTimeoutMs ?? 20_000,
      );
      const onLine = (line: string) => {
        const event = parseLine(line) as Partial<StartedEvent> | null;
        if (event?.event !== "started") return;
        clearTimeout(timer);
        lines.off("line", onLine);
        resolve(event as StartedEvent);
      };
      lines.on("line", onLine);
      child.once("exit", (code) => {
        clearTimeout(timer);
        reject(
          new Error(`node process ${options.config.id} exited (${code}) before starting: ${stderrTail.join("\n")}`),
        );
      });
    }).catch((error: unknown) => {
      child.kill("SIGKILL");
      throw error;
    });
    return new NodeProcess(options.config.id, started.port, child, lines);
  }

  /** Sends one request; rejects with a RaftNodeError (code, leader) when the node refuses it. */
  request<T>(request: ControlRequest, timeoutMs = 10_000): Promise<T> {
    if (!this.running) return Promise.reject(new Error(`node process ${this.id} is not running`));
    if (this.pending.size >= pendingRequestsMax) return Promise.reject(new Error("pendingRequestsMax reached"));
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`node process ${this.id}: ${request.op} timed out after ${timeoutMs} ms`));
      }, timeoutMs);
      this.pending.set(id, { resolve: resolve as (value: unknown) => void, reject, timer });
      this.child.stdin.write(`${JSON.stringify({ ...request, id })}\n`);
    });
  }

  /** Sends `signal` (SIGKILL by default: a crash) and waits for the process to exit. */
  async kill(signal: NodeJS.Signals = "SIGKILL"): Promise<void> {
    if (this.running) this.child.kill(signal);
    await this.exit;
  }

  /** Asks the node to stop cleanly, and waits for the exit. */
  async stop(): Promise<void> {
    if (!this.running) return;
    await this.request({ op: "stop" }).catch(() => undefined);
    await this.exit;
  }

  private onLine(line: string): void {
    const response = parseLine(line) as ControlResponse | null;
    if (response === null || typeof response.id !== "number") return; // not a response (stray output)
    const waiter = this.pending.get(response.id);
    if (waiter === undefined) return;
    this.pending.delete(response.id);
    clearTimeout(waiter.timer);
    if (response.ok) waiter.resolve(response.result);
    else {
      const { code, message, leader } = response.error;
      waiter.reject(
        new RaftNodeError(code as RaftNodeErrorCode, message.replace(/^\w*Error: /, "").replace(`${code}: `, ""), {
          leader,
        }),
      );
    }
  }
}

function parseLine(line: string): unknown {
  try {
    return JSON.parse(line) as unknown;
  } catch {
    return null;
  }
}
