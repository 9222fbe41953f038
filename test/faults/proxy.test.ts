import { createServer, connect, type Server, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Packr } from "msgpackr";
import { LinkProxy, helloSource } from "../../cluster/faults/src/proxy.js";

// Two echo servers stand in for two nodes' Raft ports.
const servers: Server[] = [];
let proxy: LinkProxy;

async function echoServer(): Promise<number> {
  const server = createServer((socket) => socket.pipe(socket));
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("no port");
  return address.port;
}

function roundTrip(address: string, text: string, timeoutMs = 1000): Promise<string | "closed"> {
  const [host, port] = address.split(":");
  return new Promise((resolve) => {
    const socket: Socket = connect(Number(port), host);
    let got = "";
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(got === "" ? "closed" : got);
    }, timeoutMs);
    socket.on("connect", () => socket.write(text));
    socket.on("data", (chunk) => {
      got += String(chunk);
      if (got.length >= text.length) {
        clearTimeout(timer);
        socket.destroy();
        resolve(got);
      }
    });
    socket.on("error", () => undefined);
    socket.on("close", () => {
      clearTimeout(timer);
      resolve(got === "" ? "closed" : got);
    });
  });
}

beforeAll(async () => {
  proxy = await LinkProxy.start(
    new Map([
      ["a", await echoServer()],
      ["b", await echoServer()],
    ]),
  );
});

afterAll(async () => {
  await proxy.close();
  for (const s of servers) await new Promise<void>((resolve) => s.close(() => resolve()));
});

describe("LinkProxy", () => {
  it("forwards both ways through each ordered link", async () => {
    expect(await roundTrip(proxy.address("a", "b"), "hello")).toBe("hello");
    expect(await roundTrip(proxy.address("b", "a"), "world")).toBe("world");
    expect(proxy.bytesForwarded()).toBeGreaterThanOrEqual(20);
  });

  it("a cut refuses both directions and drops open connections; heal restores", async () => {
    const [host, port] = proxy.address("a", "b").split(":");
    const open = connect(Number(port), host);
    await new Promise<void>((resolve) => open.on("connect", () => resolve()));
    const closed = new Promise<void>((resolve) => open.on("close", () => resolve()));
    proxy.cutLink("a", "b");
    await closed; // the open connection was dropped
    expect(await roundTrip(proxy.address("a", "b"), "x", 300)).toBe("closed");
    expect(await roundTrip(proxy.address("b", "a"), "x", 300)).toBe("closed");
    proxy.healLink("a", "b");
    expect(await roundTrip(proxy.address("a", "b"), "again")).toBe("again");
  });

  it("partition cuts across groups only", async () => {
    proxy.partition([["a"], ["b"]]);
    expect(await roundTrip(proxy.address("a", "b"), "x", 300)).toBe("closed");
    proxy.healAll();
    expect(await roundTrip(proxy.address("a", "b"), "ok")).toBe("ok");
  });

  it("a node added at run time gets a link to and from every node, cut and partitioned like the others", async () => {
    const own = await LinkProxy.start(
      new Map([
        ["a", await echoServer()],
        ["b", await echoServer()],
      ]),
    );
    try {
      await own.addNode("c", await echoServer());
      await expect(own.addNode("c", 1)).rejects.toThrow(/exists/);
      for (const [from, to] of [
        ["c", "a"],
        ["a", "c"],
        ["c", "b"],
        ["b", "c"],
      ] as const)
        expect(await roundTrip(own.address(from, to), `${from}${to}`)).toBe(`${from}${to}`);
      own.partition([["a", "b"], ["c"]]);
      expect(await roundTrip(own.address("a", "c"), "x", 300)).toBe("closed");
      expect(await roundTrip(own.address("c", "b"), "x", 300)).toBe("closed");
      expect(await roundTrip(own.address("a", "b"), "ab")).toBe("ab");
      own.healAll();
      // Its inbound listener recognizes it as a source.
      expect(await sendBytes(await own.inboundAddress("a"), dialerBytes("c", "a"))).toBeGreaterThan(0);
      expect(own.inboundCounts).toEqual({ identified: 1, unidentified: 0 });
    } finally {
      await own.close();
    }
  });
});

