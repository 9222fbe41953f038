import { afterEach, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { backoffDelayMs } from "../src/transport/backoff.js";
import { buildFrame, decodeValue, encodeValue } from "../src/transport/codec.js";
import { computeProof, newNonce, parseHandshake } from "../src/transport/handshake.js";
import { SendQueue } from "../src/transport/send-queue.js";
import { closeCodes } from "../src/transport/transport.js";
import { WsTransport, type WsTransportLimits } from "../src/transport/ws-transport.js";
import type { Logger } from "../src/logger.js";

interface TestMessage {
  type: "ping";
  from: string;
  to: string;
  term: number;
  n: number;
  data?: Uint8Array;
}

const secret = "correct horse battery staple 42";
const open: WsTransport<TestMessage>[] = [];

afterEach(async () => {
  await Promise.all(open.splice(0).map((t) => t.close()));
});

interface Node {
  transport: WsTransport<TestMessage>;
  received: TestMessage[];
  logs: { level: string; fields: object; message: string }[];
  port: number;
}

function capture(logs: Node["logs"]): Logger {
  const at = (level: string) => (fields: object, message: string) => void logs.push({ level, fields, message });
  return { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") };
}

async function node(
  id: string,
  options: { secret?: string; port?: number; limits?: Partial<WsTransportLimits> } = {},
): Promise<Node> {
  const received: TestMessage[] = [];
  const logs: Node["logs"] = [];
  const transport = new WsTransport<TestMessage>({
    id,
    secret: options.secret ?? secret,
    port: options.port ?? 0,
    onMessage: (m) => received.push(m),
    logger: capture(logs),
    limits: { backoffBaseMs: 20, backoffMaxMs: 200, ...options.limits },
  });
  open.push(transport);
  const { port } = await transport.start();
  return { transport, received, logs, port };
}

function link(nodes: Record<string, Node>): void {
  for (const [id, a] of Object.entries(nodes)) {
    for (const [peerId, b] of Object.entries(nodes))
      if (peerId !== id) a.transport.addPeer(peerId, `ws://127.0.0.1:${b.port}`);
  }
}

function ping(from: string, to: string, n: number): TestMessage {
  return { type: "ping", from, to, term: 1, n };
}

async function until(condition: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error("condition not reached in time");
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** A hand-driven client speaking the handshake, to test what a well-behaved transport never sends. */
async function rawDial(port: number, from: string, to: string, clientSecret: string) {
  const socket = new WebSocket(`ws://127.0.0.1:${port}`);
  const closed = new Promise<number>((resolve) => socket.on("close", (code) => resolve(code)));
  socket.on("error", () => undefined);
  await new Promise((resolve) => socket.once("open", resolve));
  const nonce = newNonce();
  socket.send(encodeValue({ k: "hello", v: 1, from, to, nonce }));
  const challenge = await Promise.race([
    new Promise<unknown>((resolve) => socket.once("message", (data) => resolve(decodeValue(data as Buffer)))),
    closed.then(() => null),
  ]);
  const frame = parseHandshake(challenge);
  if (frame?.k === "challenge") {
    const proof = computeProof(new TextEncoder().encode(clientSecret), {
      role: "dialer",
      dialer: from,
      acceptor: to,
      dialerNonce: nonce,
      acceptorNonce: frame.nonce,
    });
    socket.send(encodeValue({ k: "proof", proof }));
  }
  return { socket, closed, challenged: frame?.k === "challenge" };
}

describe("WsTransport on loopback", () => {
  it("connections that never name a known node cannot lock a peer out: the oldest is closed to admit a new one", async () => {
    // All strangers come from 127.0.0.1: lift the per-address cap so the global one is what is tested.
    const a = await node("a", { limits: { handshakesPendingMax: 4, handshakesPendingPerAddressMax: 16 } });
    const strangers = await Promise.all(
      Array.from({ length: 6 }, async () => {
        const socket = new WebSocket(`ws://127.0.0.1:${a.port}`);
        socket.on("error", () => undefined);
        const closed = new Promise<number>((resolve) => socket.on("close", (code) => resolve(code)));
        await new Promise((resolve) => socket.once("open", resolve));
        return { socket, closed };
      }),
    ); // open, silent: mid-handshake until the timeout
    expect(await strangers[0]?.closed).toBe(closeCodes.busy); // the oldest made room
    const b = await node("b");
    link({ a, b });
    b.transport.send([ping("b", "a", 1)]);
    await until(() => a.received.length === 1);
    expect(a.transport.isConnected("b")).toBe(true);
    expect(
      a.logs.some((log) => log.message === "raft transport: too many pending handshakes, dropped the oldest"),
    ).toBe(true);
    for (const stranger of strangers) stranger.socket.terminate();
  });

  it("two transports exchange messages both ways over one connection", async () => {
    const a = await node("a");
    const b = await node("b");
    link({ a, b });
    a.transport.send([ping("a", "b", 1), ping("a", "b", 2)]);
    b.transport.send([ping("b", "a", 3)]);
    await until(() => b.received.length === 2 && a.received.length === 1);
    expect(b.received.map((m) => m.n)).toEqual([1, 2]);
    expect(a.received[0]).toEqual(ping("b", "a", 3));
    await new Promise((resolve) => setTimeout(resolve, 100)); // let a duplicate dial settle
    expect(a.transport.isConnected("b") && b.transport.isConnected("a")).toBe(true);
    for (let n = 10; n < 20; n++) a.transport.send([ping("a", "b", n)]);
    await until(() => b.received.length === 12);
    expect(b.received.map((m) => m.n).slice(2)).toEqual([10, 11, 12, 13, 14, 15, 16, 17, 18, 19]); // in order on one connection
    expect(a.transport.stats().peers["b"]?.sentFrames).toBeLessThan(a.transport.stats().peers["b"]?.sentMessages ?? 0); // batched
  });

  it("three transports form a mesh; binary payloads survive", async () => {
    const nodes = { a: await node("a"), b: await node("b"), c: await node("c") };
    link(nodes);
    const payload = new Uint8Array([0, 1, 2, 255]);
    for (const from of ["a", "b", "c"] as const) {
      nodes[from].transport.send(
        ["a", "b", "c"].filter((to) => to !== from).map((to, n) => ({ ...ping(from, to, n), data: payload })),
      );
    }
    await until(() => Object.values(nodes).every((n) => n.received.length === 2));
    for (const [id, n] of Object.entries(nodes)) {
      expect(n.received.every((m) => m.to === id && new Uint8Array(m.data ?? []).join() === payload.join())).toBe(true);
      expect(new Set(n.received.map((m) => m.from)).size).toBe(2);
    }
  });

  it("refuses a peer with the wrong secret, on both roles, and never logs the secret", async () => {
    const a = await node("a");
    const b = await node("b", { secret: "a different secret of length" });
    link({ a, b });
    a.transport.send([ping("a", "b", 1)]);
    b.transport.send([ping("b", "a", 2)]);
    await until(() => a.transport.stats().authFailures >= 1 && b.transport.stats().authFailures >= 1);
    expect(a.received).toEqual([]);
    expect(b.received).toEqual([]);
    expect(a.transport.isConnected("b")).toBe(false);
    const logged = JSON.stringify([...a.logs, ...b.logs]);
    expect(logged).toContain("connection refused");
    expect(logged).not.toContain(secret);
    expect(logged).not.toContain("a different secret");
    // The acceptor itself closes a dialer whose proof is wrong, with the auth code.
    const raw = await rawDial(a.port, "b", "a", "wrong secret, long enough");
    expect(raw.challenged).toBe(true);
    expect(await raw.closed).toBe(closeCodes.authFailed);
  });

  it("refuses an unknown node id and a hello addressed to another node", async () => {
    const a = await node("a");
    a.transport.addPeer("b", "ws://127.0.0.1:1");
    const stranger = await rawDial(a.port, "mallory", "a", secret);
    expect(stranger.challenged).toBe(false);
    expect(await stranger.closed).toBe(closeCodes.unknownNode);
    const misaddressed = await rawDial(a.port, "b", "z", secret);
    expect(await misaddressed.closed).toBe(closeCodes.unknownNode);
    expect(a.transport.stats().refusedConnections).toBeGreaterThanOrEqual(2);
    expect(JSON.stringify(a.logs)).toContain("mallory");
  });

  it("accepts a correct raw dialer, drops messages it sends on behalf of another node", async () => {
    const a = await node("a");
    a.transport.addPeer("b", "ws://127.0.0.1:1");
    a.transport.addPeer("c", "ws://127.0.0.1:1");
    const raw = await rawDial(a.port, "b", "a", secret);
    const frame = (messages: TestMessage[]) =>
      buildFrame(
        messages.map((m) => encodeValue(m)),
        messages.reduce((n, m) => n + encodeValue(m).byteLength, 0),
      );
    raw.socket.send(frame([ping("b", "a", 1), ping("c", "a", 2), ping("b", "x", 3), ping("b", "a", 4)]));
    await until(() => a.received.length === 2);
    expect(a.received.map((m) => m.n)).toEqual([1, 4]);
    expect(a.transport.stats().invalidMessages).toBe(2);
    raw.socket.close();
  });

  it("a node that states no identity (the previous release) still authenticates with one that checks identities", async () => {
    const received: TestMessage[] = [];
    const checked: string[] = [];
    const a = new WsTransport<TestMessage>({
      id: "a",
      secret,
      onMessage: (m) => received.push(m),
      identity: () => ({ cluster: "c1", incarnation: "aaaa" }),
      checkIdentity: (peer, identity) => {
        checked.push(`${peer}:${identity.cluster}:${identity.incarnation}`);
        return null;
      },
    });
    open.push(a);
    const { port } = await a.start();
    a.addPeer("b", "ws://127.0.0.1:1");
    const raw = await rawDial(port, "b", "a", secret); // its hello has no cluster nor incarnation
    const message = ping("b", "a", 1);
    raw.socket.send(buildFrame([encodeValue(message)], encodeValue(message).byteLength));
    await until(() => received.length === 1);
    expect(checked).toEqual(["b::"]);
    raw.socket.close();
  });

  it("refuses frames over frameBytesMax (1009) and oversize handshake frames", async () => {
    const limits = { messageBytesMax: 1000, frameBytesMax: 2000, sendQueueBytesMax: 10_000 };
    const a = await node("a", { limits });
    a.transport.addPeer("b", "ws://127.0.0.1:1");
    const raw = await rawDial(a.port, "b", "a", secret);
    raw.socket.send(new Uint8Array(2000)); // at the limit: accepted by ws, then refused as undecodable/not an array
    raw.socket.send(new Uint8Array(2001)); // past it
    expect(await raw.closed).toBeOneOf([closeCodes.messageTooBig, closeCodes.protocolError]);
    const raw2 = await rawDial(a.port, "b", "a", secret);
    raw2.socket.send(new Uint8Array(2001));
    expect(await raw2.closed).toBe(closeCodes.messageTooBig);
    const early = new WebSocket(`ws://127.0.0.1:${a.port}`);
    const earlyClosed = new Promise<number>((resolve) => early.on("close", resolve));
    early.on("open", () => early.send(new Uint8Array(1500)));
    expect(await earlyClosed).toBe(closeCodes.messageTooBig); // pre-auth frames are tiny: refused from the header
  });

  it("drops (and counts) a message over messageBytesMax; one at the limit passes", async () => {
    const a = await node("a", { limits: { messageBytesMax: 1000, frameBytesMax: 2000, sendQueueBytesMax: 10_000 } });
    const b = await node("b", { limits: { messageBytesMax: 1000, frameBytesMax: 2000, sendQueueBytesMax: 10_000 } });
    link({ a, b });
    const overhead = encodeValue({ ...ping("a", "b", 1), data: new Uint8Array(0) }).byteLength;
    const atLimit = { ...ping("a", "b", 1), data: new Uint8Array(1000 - overhead - 2) }; // bin8 -> bin16 header grows by 1..2 bytes
    expect(encodeValue(atLimit).byteLength).toBeLessThanOrEqual(1000);
    a.transport.send([atLimit, { ...ping("a", "b", 2), data: new Uint8Array(1000) }, ping("a", "b", 3)]);
    await until(() => b.received.length === 2);
    expect(b.received.map((m) => m.n)).toEqual([1, 3]);
    expect(a.transport.stats().peers["b"]?.droppedOversize).toBe(1);
    expect(JSON.stringify(a.logs)).toContain("message too large");
  });

  it("reconnects with backoff after the peer restarts, delivering what was queued meanwhile", async () => {
    const a = await node("a");
    let b = await node("b");
    const bPort = b.port;
    link({ a, b });
    a.transport.send([ping("a", "b", 1)]);
    await until(() => b.received.length === 1);
    await b.transport.close();
    await until(() => !a.transport.isConnected("b"));
    a.transport.send([ping("a", "b", 2)]);
    await new Promise((resolve) => setTimeout(resolve, 300)); // a few failed redials
    expect(a.transport.stats().peers["b"]?.dialFailures).toBeGreaterThan(0);
    b = await node("b", { port: bPort });
    b.transport.addPeer("a", `ws://127.0.0.1:${a.port}`);
    await until(() => b.received.length === 1);
    expect(b.received[0]?.n).toBe(2);
    expect(a.transport.stats().peers["b"]?.connects).toBeGreaterThanOrEqual(2);
  });

  it("bounds the send queue per peer, dropping the oldest", async () => {
    const a = await node("a", { limits: { sendQueueMessagesMax: 10 } });
    a.transport.addPeer("b", "ws://127.0.0.1:1"); // nobody listens there
    for (let n = 0; n < 10; n++) a.transport.send([ping("a", "b", n)]);
    expect(a.transport.stats().peers["b"]).toMatchObject({ queuedMessages: 10, droppedQueueFull: 0 }); // at the limit
    a.transport.send([ping("a", "b", 10), ping("a", "b", 11)]);
    expect(a.transport.stats().peers["b"]).toMatchObject({ queuedMessages: 10, droppedQueueFull: 2 }); // past it
    a.transport.send([ping("a", "nobody", 1)]);
    expect(a.transport.stats().droppedUnknownPeer).toBe(1);
  });
});

describe("transport leaves", () => {
  it("SendQueue: byte bound and frames of at most frameBytesMax (at least one message)", () => {
    const queue = new SendQueue(100, 10);
    for (let i = 0; i < 5; i++) queue.push(new Uint8Array(2));
    expect([queue.length, queue.bytes, queue.dropped]).toEqual([5, 10, 0]);
    queue.push(new Uint8Array(3));
    expect([queue.length, queue.bytes, queue.dropped]).toEqual([4, 9, 2]);
    expect(queue.takeFrame(6).encoded.map((b) => b.byteLength)).toEqual([2, 2]); // 1 header + 2 + 2 <= 6; + 2 would be 7
    expect(queue.takeFrame(1).encoded).toHaveLength(1); // always at least one
    expect(queue.length).toBe(1);
  });

  it("buildFrame output decodes as the array of messages", () => {
    for (const count of [1, 15, 16, 300]) {
      const messages = Array.from({ length: count }, (_, n) => ping("a", "b", n));
      const encoded = messages.map((m) => encodeValue(m));
      const frame = buildFrame(
        encoded,
        encoded.reduce((n, b) => n + b.byteLength, 0),
      );
      expect(decodeValue(frame)).toEqual(messages);
    }
  });

  it("backoff doubles up to the cap, with jitter in [d/2, d]", () => {
    const config = { baseMs: 50, maxMs: 1000 };
    expect([0, 1, 2, 3, 4, 5, 10].map((attempt) => backoffDelayMs(config, attempt, 0.999999))).toEqual([
      50, 100, 200, 400, 800, 1000, 1000,
    ]);
    expect(backoffDelayMs(config, 3, 0)).toBe(200);
  });
});
