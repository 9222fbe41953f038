#!/usr/bin/env node
// `npm run cluster:ctl -- <command>`: look at and change a running keyraft cluster over HTTP.
//
//   status                         every member's view (role, term, leader, indexes, staleness, lag)
//   add <nodeId> <host:raftPort>   add a node (started beforehand with KEYRAFT_JOIN=true); waits until it is a voter
//   remove <nodeId>                remove a node from the cluster
//
// Options: --url http://host:port (a member's HTTP address; default http://127.0.0.1:8081, or
// KEYRAFT_URL), --timeout seconds (add: how long to wait for the catch-up; default 120).
// Every command needs a root key from KEYRAFT_ROOT_KEY (holding `*`; status also takes one holding cluster.*.read).

import { parseArgs } from "node:util";

const usage = `usage: npm run cluster:ctl -- status | add <nodeId> <host:raftPort> | remove <nodeId>  [--url http://127.0.0.1:8081] [--timeout 120]
every command reads the root key from KEYRAFT_ROOT_KEY`;

let parsed;
try {
  parsed = parseArgs({
    allowPositionals: true,
    strict: true,
    options: { url: { type: "string" }, timeout: { type: "string" }, help: { type: "boolean" } },
  });
} catch (error) {
  // One line and exit 2 on a bad flag, like every command-line tool of the repository.
  fail(`cluster:ctl: ${error.message.split("\n")[0]} (see --help)`);
}
if (parsed.values.help === true) {
  process.stdout.write(`${usage}\n`);
  process.exit(0);
}
const baseUrl = (parsed.values.url ?? process.env.KEYRAFT_URL ?? "http://127.0.0.1:8081").replace(/\/$/, "");
const timeoutS = Number(parsed.values.timeout ?? "120");
if (!Number.isFinite(timeoutS) || timeoutS <= 0) fail("cluster:ctl: --timeout needs a positive number of seconds");
const [command, ...rest] = parsed.positionals;

try {
  switch (command) {
    case "status":
      await status();
      break;
    case "add":
      if (rest.length !== 2) fail(usage);
      await add(rest[0], rest[1]);
      break;
    case "remove":
      if (rest.length !== 1) fail(usage);
      await remove(rest[0]);
      break;
    default:
      fail(usage);
  }
} catch (error) {
  fail(`cluster:ctl: ${error instanceof Error ? error.message : String(error)}`);
}

function fail(message) {
  process.stderr.write(`${message}\n`);
  process.exit(2);
}

function rootKey() {
  const key = process.env.KEYRAFT_ROOT_KEY;
  if (key === undefined || key === "") fail("cluster:ctl: set KEYRAFT_ROOT_KEY to a root key holding `*`");
  return key;
}

async function getStatus(url) {
  const response = await fetch(`${url}/v1/cluster.status`, {
    headers: { authorization: `Bearer ${rootKey()}` },
    signal: AbortSignal.timeout(3000),
  });
  if (response.status !== 200) throw new Error(`${url}: status ${response.status}`);
  return response.json();
}

async function post(path, body) {
  const response = await fetch(`${baseUrl}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${rootKey()}` },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(30_000),
  });
  const answer = await response.json().catch(() => ({}));
  if (response.status !== 200)
    throw new Error(`${path}: ${response.status} ${answer?.error?.code ?? ""} ${answer?.error?.message ?? ""}`);
  return answer;
}

function describe(status) {
  const peers = status.peers
    .map((peer) => {
      const role = peer.voter ? "voter  " : "learner";
      const address = peer.address ?? "(address unknown here)";
      return `    ${peer.id.padEnd(8)} ${role} ${address}  lag ${peer.lag ?? "?"}${peer.connected === false ? "  DISCONNECTED" : ""}`;
    })
    .join("\n");
  return (
    `${status.nodeId}: ${status.role}, term ${status.term}, leader ${status.leader ?? "none"}, commit ${status.commitIndex}, applied ${status.appliedIndex}, ` +
    `snapshot ${status.snapshotIndex}, staleness ${status.stalenessMs} ms${status.stale ? " (STALE)" : ""}\n${peers}`
  );
}

async function status() {
  const status = await getStatus(baseUrl);
  process.stdout.write(`${describe(status)}\n`);
  if (status.selfLag !== null && status.role !== "leader")
    process.stdout.write(
      `(${status.nodeId} is ${status.selfLag} entries behind the leader ${status.leader}; lags are the leader's view)\n`,
    );
}

async function add(nodeId, address) {
  const answer = await post("/v1/cluster.addNode", { nodeId, address });
  process.stdout.write(
    `${nodeId} added as a learner at index ${answer.index}; waiting until it has caught up and is a voter\n`,
  );
  const deadline = Date.now() + timeoutS * 1000;
  while (Date.now() < deadline) {
    const status = await getStatus(baseUrl).catch(() => null);
    if (status?.voters.includes(nodeId)) {
      process.stdout.write(`${nodeId} is a voter (${status.voters.join(", ")})\n`);
      return;
    }
    const peer = status?.peers.find((candidate) => candidate.id === nodeId);
    process.stdout.write(`  ${nodeId}: lag ${peer?.lag ?? "?"}\n`);
    await new Promise((done) => setTimeout(done, 1000));
  }
  throw new Error(
    `${nodeId} did not become a voter within ${timeoutS} s; is it running with KEYRAFT_JOIN=true and reachable at ${address}?`,
  );
}

async function remove(nodeId) {
  const answer = await post("/v1/cluster.removeNode", { nodeId });
  process.stdout.write(`${nodeId} removed at index ${answer.index}; stop its process now\n`);
}