// A dialer's first bytes as a Raft node sends them: the WebSocket upgrade request, then the hello
// frame (msgpack, mask zero: readable as packed). The echo server answers both back.
const packr = new Packr({ useRecords: false, mapsAsObjects: true });
function dialerBytes(from: string, to: string): Buffer {
  const hello = packr.pack({ k: "hello", v: 1, from, to, nonce: Buffer.alloc(32, 7), cluster: "c", incarnation: "i" });
  return Buffer.concat([
    Buffer.from(`GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n\r\n`),
    Buffer.from([0x82, hello.length]),
    hello,
  ]);
}

function sendBytes(address: string, bytes: Buffer, timeoutMs = 1000): Promise<number | "closed"> {
  const [host, port] = address.split(":");
  return new Promise((resolve) => {
    const socket: Socket = connect(Number(port), host);
    let got = 0;
    const finish = (): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(got === 0 ? "closed" : got);
    };
    const timer = setTimeout(finish, timeoutMs);
    socket.on("connect", () => socket.write(bytes));
    socket.on("data", (chunk: Buffer) => {
      got += chunk.length;
      if (got >= bytes.length) finish();
    });
    socket.on("error", () => undefined);
    socket.on("close", finish);
  });
}

describe("helloSource", () => {
  const nodes = new Set(["n1", "n2", "node-with-a-long-name-of-more-than-31-chars"]);
  it("reads the dialer's id from its hello, whatever comes before it", () => {
    expect(helloSource(dialerBytes("n2", "n1"), nodes)).toBe("n2");
    const long = "node-with-a-long-name-of-more-than-31-chars";
    expect(helloSource(dialerBytes(long, "n1"), nodes)).toBe(long);
  });
  it("null until the hello is complete, and for an id it does not know", () => {
    const bytes = dialerBytes("n2", "n1");
    const at = bytes.indexOf(Buffer.from("from")) + 5;
    expect(helloSource(bytes.subarray(0, at), nodes)).toBeNull();
    expect(helloSource(dialerBytes("n9", "n1"), nodes)).toBeNull();
    expect(helloSource(Buffer.from("GET / HTTP/1.1 from n2"), nodes)).toBeNull();
  });
});

describe("LinkProxy inbound listener (a node added back at one address)", () => {
  let three: LinkProxy;
  beforeAll(async () => {
    three = await LinkProxy.start(
      new Map([
        ["a", await echoServer()],
        ["b", await echoServer()],
        ["c", await echoServer()],
      ]),
    );
  });
  afterAll(async () => {
    await three.close();
  });

  it("applies the link state of the source its hello names", async () => {
    const toB = await three.inboundAddress("b");
    expect(await three.inboundAddress("b")).toBe(toB); // opened once
    expect(await sendBytes(toB, dialerBytes("a", "b"))).toBe(dialerBytes("a", "b").length);
    three.cutLink("a", "b");
    expect(await sendBytes(toB, dialerBytes("a", "b"), 300)).toBe("closed");
    expect(await sendBytes(toB, dialerBytes("c", "b"))).toBe(dialerBytes("c", "b").length);
    three.healAll();
    three.partition([["b"], ["a", "c"]]);
    expect(await sendBytes(toB, dialerBytes("c", "b"), 300)).toBe("closed");
    three.healAll();
    expect(await sendBytes(toB, dialerBytes("a", "b"))).toBe(dialerBytes("a", "b").length);
  });

  it("a later cut drops an identified open connection of that source only", async () => {
    const toB = await three.inboundAddress("b");
    const open = (from: string): Promise<{ socket: Socket; closed: Promise<boolean> }> =>
      new Promise((resolve) => {
        const [host, port] = toB.split(":");
        const socket = connect(Number(port), host);
        socket.on("error", () => undefined);
        const closed = new Promise<boolean>((done) => socket.on("close", () => done(true)));
        // Identified once the hello went through (the echo comes back).
        socket.once("data", () => resolve({ socket, closed }));
        socket.on("connect", () => socket.write(dialerBytes(from, "b")));
      });
    const fromA = await open("a");
    const fromC = await open("c");
    three.cutLink("a", "b");
    expect(await fromA.closed).toBe(true);
    const cStillOpen = await Promise.race([fromC.closed, new Promise<boolean>((r) => setTimeout(() => r(false), 200))]);
    expect(cStillOpen).toBe(false);
    fromC.socket.destroy();
    three.healAll();
  });
});
