// The Raft port before authentication (the probes, scaled down): frames larger than a
// handshake are refused from their header, idle connections cannot keep a real peer out, and a
// fuzzer throwing random frames, sizes and slow connections at every node leaves the cluster
// committing.
import { randomBytes } from "node:crypto";
import { connect as netConnect, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { encodeValue } from "../src/transport/codec.js";
import { handshakeBytesMax } from "../src/transport/handshake.js";
import { closeCodes } from "../src/transport/transport.js";
import { WsTransport, type WsTransportLimits } from "../src/transport/ws-transport.js";
import { bytes, leaderOf, startCluster, until, type Member } from "./fixtures/in-process-cluster.js";

interface TestMessage {
  type: "ping";
  from: string;
  to: string;
  term: number;
}

const secret = "correct horse battery staple 42";
const transports: WsTransport<TestMessage>[] = [];
const sockets: { destroy(): void }[] = [];
let members: Member[] = [];

afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  await Promise.all(transports.splice(0).map((t) => t.close()));
  await Promise.all(members.map((m) => m.node.stop()));
  members = [];
});

async function transport(id: string, limits: Partial<WsTransportLimits> = {}) {
  const received: TestMessage[] = [];
  const t = new WsTransport<TestMessage>({
    id,
    secret,
    onMessage: (m) => received.push(m),
    limits: { backoffBaseMs: 20, backoffMaxMs: 100, ...limits },
  });
  transports.push(t);
  const { port } = await t.start();
  return { t, port, received };
}

/** A TCP connection from `localAddress` that completes the WebSocket upgrade and then does what the test says. */
async function rawUpgrade(port: number, localAddress = "127.0.0.1"): Promise<{ socket: Socket; received: Buffer[] }> {
  const socket = netConnect({ host: "127.0.0.1", port, localAddress });
  sockets.push(socket);
  const received: Buffer[] = [];
  socket.on("error", () => undefined);
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", resolve);
    socket.once("error", reject);
  });
  socket.write(
    "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
      `Sec-WebSocket-Key: ${randomBytes(16).toString("base64")}\r\nSec-WebSocket-Version: 13\r\n\r\n`,
  );
  await new Promise<void>((resolve) => {
    const onData = (chunk: Buffer) => {
      const text = chunk.toString("latin1");
      const end = text.indexOf("\r\n\r\n");
      if (end < 0) return;
      socket.off("data", onData);
      if (chunk.byteLength > end + 4) received.push(chunk.subarray(end + 4));
      socket.on("data", (more: Buffer) => received.push(more));
      resolve();
    };
    socket.on("data", onData);
  });
  return { socket, received };
}

/** The header of a masked binary frame announcing `length` bytes of payload. */
function frameHeader(length: number): Buffer {
  const header = Buffer.alloc(14);
  header[0] = 0x82;
  header[1] = 0x80 | 127;
  header.writeBigUInt64BE(BigInt(length), 2);
  randomBytes(4).copy(header, 10);
  return header;
}

/** The close code of a server close frame among the received bytes (server frames are unmasked). */
function closeCodeOf(received: Buffer[]): number | null {
  const data = Buffer.concat(received);
  for (let at = 0; at + 4 <= data.byteLength;) {
    const opcode = data[at]! & 0x0f;
    const length = data[at + 1]! & 0x7f;
    if (opcode === 0x8 && length >= 2) return data.readUInt16BE(at + 2);
    at += 2 + length;
  }
  return null;
}

const longTimeouts = { handshakeTimeoutMs: 60_000, acceptHandshakeTimeoutMs: 60_000 };

