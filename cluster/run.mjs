#!/usr/bin/env node
// `npm run cluster`: a three-node keyraft cluster on this machine.
//
//   node   HTTP (v1 API)        Raft (cluster port)   data
//   n1     127.0.0.1:8081       127.0.0.1:7001        ./data/cluster/n1
//   n2     127.0.0.1:8082       127.0.0.1:7002        ./data/cluster/n2
//   n3     127.0.0.1:8083       127.0.0.1:7003        ./data/cluster/n3
//
// KEYRAFT_CLUSTER_HTTP_BASE / KEYRAFT_CLUSTER_RAFT_BASE move the port ranges; KEYRAFT_ROOT_KEY
// makes that string the root key (else the leader generates one on the first start and it is
// printed once); KEYRAFT_CLUSTER_SECRET is the shared secret (else one is generated on the first
// start and kept, readable by this user only, in ./data/cluster/secret). Node logs go to
// ./data/cluster/<id>/node.log. A status line shows who leads. Ctrl-C stops every node cleanly.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createWriteStream, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const usage = `usage: npm run cluster [-- --help]

Starts a three-node keyraft cluster on this machine: HTTP on 127.0.0.1:8081-8083, Raft on
127.0.0.1:7001-7003, data and node logs under ./data/cluster. Ctrl-C stops every node.

environment:
  KEYRAFT_CLUSTER_HTTP_BASE   first HTTP port (default 8081)
  KEYRAFT_CLUSTER_RAFT_BASE   first Raft port (default 7001)
  KEYRAFT_CLUSTER_DIR         data directory (default ./data/cluster)
  KEYRAFT_ROOT_KEY            the root key (default: generated on the first start and printed once)
  KEYRAFT_CLUSTER_SECRET      the shared secret (default: generated once, kept in <data dir>/secret)`;

try {
  if (parseArgs({ strict: true, allowPositionals: false, options: { help: { type: "boolean" } } }).values.help) {
    process.stdout.write(`${usage}\n`);
    process.exit(0);
  }
} catch (error) {
  // One line and exit 2 on a bad flag, like every command-line tool of the repository.
  process.stderr.write(`cluster: ${error.message.split("\n")[0]} (see --help)\n`);
  process.exit(2);
}

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const mainJs = join(repoRoot, "packages/gateway/dist/main.js");
const clusterDir = resolve(process.env.KEYRAFT_CLUSTER_DIR ?? join(repoRoot, "data/cluster"));
const httpBase = Number(process.env.KEYRAFT_CLUSTER_HTTP_BASE ?? 8081);
const raftBase = Number(process.env.KEYRAFT_CLUSTER_RAFT_BASE ?? 7001);
const ids = ["n1", "n2", "n3"];
const statusEveryMs = 1000;
/** The root key the status line reads GET /v1/cluster.status with: KEYRAFT_ROOT_KEY, or the one a node generated and printed. */
let statusRootKey = process.env.KEYRAFT_ROOT_KEY || null;
const stopTimeoutMs = 15_000;

if (!existsSync(mainJs)) {
  process.stderr.write(`cluster: ${mainJs} is missing; run \`npm run build\` first (npm run cluster does)\n`);
  process.exit(2);
}
mkdirSync(clusterDir, { recursive: true });
const secret = process.env.KEYRAFT_CLUSTER_SECRET ?? loadOrCreateSecret(join(clusterDir, "secret"));
const peers = ids.map((id, i) => `${id}=127.0.0.1:${raftBase + i}`).join(",");

const nodes = ids.map((id, i) => startNode(id, httpBase + i));
process.stdout.write(
  `keyraft cluster: ${ids.map((id, i) => `${id} http://127.0.0.1:${httpBase + i} (raft ${raftBase + i})`).join(", ")}\n` +
    `data and logs under ${clusterDir}; Ctrl-C stops every node\n`,
);

let stopping = false;
const statusTimer = setInterval(() => void showStatus(), statusEveryMs);
process.on("SIGINT", () => void stopAll("SIGINT"));
process.on("SIGTERM", () => void stopAll("SIGTERM"));

function loadOrCreateSecret(path) {
  if (existsSync(path)) return readFileSync(path, "utf8").trim();
  const created = randomBytes(32).toString("hex");
  writeFileSync(path, `${created}\n`, { mode: 0o600 });
  return created;
}

