// Runs N real keyraft nodes (`node packages/gateway/dist/main.js`) with their Raft links through a
// LinkProxy, and injects process faults: kill -9 and restart, SIGSTOP and SIGCONT, and stops and
// starts around a node's removal from and addition back to the cluster.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { createWriteStream, existsSync, mkdirSync, readFileSync, type WriteStream } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { freePort } from "@keyraft/raft/testing";
import { applyPowerCut, straceArgs, type PowerCutPlan } from "./power-cut.js";
import { LinkProxy } from "./proxy.js";

export const repoRoot = fileURLToPath(new URL("../../../", import.meta.url));
export const mainJs = join(repoRoot, "packages/gateway/dist/main.js");
/** What a node process needs from the build to run as a cluster member. */
export const clusterModuleJs = join(repoRoot, "packages/gateway/dist/cluster/cluster-node.js");

/** Why the cluster cannot run here (null when it can): names the missing piece. */
export function clusterUnavailableReason(): string | null {
  if (!existsSync(mainJs)) return `${mainJs} is missing (run \`npm run build\`)`;
  if (!existsSync(clusterModuleJs))
    return `${clusterModuleJs} is missing: the gateway build has no cluster support (issue 4)`;
  return null;
}

/** "removed": out of the cluster (cluster.removeNode) and stopped; only startRemoved brings it back. */
export type NodeState = "up" | "killed" | "paused" | "removed";

interface ClusterNode {
  id: string;
  httpPort: number;
  raftPort: number;
  dataDir: string;
  child: ChildProcess | null;
  state: NodeState;
  /** Removed from the cluster: restarts and healing leave it down. */
  removed: boolean;
  /** Added at run time with an empty data dir: starts with KEYRAFT_JOIN=true (it never founds a cluster). */
  joiner: boolean;
  /** Runs under strace (power cuts): the current incarnation's trace, and how many there were. */
  tracePath: string | null;
  incarnations: number;
  log: WriteStream;
}

export interface ClusterOptions {
  nodes: number;
  dir: string;
  rootKey: string;
  secret: string;
  env?: Record<string, string>;
  /** Variables of one node (e.g. its clock offset), the same at every (re)start. */
  nodeEnv?: (id: string) => Record<string, string>;
  /** Nodes run under strace, so that a power cut can drop their unsynced writes (power-cut.ts). */
  traced?: ReadonlySet<string>;
}

export class ProcessCluster {
  /** The nodes that founded the cluster (their KEYRAFT_PEERS). */
  private readonly founders: readonly string[];

  private constructor(
    /** Every node, founders first, then those added at run time (addFresh). */
    readonly ids: string[],
    private readonly nodes: Map<string, ClusterNode>,
    readonly proxy: LinkProxy,
    private readonly options: ClusterOptions,
  ) {
    this.founders = [...ids];
  }

  static async start(options: ClusterOptions): Promise<ProcessCluster> {
    const ids = Array.from({ length: options.nodes }, (_, i) => `n${i + 1}`);
    const raftPorts = new Map<string, number>();
    for (const id of ids) raftPorts.set(id, await freePort());
    const proxy = await LinkProxy.start(raftPorts);
    const nodes = new Map<string, ClusterNode>();
    for (const id of ids) {
      const dataDir = join(options.dir, id);
      mkdirSync(dataDir, { recursive: true });
      nodes.set(id, {
        id,
        httpPort: await freePort(),
        raftPort: raftPorts.get(id) ?? 0,
        dataDir,
        child: null,
        state: "killed",
        removed: false,
        joiner: false,
        tracePath: null,
        incarnations: 0,
        log: createWriteStream(join(options.dir, `${id}.log`), { flags: "a" }),
      });
    }
    const cluster = new ProcessCluster(ids, nodes, proxy, options);
    for (const id of ids) cluster.spawn(id);
    return cluster;
  }

  private node(id: string): ClusterNode {
    const node = this.nodes.get(id);
    if (node === undefined) throw new Error(`no node ${id}`);
    return node;
  }