describe("WsTransport before authentication", () => {
  it(`refuses a frame announcing more than ${handshakeBytesMax} bytes from its header, before the payload`, async () => {
    const a = await transport("a", longTimeouts);
    const raw = await rawUpgrade(a.port);
    raw.socket.write(frameHeader(16 << 20)); // a 16 MiB frame announced, no byte of it sent
    await until(() => closeCodeOf(raw.received) !== null, 5_000, "a close frame");
    expect(closeCodeOf(raw.received)).toBe(closeCodes.messageTooBig);
  });

  it("accepts a frame at the handshake size before authentication, and full-size frames after it", async () => {
    const a = await transport("a", { messageBytesMax: 100_000, frameBytesMax: 200_000 });
    const b = await transport("b", { messageBytesMax: 100_000, frameBytesMax: 200_000 });
    a.t.addPeer("b", `ws://127.0.0.1:${b.port}`);
    b.t.addPeer("a", `ws://127.0.0.1:${a.port}`);
    // Pre-auth: a frame of exactly the handshake size is read (and refused as a bad hello, not as too big).
    const early = new WebSocket(`ws://127.0.0.1:${a.port}`);
    const earlyClosed = new Promise<number>((resolve) => early.on("close", resolve));
    early.on("open", () => early.send(new Uint8Array(handshakeBytesMax)));
    expect(await earlyClosed).toBe(closeCodes.protocolError);
    // Authenticated: a message far past the handshake size passes both ways.
    const big = { type: "ping" as const, from: "a", to: "b", term: 1, data: new Uint8Array(90_000) };
    expect(encodeValue(big).byteLength).toBeGreaterThan(handshakeBytesMax);
    a.t.send([big]);
    b.t.send([{ ...big, from: "b", to: "a" }]);
    await until(() => a.received.length === 1 && b.received.length === 1);
  });

  it("limits pending connections per remote address", async () => {
    const a = await transport("a", { ...longTimeouts, handshakesPendingPerAddressMax: 3 });
    const raws = [];
    for (let i = 0; i < 3; i++) raws.push(await rawUpgrade(a.port, "127.0.0.7"));
    const fourth = await rawUpgrade(a.port, "127.0.0.7");
    await until(() => closeCodeOf(fourth.received) !== null, 5_000, "the fourth refused");
    expect(closeCodeOf(fourth.received)).toBe(closeCodes.busy);
    // Another address still gets a slot.
    const other = await rawUpgrade(a.port, "127.0.0.8");
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(closeCodeOf(other.received)).toBeNull();
    expect(raws.every((raw) => closeCodeOf(raw.received) === null)).toBe(true);
  });

  it("a refused connection that then sends an oversized frame is closed, and the process goes on", async () => {
    // Fuzz seed 531745 of the test below: ws reports a frame past maxPayload as an "error" event
    // of the socket, and a socket refused for its address had no listener, so the error was
    // thrown out of the event loop (a node would crash). Here the refused socket sends one.
    const a = await transport("a", { ...longTimeouts, handshakesPendingPerAddressMax: 1 });
    const first = await rawUpgrade(a.port, "127.0.0.9");
    const refused = await rawUpgrade(a.port, "127.0.0.9");
    refused.socket.write(frameHeader(16 << 20));
    await until(() => closeCodeOf(refused.received) !== null, 5_000, "the second refused");
    expect(closeCodeOf(refused.received)).toBe(closeCodes.busy);
    // Time for the oversized header to be read (an uncaught error fails the run), then the
    // transport still serves: the pending connection is still pending, a peer still connects.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(closeCodeOf(first.received)).toBeNull();
    const b = await transport("b");
    a.t.addPeer("b", `ws://127.0.0.1:${b.port}`);
    b.t.addPeer("a", `ws://127.0.0.1:${a.port}`);
    b.t.send([{ type: "ping", from: "b", to: "a", term: 1 }]);
    await until(() => a.received.length === 1, 5_000, "the peer's message");
  });

  it("drops an idle accepted connection after acceptHandshakeTimeoutMs", async () => {
    const a = await transport("a", { acceptHandshakeTimeoutMs: 200 });
    const raw = await rawUpgrade(a.port);
    await until(() => closeCodeOf(raw.received) !== null, 1_000, "the idle connection dropped");
    expect(closeCodeOf(raw.received)).toBe(closeCodes.handshakeTimeout);
  });

  it("idle connections filling every pending slot do not keep a real peer out", async () => {
    const limits = { ...longTimeouts, handshakesPendingMax: 8 };
    const a = await transport("a", limits);
    const idle = [];
    for (let i = 0; i < 8; i++) idle.push(await rawUpgrade(a.port, `127.0.0.${10 + i}`));
    const b = await transport("b", limits);
    a.t.addPeer("b", `ws://127.0.0.1:${b.port}`);
    b.t.addPeer("a", `ws://127.0.0.1:${a.port}`);
    b.t.send([{ type: "ping", from: "b", to: "a", term: 1 }]);
    await until(() => a.received.length === 1, 5_000, "the peer's message");
    expect(a.t.isConnected("b")).toBe(true);
    expect(idle.some((raw) => closeCodeOf(raw.received) === closeCodes.busy)).toBe(true);
  });
});