function startNode(id, httpPort) {
  const dataDir = join(clusterDir, id);
  mkdirSync(dataDir, { recursive: true });
  const log = createWriteStream(join(dataDir, "node.log"), { flags: "a" });
  const env = {
    ...process.env,
    PORT: String(httpPort),
    HOST: process.env.HOST ?? "127.0.0.1",
    KEYRAFT_DATA_DIR: dataDir,
    KEYRAFT_NODE_ID: id,
    KEYRAFT_PEERS: peers,
    KEYRAFT_CLUSTER_SECRET: secret,
  };
  // Own process group: a Ctrl-C in the terminal reaches this script only, which stops the nodes one signal each.
  const child = spawn(process.execPath, [mainJs], {
    cwd: repoRoot,
    env,
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  const node = { id, httpPort, child, exited: null };
  let pending = "";
  child.stdout.on("data", (chunk) => {
    log.write(chunk);
    pending += String(chunk);
    const lines = pending.split("\n");
    pending = lines.pop() ?? "";
    for (const line of lines) {
      // The generated root key is printed by the node once, outside its logs: pass it on once.
      if (line.startsWith("root key (shown once")) {
        process.stdout.write(`\n${id}: ${line}\n\n`);
        statusRootKey = line.slice(line.lastIndexOf(" ") + 1);
      }
    }
  });
  child.stderr.on("data", (chunk) => {
    log.write(chunk);
    process.stderr.write(`${id}: ${chunk}`);
  });
  child.on("exit", (code, signal) => {
    node.exited = signal ?? code;
    log.end();
    if (!stopping)
      process.stderr.write(`\ncluster: ${id} exited (${signal ?? code}); see ${join(dataDir, "node.log")}\n`);
  });
  return node;
}

async function nodeStatus(node) {
  if (node.exited !== null) return `${node.id} exited(${node.exited})`;
  try {
    if (statusRootKey === null) return `${node.id} (status needs KEYRAFT_ROOT_KEY)`;
    const response = await fetch(`http://127.0.0.1:${node.httpPort}/v1/cluster.status`, {
      headers: { authorization: `Bearer ${statusRootKey}` },
      signal: AbortSignal.timeout(800),
    });
    if (response.status === 401 || response.status === 403) return `${node.id} (status: the root key was refused)`;
    if (response.status !== 200) return `${node.id} starting`;
    const status = await response.json();
    const stale = status.stale ? ` STALE ${status.stalenessMs}ms` : "";
    return `${node.id} ${status.role} term ${status.term} applied ${status.appliedIndex}${stale}`;
  } catch {
    return `${node.id} starting`;
  }
}

async function showStatus() {
  if (stopping) return;
  const parts = await Promise.all(nodes.map(nodeStatus));
  const leader = parts.find((part) => part.includes(" leader "));
  const line = `[${new Date().toISOString().slice(11, 19)}] leader: ${leader === undefined ? "none yet" : leader.split(" ")[0]} | ${parts.join(" | ")}`;
  if (process.stdout.isTTY) process.stdout.write(`\r\x1b[2K${line}`);
  else process.stdout.write(`${line}\n`);
}

async function stopAll(signal) {
  if (stopping) {
    process.stderr.write("\ncluster: second signal, killing every node\n");
    for (const node of nodes) if (node.exited === null) node.child.kill("SIGKILL");
    process.exit(1);
  }
  stopping = true;
  clearInterval(statusTimer);
  process.stdout.write(`\ncluster: ${signal}: stopping every node\n`);
  const exits = nodes.map((node) =>
    node.exited !== null ? Promise.resolve() : new Promise((done) => node.child.once("exit", done)),
  );
  for (const node of nodes) if (node.exited === null) node.child.kill("SIGTERM");
  const timer = setTimeout(() => {
    process.stderr.write("cluster: a node did not stop in time; killing it\n");
    for (const node of nodes) if (node.exited === null) node.child.kill("SIGKILL");
  }, stopTimeoutMs);
  await Promise.all(exits);
  clearTimeout(timer);
  const failed = nodes.filter((node) => node.exited !== 0 && node.exited !== "SIGTERM");
  process.stdout.write(`cluster: stopped (${nodes.map((node) => `${node.id} ${node.exited}`).join(", ")})\n`);
  process.exit(failed.length === 0 ? 0 : 1);
}
