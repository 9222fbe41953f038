// The cluster's small parts in isolation: the staleness monitor (what "stale" means), the leader
// RPC over a loopback channel (answers, not-sent, expiry), and the waiting-request map.
import { describe, expect, it } from "vitest";
import { PendingMap } from "../src/cluster/pending.js";
import { ClusterRpc, type AppChannel, type RpcResult } from "../src/cluster/rpc.js";
import { StalenessMonitor } from "../src/cluster/staleness.js";

const flush = () => new Promise((resolve) => setImmediate(resolve));

describe("StalenessMonitor", () => {
  function monitor(maxStalenessMs: number, caughtUpProbeMsMax = Math.min(maxStalenessMs, 2_000)) {
    let nowMs = 1000;
    const probes: { resolve: () => void; reject: (error: Error) => void; startedAtMs: number }[] = [];
    const staleness = new StalenessMonitor({
      readIndex: () => new Promise<void>((resolve, reject) => probes.push({ resolve, reject, startedAtMs: nowMs })),
      nowMs: () => nowMs,
      probeIntervalMs: 1_000_000, // probes are started by hand below (start() starts one)
      maxStalenessMs,
      caughtUpProbeMsMax,
    });
    const probe = () => (staleness as unknown as { probe(): void }).probe();
    return { staleness, probes, probe, advance: (ms: number) => (nowMs += ms) };
  }

  it("is stale until the first probe completes, then measures from the start of the freshest completed probe", async () => {
    const { staleness, probes, advance } = monitor(500);
    staleness.start();
    expect(staleness.isStale()).toBe(true);
    expect(staleness.everConfirmed).toBe(false);
    advance(200);
    probes[0]?.resolve(); // started at 1000, completed at 1200
    await flush();
    expect(staleness.everConfirmed).toBe(true);
    expect(staleness.stalenessMs()).toBe(200);
    expect(staleness.isStale()).toBe(false);
    advance(300);
    expect(staleness.stalenessMs()).toBe(500);
    expect(staleness.isStale()).toBe(false);
    advance(1);
    expect(staleness.isStale()).toBe(true);
    staleness.stop();
  });

  it("a failed probe (no leader, no quorum) confirms nothing, so staleness keeps growing", async () => {
    const { staleness, probes, advance } = monitor(500);
    staleness.start();
    advance(10);
    probes[0]?.resolve();
    await flush();
    (staleness as unknown as { probe(): void }).probe();
    advance(900);
    probes[1]?.reject(new Error("no leader"));
    await flush();
    expect(staleness.stalenessMs()).toBe(910);
    expect(staleness.isStale()).toBe(true);
    staleness.stop();
  });

  it("an older probe completing late does not move the confirmation back", async () => {
    const { staleness, probes, advance } = monitor(10_000);
    staleness.start(); // probe 0 at 1000
    advance(100);
    (staleness as unknown as { probe(): void }).probe(); // probe 1 at 1100
    probes[1]?.resolve();
    await flush();
    probes[0]?.resolve();
    await flush();
    expect(staleness.stalenessMs()).toBe(0); // measured from 1100, the newer start
    staleness.stop();
  });

  it("a joining node serves only after a probe completes quickly: one that waited for a backlog to apply is too old", async () => {
    const { staleness, probes, probe, advance } = monitor(30_000, 2_000);
    staleness.start(); // probe 0 at 1000: the node has applied nothing yet
    advance(27_000); // it installs a snapshot and applies the entries committed when it asked...
    probes[0]?.resolve();
    await flush();
    // ...so it is at the leader's commit index of 27 s ago, within the 30 s bound, but behind.
    expect(staleness.stalenessMs()).toBe(27_000);
    expect(staleness.isStale()).toBe(true);
    expect(staleness.everConfirmed).toBe(false);
    probe(); // probe 1 at 28000: it keeps up now, the round takes one heartbeat
    advance(40);
    probes[1]?.resolve();
    await flush();
    expect(staleness.isStale()).toBe(false);
    expect(staleness.everConfirmed).toBe(true);
    expect(staleness.stalenessMs()).toBe(40);
    staleness.stop();
  });

  it("a node that went stale serves again only after a quick probe, though a slow one lands within the bound", async () => {
    const { staleness, probes, probe, advance } = monitor(30_000, 2_000);
    staleness.start();
    advance(5);
    probes[0]?.resolve();
    await flush();
    expect(staleness.isStale()).toBe(false);
    advance(30_001); // partitioned: nothing confirmed
    probe(); // probe 1: the probe timer notices the node went stale
    expect(staleness.isStale()).toBe(true);
    advance(5_000); // back, applying what it missed
    probes[1]?.resolve();
    await flush();
    expect(staleness.stalenessMs()).toBe(5_000); // within the bound...
    expect(staleness.isStale()).toBe(true); // ...but the probe waited 5 s for the backlog
    probe(); // probe 2, quick
    advance(10);
    probes[2]?.resolve();
    await flush();
    expect(staleness.isStale()).toBe(false);
    staleness.stop();
  });

  it("a slow probe does not end serving while the node stays within the bound", async () => {
    const { staleness, probes, probe, advance } = monitor(30_000, 2_000);
    staleness.start();
    probes[0]?.resolve();
    await flush();
    probe(); // probe 1 takes 3 s (a busy turn)
    advance(3_000);
    probes[1]?.resolve();
    await flush();
    expect(staleness.isStale()).toBe(false);
    staleness.stop();
  });
});