describe("fuzzing the Raft port before authentication, with a cluster committing", () => {
  it("random frames, sizes and slow connections from many addresses leave every node committing", async () => {
    const seed = Number(process.env["KEYRAFT_FUZZ_SEED"] ?? Date.now() % 1_000_000);
    console.log(`transport pre-auth fuzz seed ${seed}`);
    let state = seed >>> 0 || 1;
    const random = () => {
      // xorshift32: a replayable stream from the printed seed.
      state ^= state << 13;
      state ^= state >>> 17;
      state ^= state << 5;
      return (state >>> 0) / 0x1_0000_0000;
    };
    const pick = (n: number) => Math.floor(random() * n);
    members = await startCluster(["n1", "n2", "n3"], { transportLimits: { acceptHandshakeTimeoutMs: 300 } });
    let leader = await leaderOf(members);
    let stop = false;
    let attacks = 0;
    const attacker = async () => {
      while (!stop) {
        const target = members[pick(members.length)]!;
        const address = `127.0.${1 + pick(3)}.${1 + pick(200)}`;
        try {
          const raw = await rawUpgrade(target.node.port, address);
          attacks++;
          const action = pick(5);
          if (action === 0)
            raw.socket.write(frameHeader(1 + pick(64 << 20))); // announced, never sent
          else if (action === 1)
            raw.socket.write(randomBytes(1 + pick(4096))); // garbage bytes
          else if (action === 2) {
            // a well-formed frame with random content of a random size
            const ws = new WebSocket(`ws://127.0.0.1:${target.node.port}`, { localAddress: address });
            sockets.push({ destroy: () => ws.terminate() });
            ws.on("error", () => undefined);
            ws.on("open", () => ws.send(randomBytes(pick(2 * handshakeBytesMax))));
          } else if (action === 3) {
            // slow: a hello trickled one byte at a time
            const hello = encodeValue({ k: "hello", v: 1, from: "n9", to: target.id, nonce: randomBytes(32) });
            const frame = Buffer.concat([Buffer.from([0x82, 0x80 | hello.byteLength]), Buffer.alloc(4), hello]);
            void (async () => {
              for (const byte of frame) {
                if (stop || raw.socket.destroyed) break;
                raw.socket.write(Buffer.from([byte]));
                await new Promise((resolve) => setTimeout(resolve, 20));
              }
            })();
          } // action 4: idle
          if (pick(2) === 0) setTimeout(() => raw.socket.destroy(), pick(500));
        } catch {
          // refused or reset: part of the game
        }
        await new Promise((resolve) => setTimeout(resolve, pick(5)));
      }
    };
    const attackers = Array.from({ length: 6 }, () => attacker());
    let committed = 0;
    const deadline = Date.now() + 4_000;
    while (Date.now() < deadline) {
      try {
        await leader.node.propose(bytes(`cmd-${committed}`));
        committed++;
      } catch {
        leader = await leaderOf(members);
      }
    }
    stop = true;
    await Promise.all(attackers);
    console.log(`transport pre-auth fuzz: ${attacks} attacking connections, ${committed} commands committed`);
    expect(attacks).toBeGreaterThan(50);
    expect(committed).toBeGreaterThan(20);
    await until(() => members.every((m) => m.machine.commands.length === leader.machine.commands.length));
    for (const m of members) expect(m.machine.commands).toEqual(leader.machine.commands);
    for (const m of members) {
      const peers = m.node.status().peers;
      for (const p of Object.values(peers)) expect(p.connected).toBe(true);
    }
  }, 30_000);
});
