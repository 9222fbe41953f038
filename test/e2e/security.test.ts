// One node as a process (the probes, scaled down): private data directory, HTTP timeouts
// and connection cap, the API over TLS, and KEYRAFT_ROOT_KEY after a revocation through the API.
import { chmod, mkdir, mkdtemp, readdir, rm, stat, writeFile } from "node:fs/promises";
import { request as httpsRequest } from "node:https";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { makeCa, makeLeaf, writePems } from "../../packages/raft/test/fixtures/certs.js";
import { freePort } from "@keyraft/raft/testing";
import { killAll, spawnNode, startNode, type NodeProcess } from "./node-process.js";

const rootKey = "security_root_0123456789abcdef";
const dirs: string[] = [];
let node: NodeProcess | null = null;

async function freshDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "keyraft-security-"));
  dirs.push(dir);
  return dir;
}
afterEach(async () => {
  node?.child.kill("SIGKILL");
  await node?.exited;
  node = null;
});
afterAll(async () => {
  killAll();
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

async function post(baseUrl: string, path: string, body: unknown, token = rootKey) {
  const response = await fetch(`${baseUrl}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function stop(n: NodeProcess): Promise<void> {
  n.child.kill("SIGTERM");
  await n.exited;
}

async function modes(root: string): Promise<Map<string, number>> {
  const found = new Map<string, number>();
  const visit = async (path: string) => {
    const stats = await stat(path);
    found.set(path, stats.mode & 0o777);
    if (stats.isDirectory()) for (const name of await readdir(path)) await visit(join(path, name));
  };
  await visit(root);
  return found;
}

/** A raw TCP client: what it wrote, and a promise of when the server closed it and what it answered. */
async function rawClient(port: number): Promise<{ socket: Socket; closed: Promise<string> }> {
  const socket = connect({ host: "127.0.0.1", port });
  let answer = "";
  socket.on("data", (chunk) => (answer += String(chunk)));
  socket.on("error", () => undefined);
  const closed = new Promise<string>((resolve) => socket.on("close", () => resolve(answer)));
  await new Promise<void>((resolve) => socket.once("connect", resolve));
  return { socket, closed };
}

describe("the data directory", () => {
  it("is 0700 with files 0600, also when an earlier start left it readable by others", async () => {
    const dataDir = await freshDir();
    await mkdir(join(dataDir, "old"), { mode: 0o755 });
    await writeFile(join(dataDir, "old", "file"), "x", { mode: 0o644 });
    await chmod(dataDir, 0o755);
    node = await startNode(dataDir, { KEYRAFT_ROOT_KEY: rootKey });
    expect((await post(node.baseUrl, "/v1/apis.createApi", { name: "perm-test" })).status).toBe(200);
    await stop(node);
    node = null;
    const found = await modes(dataDir);
    expect(found.size).toBeGreaterThan(5);
    for (const [path, mode] of found) {
      const isDir = (await stat(path)).isDirectory();
      expect([path, mode.toString(8)]).toEqual([path, isDir ? "700" : "600"]);
    }
  });
});

describe("KEYRAFT_ROOT_KEY", () => {
  it("bootstraps once: revoked through the API it stays revoked after a restart, with a warning", async () => {
    const dataDir = await freshDir();
    node = await startNode(dataDir, { KEYRAFT_ROOT_KEY: rootKey });
    const second = await post(node.baseUrl, "/v1/keys.createKey", { apiId: "api_root", permissions: ["*"] });
    const secondKey = second.body["key"] as string;
    const first = await post(node.baseUrl, "/v1/keys.whoami", { key: rootKey }, secondKey);
    const revoke = await post(
      node.baseUrl,
      "/v1/keys.updateKey",
      { keyId: first.body["id"], enabled: false },
      secondKey,
    );
    expect(revoke.status).toBe(200);
    await stop(node);
    node = await startNode(dataDir, { KEYRAFT_ROOT_KEY: rootKey });
    const refused = await post(node.baseUrl, "/v1/apis.createApi", { name: "after-restart" });
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ error: { code: "DISABLED" } });
    expect(node.stdout()).toContain("KEYRAFT_ROOT_KEY was revoked or deleted through the API and stays so");
    expect((await post(node.baseUrl, "/v1/apis.createApi", { name: "by-second" }, secondKey)).status).toBe(200);
  });
});

describe("HTTP edges", () => {
  it("drops slow headers and slow bodies after their timeouts, and caps open connections", async () => {
    const dataDir = await freshDir();
    node = await startNode(dataDir, {
      KEYRAFT_ROOT_KEY: rootKey,
      KEYRAFT_HTTP_REQUEST_TIMEOUT_MS: "1000",
      KEYRAFT_HTTP_HEADERS_TIMEOUT_MS: "500",
      KEYRAFT_HTTP_CONNECTIONS_MAX: "4",
    });
    const slowHeaders = await rawClient(node.port);
    slowHeaders.socket.write("POST /v1/keys.verifyKey HTTP/1.1\r\nHost: x\r\n");
    const slowBody = await rawClient(node.port);
    slowBody.socket.write(
      "POST /v1/keys.verifyKey HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{",
    );
    const startedMs = Date.now();
    const [headersAnswer, bodyAnswer] = await Promise.all([slowHeaders.closed, slowBody.closed]);
    // Closed by the server, well before a client would give up (each within its timeout plus the check interval).
    expect(Date.now() - startedMs).toBeLessThan(5_000);
    expect(headersAnswer).toMatch(/^(HTTP\/1\.1 408|)/);
    expect(bodyAnswer).toMatch(/^(HTTP\/1\.1 408|)/);
    // The cap: with 4 connections open the 5th is closed on arrival; once one goes, requests work again.
    const open = [];
    for (let i = 0; i < 4; i++) open.push(await rawClient(node.port));
    const extra = await rawClient(node.port);
    expect(await extra.closed).toBe("");
    open[0]!.socket.destroy();
    await open[0]!.closed;
    await new Promise((resolve) => setTimeout(resolve, 50));
    open[1]!.socket.destroy();
    await open[1]!.closed;
    const liveness = await fetch(`${node.baseUrl}/v1/liveness`);
    expect(liveness.status).toBe(200);
    for (const client of open) client.socket.destroy();
  });
});

describe("the API over TLS", () => {
  it("serves HTTPS with KEYRAFT_TLS_CERT_FILE and KEYRAFT_TLS_KEY_FILE; clients verify it against the CA", async () => {
    const ca = await makeCa();
    const leaf = await makeLeaf(ca);
    const other = await makeCa("another ca");
    const files = await writePems({ cert: leaf.cert, key: leaf.key, ca: ca.cert, otherCa: other.cert });
    const port = await freePort();
    const spawned = spawnNode({
      PORT: String(port),
      HOST: "127.0.0.1",
      KEYRAFT_DATA_DIR: await freshDir(),
      KEYRAFT_ROOT_KEY: rootKey,
      KEYRAFT_TLS_CERT_FILE: files["cert"]!,
      KEYRAFT_TLS_KEY_FILE: files["key"]!,
    });
    node = { ...spawned, port, baseUrl: `https://127.0.0.1:${port}` };
    const get = (caPem: string) =>
      new Promise<number>((resolve, reject) => {
        const request = httpsRequest({ host: "127.0.0.1", port, path: "/v1/liveness", ca: caPem }, (response) => {
          response.resume();
          resolve(response.statusCode ?? 0);
        });
        request.on("error", reject);
        request.end();
      });
    const deadline = Date.now() + 20_000;
    let status = 0;
    while (status !== 200 && Date.now() < deadline) {
      status = await get(ca.cert).catch(() => 0);
      if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(status).toBe(200);
    await expect(get(other.cert)).rejects.toThrow();
    // Plain HTTP on the TLS port gets no API answer.
    const plain = await fetch(`http://127.0.0.1:${port}/v1/liveness`).then(
      (r) => r.status,
      () => 0,
    );
    expect(plain).not.toBe(200);
  });
});