  /**
   * Node `id`'s peers: itself at its real Raft port, every other node through the proxy (a founder
   * lists the founders; a node added at run time lists every node there is when it starts).
   */
  private peersFor(id: string): string {
    return (this.node(id).joiner ? this.ids : this.founders)
      .map((other) =>
        other === id ? `${id}=127.0.0.1:${this.node(id).raftPort}` : `${other}=${this.proxy.address(id, other)}`,
      )
      .join(",");
  }

  private spawn(id: string): void {
    const node = this.node(id);
    const env = {
      PATH: process.env["PATH"] ?? "",
      PORT: String(node.httpPort),
      HOST: "127.0.0.1",
      KEYRAFT_NODE_ID: id,
      KEYRAFT_PEERS: this.peersFor(id),
      KEYRAFT_CLUSTER_SECRET: this.options.secret,
      KEYRAFT_DATA_DIR: node.dataDir,
      KEYRAFT_ROOT_KEY: this.options.rootKey,
      KEYRAFT_LOG_LEVEL: "warn",
      ...(node.joiner ? { KEYRAFT_JOIN: "true" } : {}),
      ...this.options.env,
      ...this.options.nodeEnv?.(id),
    };
    node.incarnations++;
    const traced = this.options.traced?.has(id) === true;
    node.tracePath = traced ? join(this.options.dir, `${id}.trace.${node.incarnations}`) : null;
    const command = [process.execPath, mainJs];
    const child =
      node.tracePath === null
        ? spawn(process.execPath, [mainJs], { cwd: repoRoot, env, stdio: ["ignore", "pipe", "pipe"] })
        : spawn("strace", straceArgs(node.tracePath, command), {
            cwd: repoRoot,
            env,
            stdio: ["ignore", "pipe", "pipe"],
          });
    child.stdout?.pipe(node.log, { end: false });
    child.stderr?.pipe(node.log, { end: false });
    child.on("exit", () => {
      if (node.child === child) {
        node.child = null;
        node.state = node.removed ? "removed" : "killed";
      }
    });
    node.child = child;
    node.state = "up";
  }

  /**
   * Sends `signal` to the node's process: under strace, to the traced node (strace's child), since
   * a SIGKILL or SIGSTOP of strace itself would leave the node running.
   */
  private signal(node: ClusterNode, signal: NodeJS.Signals): void {
    const child = node.child;
    if (child === null) return;
    if (node.tracePath !== null && child.pid !== undefined) {
      const tracee = tracedChild(child.pid);
      if (tracee !== null) {
        try {
          process.kill(tracee, signal);
          return;
        } catch {
          // gone already: strace exits after it
        }
      }
    }
    child.kill(signal);
  }

  url(id: string): string {
    return `http://127.0.0.1:${this.node(id).httpPort}`;
  }

  state(id: string): NodeState {
    return this.node(id).state;
  }

  upIds(): string[] {
    return this.ids.filter((id) => this.node(id).state === "up");
  }

  /** kill -9; the node's unsynced state is lost, its data dir stays. */
  async kill9(id: string): Promise<void> {
    const node = this.node(id);
    const child = node.child;
    if (child === null) return;
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    if (node.state === "paused") this.signal(node, "SIGCONT");
    this.signal(node, "SIGKILL");
    await exited;
  }

  /**
   * A power cut of a traced node: SIGKILL, then every write it made since its last fsync of the
   * file is dropped from its data dir (power-cut.ts). The node stays down until restart.
   */
  async powerCut(id: string): Promise<PowerCutPlan | null> {
    const node = this.node(id);
    const tracePath = node.tracePath;
    if (node.child === null || tracePath === null) return null;
    await this.kill9(id);
    return applyPowerCut(readFileSync(tracePath, "utf8"), node.dataDir);
  }

  restart(id: string): void {
    const node = this.node(id);
    if (node.child !== null || node.removed) return;
    this.spawn(id);
  }

  /** Nodes not removed from the cluster (up, killed or paused). */
  memberIds(): string[] {
    return this.ids.filter((id) => !this.node(id).removed);
  }

