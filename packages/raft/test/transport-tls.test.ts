// TLS between nodes (certificates made in the test) and the rotation of the cluster secret:
// peers verify each other against the CA, the HMAC handshake stays as the second factor, and a
// node knowing {new, old} talks to nodes knowing only one of them.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { WsTransport, type TransportTls } from "../src/transport/ws-transport.js";
import { makeCa, makeLeaf, type Pem } from "./fixtures/certs.js";

interface TestMessage {
  type: "ping";
  from: string;
  to: string;
  term: number;
  n: number;
}

const oldSecret = "the old cluster secret, 32 chars";
const newSecret = "the new cluster secret, 32 chars";
const open: WsTransport<TestMessage>[] = [];
let ca: Pem;
let otherCa: Pem;
let tlsOf: () => Promise<TransportTls>;

beforeAll(async () => {
  ca = await makeCa();
  otherCa = await makeCa("an impostor ca");
  tlsOf = async () => {
    const leaf = await makeLeaf(ca);
    return { cert: leaf.cert, key: leaf.key, ca: ca.cert };
  };
});
afterEach(async () => {
  await Promise.all(open.splice(0).map((t) => t.close()));
});
afterAll(() => undefined);

async function node(id: string, options: { secret?: string; previousSecret?: string; tls?: TransportTls } = {}) {
  const received: TestMessage[] = [];
  const transport = new WsTransport<TestMessage>({
    id,
    secret: options.secret ?? newSecret,
    ...(options.previousSecret === undefined ? {} : { previousSecret: options.previousSecret }),
    ...(options.tls === undefined ? {} : { tls: options.tls }),
    onMessage: (m) => received.push(m),
    limits: { backoffBaseMs: 20, backoffMaxMs: 100 },
  });
  open.push(transport);
  const { port } = await transport.start();
  return { id, transport, received, port };
}

type Node = Awaited<ReturnType<typeof node>>;

function link(...nodes: Node[]): void {
  for (const a of nodes) for (const b of nodes) if (a !== b) a.transport.addPeer(b.id, `ws://127.0.0.1:${b.port}`);
}

async function until(condition: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error("condition not reached in time");
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** Sends a ping each way and reports whether both arrived within `waitMs`. */
async function talk(a: Node, b: Node, waitMs = 1500): Promise<boolean> {
  const before = [a.received.length, b.received.length];
  a.transport.send([{ type: "ping", from: a.id, to: b.id, term: 1, n: 1 }]);
  b.transport.send([{ type: "ping", from: b.id, to: a.id, term: 1, n: 2 }]);
  try {
    await until(() => a.received.length > before[0]! && b.received.length > before[1]!, waitMs);
    return true;
  } catch {
    return false;
  }
}

describe("TLS between nodes", () => {
  it("peers with certificates of the cluster's CA connect over wss and exchange messages", async () => {
    const a = await node("a", { tls: await tlsOf() });
    const b = await node("b", { tls: await tlsOf() });
    link(a, b);
    expect(await talk(a, b)).toBe(true);
    expect(a.transport.isConnected("b") && b.transport.isConnected("a")).toBe(true);
  });

  it("refuses a peer whose certificate another CA signed, both ways", async () => {
    const a = await node("a", { tls: await tlsOf() });
    const impostorLeaf = await makeLeaf(otherCa);
    // The impostor trusts the cluster's CA (it wants in), but its own certificate is not the cluster's.
    const b = await node("b", { tls: { cert: impostorLeaf.cert, key: impostorLeaf.key, ca: ca.cert } });
    link(a, b);
    expect(await talk(a, b, 1000)).toBe(false);
    expect(a.transport.isConnected("b")).toBe(false);
    expect(b.transport.stats().peers["a"]?.dialFailures).toBeGreaterThan(0);
  });

  it("refuses a client without a certificate, and a plain ws client", async () => {
    const a = await node("a", { tls: await tlsOf() });
    const noCert = new WebSocket(`wss://127.0.0.1:${a.port}`, { ca: ca.cert });
    const noCertFailed = new Promise<boolean>((resolve) => {
      noCert.on("open", () => resolve(false));
      noCert.on("error", () => resolve(true));
      noCert.on("close", () => resolve(true));
    });
    expect(await noCertFailed).toBe(true);
    const plain = new WebSocket(`ws://127.0.0.1:${a.port}`);
    const plainFailed = new Promise<boolean>((resolve) => {
      plain.on("open", () => resolve(false));
      plain.on("error", () => resolve(true));
      plain.on("close", () => resolve(true));
    });
    expect(await plainFailed).toBe(true);
  });

  it("keeps the HMAC handshake as the second factor: a right certificate with a wrong secret is refused", async () => {
    const a = await node("a", { tls: await tlsOf() });
    const b = await node("b", { tls: await tlsOf(), secret: "some other secret of 32 chars..." });
    link(a, b);
    expect(await talk(a, b, 1000)).toBe(false);
    await until(() => a.transport.stats().authFailures + b.transport.stats().authFailures > 0);
  });
});

describe("rotating the cluster secret", () => {
  it("a node with {new, previous: old} talks to nodes knowing only old or only new, in both roles", async () => {
    const rolled = await node("a", { secret: newSecret, previousSecret: oldSecret });
    const old = await node("b", { secret: oldSecret });
    const fresh = await node("c", { secret: newSecret });
    link(rolled, old, fresh);
    expect(await talk(rolled, old)).toBe(true);
    expect(await talk(rolled, fresh)).toBe(true);
    // Only nodes sharing no secret stay apart: why the old secret is removed last.
    expect(await talk(old, fresh, 800)).toBe(false);
  });

  it("the whole roll: old → {new, old} → new, one node at a time, each pair connected at every step", async () => {
    const ids = ["a", "b", "c"];
    let nodes: Node[] = [];
    const ports = new Map<string, number>();
    for (const id of ids) {
      const n = await node(id, { secret: oldSecret });
      ports.set(id, n.port);
      nodes.push(n);
    }
    link(...nodes);
    const restart = async (index: number, options: { secret: string; previousSecret?: string }) => {
      const stopped = nodes[index]!;
      await stopped.transport.close();
      open.splice(open.indexOf(stopped.transport), 1);
      const received: TestMessage[] = [];
      const transport = new WsTransport<TestMessage>({
        id: stopped.id,
        ...options,
        port: ports.get(stopped.id)!,
        onMessage: (m) => received.push(m),
        limits: { backoffBaseMs: 20, backoffMaxMs: 100 },
      });
      open.push(transport);
      await transport.start();
      nodes[index] = { id: stopped.id, transport, received, port: ports.get(stopped.id)! };
      for (const other of nodes)
        if (other.id !== stopped.id) transport.addPeer(other.id, `ws://127.0.0.1:${other.port}`);
    };
    const allTalk = async () => {
      for (let i = 0; i < nodes.length; i++)
        for (let j = i + 1; j < nodes.length; j++) expect(await talk(nodes[i]!, nodes[j]!)).toBe(true);
    };
    await allTalk();
    for (let i = 0; i < nodes.length; i++) {
      await restart(i, { secret: newSecret, previousSecret: oldSecret });
      await allTalk();
    }
    for (let i = 0; i < nodes.length; i++) {
      await restart(i, { secret: newSecret });
      await allTalk();
    }
    nodes = [];
  });
});
