import { afterEach, describe, expect, it, vi } from "vitest";
import { RawNode } from "../src/core/raw-node.js";
import type { Message } from "../src/core/messages.js";
import { bytes, connect, leaderOf, startMember, until, type Member } from "./fixtures/in-process-cluster.js";

let running: Member[] = [];

afterEach(async () => {
  vi.restoreAllMocks();
  await Promise.all(running.map((m) => m.node.stop()));
  running = [];
});

interface Received {
  from: string;
  text: string;
}

async function pair(handlers: boolean): Promise<{ a: Member; b: Member; got: Record<string, Received[]> }> {
  const got: Record<string, Received[]> = { a: [], b: [] };
  const options = (id: string) =>
    handlers
      ? {
          onAppMessage: (from: string, payload: Uint8Array) =>
            got[id]?.push({ from, text: new TextDecoder().decode(payload) }),
        }
      : {};
  const a = await startMember("a", ["a", "b"], options("a"));
  const b = await startMember("b", ["a", "b"], options("b"));
  running.push(a, b);
  return { a, b, got };
}

describe("RaftNode application channel", () => {
  it("carries payloads both ways on the authenticated connection, in order, and refuses when not connected", async () => {
    const { a, b, got } = await pair(true);
    // No addresses known yet: no connection, nothing sent.
    expect(a.node.sendAppMessage("b", bytes("too early"))).toBe(false);
    expect(a.node.sendAppMessage("nobody", bytes("x"))).toBe(false);
    expect(a.node.sendAppMessage("a", bytes("self"))).toBe(false);
    connect([a, b]);
    await until(
      () =>
        a.node.transportStats().peers["b"]?.connected === true &&
        b.node.transportStats().peers["a"]?.connected === true,
    );
    for (let i = 0; i < 50; i++) expect(a.node.sendAppMessage("b", bytes(`a->b ${i}`))).toBe(true);
    expect(b.node.sendAppMessage("a", bytes("b->a"))).toBe(true);
    await until(() => (got["b"]?.length ?? 0) === 50 && (got["a"]?.length ?? 0) === 1);
    expect(got["b"]).toEqual(Array.from({ length: 50 }, (_, i) => ({ from: "a", text: `a->b ${i}` })));
    expect(got["a"]).toEqual([{ from: "b", text: "b->a" }]);
    expect(a.node.metrics()).toMatchObject({ appMessagesSent: 50, appMessagesReceived: 1, appMessagesDropped: 0 });
    expect(b.node.metrics()).toMatchObject({ appMessagesSent: 1, appMessagesReceived: 50 });
    // Raft on the same connection is unaffected.
    const leader = await leaderOf([a, b]);
    await leader.node.propose(bytes("cmd"));
    expect(leader.node.leaderId).toBe(leader.id);
    await until(() => a.node.leaderId === leader.id && b.node.leaderId === leader.id);
    await a.node.stop();
    expect(a.node.sendAppMessage("b", bytes("after stop"))).toBe(false);
  });

  it("never hands an application message to the Raft core", async () => {
    const stepped: string[] = [];
    const step = RawNode.prototype.step;
    vi.spyOn(RawNode.prototype, "step").mockImplementation(function (this: RawNode, message: Message) {
      stepped.push(message.type);
      return step.call(this, message);
    });
    const { a, b, got } = await pair(true);
    connect([a, b]);
    await leaderOf([a, b]); // Raft traffic flows through step
    expect(stepped.length).toBeGreaterThan(0);
    for (let i = 0; i < 20; i++) expect(b.node.sendAppMessage("a", bytes(`m${i}`))).toBe(true);
    await until(() => (got["a"]?.length ?? 0) === 20);
    expect(stepped).not.toContain("application");
  });

  it("refuses a payload larger than the transport's message limit (false, nothing sent)", async () => {
    const got: Received[] = [];
    const transportLimits = { messageBytesMax: 4096, frameBytesMax: 8192 };
    const onAppMessage = (from: string, payload: Uint8Array) => got.push({ from, text: String(payload.byteLength) });
    const a = await startMember("a", ["a", "b"], { transportLimits });
    const b = await startMember("b", ["a", "b"], { onAppMessage, transportLimits });
    running.push(a, b);
    connect([a, b]);
    await until(() => a.node.transportStats().peers["b"]?.connected === true);
    expect(a.node.sendAppMessage("b", new Uint8Array(8000))).toBe(false);
    expect(a.node.sendAppMessage("b", new Uint8Array(1000))).toBe(true);
    await until(() => got.length === 1);
    expect(got).toEqual([{ from: "a", text: "1000" }]);
    expect(a.node.metrics().appMessagesSent).toBe(1);
  });

  it("without onAppMessage, received application messages are counted as dropped", async () => {
    const { a, b } = await pair(false);
    connect([a, b]);
    await until(() => a.node.transportStats().peers["b"]?.connected === true);
    expect(a.node.sendAppMessage("b", bytes("unheard"))).toBe(true);
    await until(() => b.node.metrics().appMessagesDropped === 1);
    expect(b.node.metrics().appMessagesReceived).toBe(0);
  });
});