  /**
   * Stops a node removed from the cluster (SIGTERM, as an operator stops it after
   * cluster.removeNode); it stays down, its data dir kept, until startRemoved.
   */
  async stopRemoved(id: string): Promise<void> {
    const node = this.node(id);
    node.removed = true;
    const child = node.child;
    if (child === null) {
      node.state = "removed";
      return;
    }
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    if (node.state === "paused") this.signal(node, "SIGCONT");
    this.signal(node, "SIGTERM");
    const timer = setTimeout(() => this.signal(node, "SIGKILL"), 5_000);
    await exited;
    clearTimeout(timer);
  }

  /**
   * Starts a brand-new node (the next id, an empty data dir) that waits to be added
   * (cluster.addNode at addBackAddress); returns its id.
   */
  async addFresh(): Promise<string> {
    const id = `n${this.ids.length + 1}`;
    const raftPort = await freePort();
    await this.proxy.addNode(id, raftPort);
    const dataDir = join(this.options.dir, id);
    mkdirSync(dataDir, { recursive: true });
    this.nodes.set(id, {
      id,
      httpPort: await freePort(),
      raftPort,
      dataDir,
      child: null,
      state: "killed",
      removed: false,
      joiner: true,
      tracePath: null,
      incarnations: 0,
      log: createWriteStream(join(this.options.dir, `${id}.log`), { flags: "a" }),
    });
    this.ids.push(id);
    this.spawn(id);
    return id;
  }

  /** Starts a removed node again on its data dir, before it is added back (cluster.addNode). */
  startRemoved(id: string): void {
    const node = this.node(id);
    if (!node.removed) return;
    node.removed = false;
    if (node.child === null) this.spawn(id);
  }

  /** The Raft address every member reaches node `id` at once it is added back (through the proxy). */
  addBackAddress(id: string): Promise<string> {
    return this.proxy.inboundAddress(id);
  }

  pause(id: string): void {
    const node = this.node(id);
    if (node.child === null || node.state !== "up") return;
    this.signal(node, "SIGSTOP");
    node.state = "paused";
  }

  resume(id: string): void {
    const node = this.node(id);
    if (node.child === null || node.state !== "paused") return;
    this.signal(node, "SIGCONT");
    node.state = "up";
  }

  /** Everything back: links healed, paused nodes continued, killed nodes restarted (removed ones stay down). */
  healAll(): void {
    this.proxy.healAll();
    for (const id of this.ids) {
      if (this.state(id) === "paused") this.resume(id);
      else if (this.state(id) === "killed") this.restart(id);
    }
  }

  /** Stops every node (SIGTERM, then SIGKILL after `graceMs`) and the proxy. */
  async stop(graceMs = 5_000): Promise<void> {
    await Promise.all(
      this.ids.map(async (id) => {
        const node = this.node(id);
        const child = node.child;
        if (child === null) return;
        const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
        if (node.state === "paused") this.signal(node, "SIGCONT");
        this.signal(node, "SIGTERM");
        const timer = setTimeout(() => this.signal(node, "SIGKILL"), graceMs);
        await exited;
        clearTimeout(timer);
      }),
    );
    for (const node of this.nodes.values()) node.log.end();
    await this.proxy.close();
  }
}

/** The first child of process `pid` (the program strace runs), from /proc; null when none. */
function tracedChild(pid: number): number | null {
  try {
    const first = readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim().split(/\s+/)[0];
    return first === undefined || first === "" ? null : Number(first);
  } catch {
    return null;
  }
}

/** Whether strace can trace here (power cuts need it); null when it can, else why not. */
export function powerCutUnavailableReason(): string | null {
  // The same flags as the campaign's (seccomp-bpf needs a recent strace and kernel).
  const probe = spawnSync("strace", straceArgs("/dev/null", ["true"]), { stdio: "ignore" });
  if (probe.error !== undefined) return `strace is missing (${probe.error.message})`;
  if (probe.status !== 0) return `strace cannot trace here (exit ${probe.status})`;
  return null;
}