/** Two RPC endpoints wired back to back; `connected` false makes sends fail (not sent). */
function pair() {
  let connected = true;
  const ends: Record<string, ClusterRpc> = {};
  const channel = (self: string): AppChannel => ({
    send: (to, payload) => {
      if (!connected) return false;
      const copy = new Uint8Array(payload);
      setImmediate(() => ends[to]?.receive(self, copy));
      return true;
    },
  });
  ends["a"] = new ClusterRpc(channel("a"), { pendingMax: 2, timeoutMs: 50 });
  ends["b"] = new ClusterRpc(channel("b"), { pendingMax: 2, timeoutMs: 50 });
  return { a: ends["a"], b: ends["b"], disconnect: () => (connected = false) };
}

describe("ClusterRpc", () => {
  it("carries a request to the serving peer and its answer back", async () => {
    const { a, b } = pair();
    const seen: string[] = [];
    b.serve(async (from, request) => {
      seen.push(`${from}:${request.op}`);
      return { ok: true, index: 42 };
    });
    await expect(a.call("b", { op: "propose", data: new Uint8Array([1, 2]) }, Date.now())).resolves.toEqual({
      ok: true,
      index: 42,
    });
    expect(seen).toEqual(["a:propose"]);
  });

  it("answers 'not sent, retry' at once when there is no open connection", async () => {
    const { a, disconnect } = pair();
    disconnect();
    const result = await a.call("b", { op: "removeNode", id: "n9" }, Date.now());
    expect(result).toMatchObject({ ok: false, retry: true });
  });

  it("turns a handler failure into a non-retryable answer, and expires unanswered calls", async () => {
    const { a, b } = pair();
    b.serve(async () => {
      throw new Error("boom");
    });
    const failed = (await a.call("b", { op: "progress" }, Date.now())) as Extract<RpcResult, { ok: false }>;
    expect(failed).toMatchObject({ ok: false, retry: false, message: "boom" });
    b.serve(() => new Promise(() => undefined)); // never answers
    const pending = a.call("b", { op: "progress" }, Date.now());
    await new Promise((resolve) => setTimeout(resolve, 60));
    a.expire(Date.now());
    await expect(pending).rejects.toThrow(/no answer/);
  });

  it("refuses past its bound without sending", async () => {
    const { a, b } = pair();
    b.serve(() => new Promise(() => undefined));
    void a.call("b", { op: "progress" }, Date.now()).catch(() => undefined);
    void a.call("b", { op: "progress" }, Date.now()).catch(() => undefined);
    await expect(a.call("b", { op: "progress" }, Date.now())).resolves.toMatchObject({
      ok: false,
      retry: false,
      overloaded: true,
    });
    a.close();
  });
});

describe("PendingMap", () => {
  it("expires in deadline order and stops at the first live waiter", async () => {
    const map = new PendingMap<number>(10, 100);
    const first = map.wait(1, 0);
    const second = map.wait(2, 50);
    map.expire(120, () => new Error("late"));
    await expect(first).rejects.toThrow("late");
    expect(map.has(2)).toBe(true);
    expect(map.resolve(2, 7)).toBe(true);
    await expect(second).resolves.toBe(7);
    expect(map.resolve(2, 8)).toBe(false);
  });
});
