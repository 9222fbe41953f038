// A RaftNode on LevelDB as a process of its own, driven over stdin/stdout JSON lines (see
// process-protocol.ts). The replicated application is a tiny digest machine: it counts commands
// and folds them into an FNV-1a hash, so histories can be compared across nodes cheaply.
// Run: KEYRAFT_CLUSTER_SECRET=... node dist/driver/node-process.js '<NodeProcessConfig JSON>'

import { monitorEventLoopDelay } from "node:perf_hooks";
import { createInterface } from "node:readline";
import type { Entry, Snapshot } from "../core/types.js";
import { RaftNodeError } from "../errors.js";
import type { Logger } from "../logger.js";
import { RaftNode } from "../node.js";
import { LevelStorage } from "../storage/level-storage.js";
import { runLoad } from "./load.js";
import {
  secretEnvVar,
  type ControlRequest,
  type ControlResponse,
  type LoopDelay,
  type MachineState,
  type NodeProcessConfig,
} from "./process-protocol.js";
import type { StateMachine } from "./state-machine.js";

class DigestMachine implements StateMachine {
  state: MachineState = { count: 0, digest: 0x811c9dc5, lastIndex: 0, installs: 0, lastInstalledIndex: 0 };

  apply(entry: Entry): void {
    let digest = this.state.digest;
    for (const byte of entry.data) digest = Math.imul(digest ^ byte, 0x01000193) >>> 0;
    this.state.digest = digest;
    this.state.count++;
    this.state.lastIndex = entry.index;
  }

  takeSnapshot(): Uint8Array {
    const { count, digest, lastIndex } = this.state;
    return new TextEncoder().encode(JSON.stringify({ count, digest, lastIndex }));
  }

  installSnapshot(snapshot: Snapshot): void {
    const saved = JSON.parse(new TextDecoder().decode(snapshot.data)) as Pick<
      MachineState,
      "count" | "digest" | "lastIndex"
    >;
    this.state = { ...saved, installs: this.state.installs + 1, lastInstalledIndex: snapshot.metadata.index };
  }
}

const levels = ["debug", "info", "warn", "error"] as const;

function stderrLogger(id: string, level: string): Logger {
  const min = Math.max(0, levels.indexOf(level as (typeof levels)[number]));
  const at = (rank: number, name: string) => (fields: object, message: string) => {
    if (rank >= min)
      process.stderr.write(`${JSON.stringify({ level: name, time: Date.now(), node: id, msg: message, ...fields })}\n`);
  };
  return { debug: at(0, "debug"), info: at(1, "info"), warn: at(2, "warn"), error: at(3, "error") };
}

function reply(response: ControlResponse | object): void {
  process.stdout.write(`${JSON.stringify(response)}\n`);
}

const loopDelay = monitorEventLoopDelay({ resolution: 1 });
loopDelay.enable();

function takeLoopDelay(): LoopDelay {
  const nsPerMs = 1e6;
  const window = {
    p50Ms: loopDelay.percentile(50) / nsPerMs,
    p99Ms: loopDelay.percentile(99) / nsPerMs,
    meanMs: loopDelay.mean / nsPerMs,
  };
  loopDelay.reset();
  return window;
}

async function handle(node: RaftNode, machine: DigestMachine, request: ControlRequest): Promise<unknown> {
  switch (request.op) {
    case "peers":
      for (const [id, url] of Object.entries(request.peers)) if (id !== node.id) node.setPeerAddress(id, url);
      return null;
    case "propose":
      return node.propose(new TextEncoder().encode(request.data));
    case "read":
      await node.readIndex();
      return machine.state;
    case "status":
      return node.status();
    case "metrics":
      return node.metrics();
    case "loopDelay":
      return takeLoopDelay();
    case "state":
      return machine.state;
    case "transfer":
      await node.transferLeadership(request.to);
      return null;
    case "load":
      return runLoad(node, request);
    case "stop":
      await node.stop();
      setImmediate(() => process.exit(0));
      return null;
    default:
      throw new Error(`unknown op ${(request as { op: string }).op}`);
  }
}

async function main(): Promise<void> {
  const config = JSON.parse(process.argv[2] ?? "{}") as NodeProcessConfig;
  const secret = process.env[secretEnvVar];
  if (secret === undefined) throw new Error(`${secretEnvVar} is not set`);
  const logger = stderrLogger(config.id, config.logLevel ?? "warn");
  const storage = await LevelStorage.open({ path: config.dir, keepEntries: config.keepEntries ?? 1000 });
  const machine = new DigestMachine();
  const node = new RaftNode({
    id: config.id,
    voters: config.voters,
    storage,
    stateMachine: machine,
    transport: { secret, port: config.port, peers: config.peers },
    ...(config.tickMs === undefined ? {} : { tickMs: config.tickMs }),
    ...(config.electionTicks === undefined ? {} : { electionTicks: config.electionTicks }),
    ...(config.heartbeatTicks === undefined ? {} : { heartbeatTicks: config.heartbeatTicks }),
    ...(config.snapshotEntries === undefined ? {} : { snapshotEntries: config.snapshotEntries }),
    ...(config.requestTimeoutMs === undefined ? {} : { requestTimeoutMs: config.requestTimeoutMs }),
    logger,
    onFatal: (error) => {
      logger.error({ err: String(error) }, "fatal");
      process.exit(1);
    },
  });
  await node.start();
  reply({ event: "started", id: config.id, port: node.port, pid: process.pid });
  const lines = createInterface({ input: process.stdin });
  lines.on("line", (line) => {
    let request: ControlRequest & { id: number };
    try {
      request = JSON.parse(line) as ControlRequest & { id: number };
    } catch {
      logger.warn({ bytes: line.length }, "control channel: not a JSON line, ignored");
      return;
    }
    handle(node, machine, request).then(
      (result) => reply({ id: request.id, ok: true, result: result ?? null }),
      (error: unknown) => {
        const coded = error instanceof RaftNodeError ? error : null;
        reply({
          id: request.id,
          ok: false,
          error: { code: coded?.code ?? "ERROR", message: String(error), leader: coded?.leader ?? "" },
        });
      },
    );
  });
  // The parent going away (stdin closed) or SIGTERM: stop cleanly.
  const shutdown = () => void node.stop().finally(() => process.exit(0));
  lines.on("close", shutdown);
  process.on("SIGTERM", shutdown);
}

main().catch((error: unknown) => {
  process.stderr.write(`node process failed: ${String(error)}\n`);
  process.exit(1);
});
