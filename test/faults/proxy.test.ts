import { createServer, connect, type Server, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LinkProxy } from "../../cluster/faults/src/proxy.js";

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
});
