// The cluster command log against a scripted Raft link and leader RPC: where a write goes, when
// it resolves (only once applied here), when it is retried (only when certainly not proposed)
// and how it fails (503 v1 errors).
import { keyStateMachine, type CommandOutcome, type KeyCommand } from "@keyraft/core";
import { joinSnapshotData, NotLeaderError, RaftNodeError, TimeoutError } from "@keyraft/raft";
import { afterEach, describe, expect, it } from "vitest";
import { ClusterCommandLog, type RaftLink } from "../src/cluster/cluster-command-log.js";
import { decodeEntry, encodeEntry, decodeSnapshot, snapshotSliceRecords } from "../src/cluster/entry-codec.js";
import { encodeValue } from "../src/store/codec.js";
import { ReplicatedKeyMachine } from "../src/cluster/replicated-machine.js";
import type { RpcRequest, RpcResult } from "../src/cluster/rpc.js";
import { V1Error } from "../src/errors.js";
import { isStoreError } from "../src/store/errors.js";

const origin = "n1/test";
const createApi = (apiId: string): KeyCommand => ({ type: "createApi", apiId, name: "api", nowMs: 1 });
const okOutcome = { ok: true } as CommandOutcome;

interface Harness {
  log: ClusterCommandLog;
  proposals: Uint8Array[];
  calls: { to: string; request: RpcRequest }[];
  link: { leader: string; propose: (data: Uint8Array) => Promise<{ index: number }> };
  rpcAnswer: (to: string, request: RpcRequest) => Promise<RpcResult>;
}

const logs: ClusterCommandLog[] = [];
afterEach(async () => {
  for (const log of logs.splice(0)) await log.close();
});

function harness(overrides: { timeoutMs?: number; pendingMax?: number } = {}): Harness {
  const h = {
    proposals: [] as Uint8Array[],
    calls: [] as { to: string; request: RpcRequest }[],
    link: { leader: "n1", propose: async (_data: Uint8Array) => ({ index: 1 }) },
    rpcAnswer: async (): Promise<RpcResult> => ({ ok: true, index: 1 }),
  } as Omit<Harness, "log">;
  const raft: RaftLink = {
    id: "n1",
    leader: () => h.link.leader,
    propose: (data) => {
      h.proposals.push(data);
      return h.link.propose(data);
    },
  };
  const log = new ClusterCommandLog({
    raft,
    rpc: {
      call: (to, request) => {
        h.calls.push({ to, request });
        return (h as Harness).rpcAnswer(to, request);
      },
    },
    origin,
    appliedIndex: () => 0,
    pendingMax: overrides.pendingMax ?? 100,
    timeoutMs: overrides.timeoutMs ?? 2000,
    retryDelayMs: 5,
    nowMs: () => Date.now(),
  });
  logs.push(log);
  return Object.assign(h, { log }) as Harness;
}

/** Plays the apply of a proposed entry: the machine hands the outcome to its origin. */
function applyOwn(h: Harness, data: Uint8Array, outcome: CommandOutcome = okOutcome): void {
  const entry = decodeEntry(data);
  if (entry.kind !== "command") throw new Error("not a command entry");
  expect(entry.origin).toBe(origin);
  h.log.onOwnApplied(entry.seq, outcome);
}

const tick = () => new Promise((resolve) => setTimeout(resolve, 1));

describe("ClusterCommandLog", () => {
  it("on the leader proposes once and resolves with the outcome of the local apply", async () => {
    const h = harness();
    const outcome = { ok: false, code: "CONFLICT", message: "exists" } as CommandOutcome;
    h.link.propose = async (data) => {
      applyOwn(h, data, outcome); // RaftNode resolves propose after applying
      return { index: 7 };
    };
    await expect(h.log.append(createApi("api_1"))).resolves.toEqual(outcome);
    expect(h.proposals).toHaveLength(1);
    const entry = decodeEntry(h.proposals[0] as Uint8Array);
    expect(entry).toMatchObject({ kind: "command", command: createApi("api_1") });
  });

  it("on a follower forwards to the leader and resolves only once the entry is applied here", async () => {
    const h = harness();
    h.link.leader = "n2";
    let settled = false;
    const appended = h.log.append(createApi("api_2")).then((value) => {
      settled = true;
      return value;
    });
    await tick();
    expect(h.calls).toHaveLength(1);
    expect(h.calls[0]?.to).toBe("n2");
    expect(h.calls[0]?.request.op).toBe("propose");
    await tick();
    expect(settled).toBe(false); // committed on the leader is not enough: read-your-writes here
    const request = h.calls[0]?.request as Extract<RpcRequest, { op: "propose" }>;
    applyOwn(h, request.data);
    await expect(appended).resolves.toEqual(okOutcome);
    expect(h.proposals).toHaveLength(0);
  });

  it("retries while no leader is known or the leader says it is not the leader, then proposes exactly once", async () => {
    const h = harness();
    h.link.leader = "";
    let refusals = 0;
    h.link.propose = async (data) => {
      if (refusals++ < 2) throw new NotLeaderError("");
      applyOwn(h, data);
      return { index: 3 };
    };
    h.rpcAnswer = async () => {
      h.link.leader = "n1"; // the answer names a new leader; this node takes over
      return { ok: false, retry: true, message: "n2 is not the leader" };
    };
    const appended = h.log.append(createApi("api_3"));
    await tick();
    h.link.leader = "n2";
    await expect(appended).resolves.toEqual(okOutcome);
    expect(h.calls.length).toBeGreaterThanOrEqual(1);
    expect(h.proposals).toHaveLength(3); // two refused (never in the log) + the one that committed
  });

  it("never resends a write whose outcome is unknown, and answers 503", async () => {
    const h = harness();
    h.link.propose = async () => {
      throw new TimeoutError("propose", 5000, "n1");
    };
    const error = await h.log.append(createApi("api_4")).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(V1Error);
    expect((error as V1Error).statusCode).toBe(503);
    expect((error as V1Error).message).toMatch(/outcome is unknown/);
    expect(h.proposals).toHaveLength(1);

    h.link.leader = "n2";
    h.rpcAnswer = () => new Promise((_, reject) => setTimeout(() => reject(new Error("no answer")), 5));
    const forwarded = await h.log.append(createApi("api_5")).catch((caught: unknown) => caught);
    expect((forwarded as V1Error).statusCode).toBe(503);
    expect(h.calls).toHaveLength(1);
  });

  it("answers 503 'no leader' when none appears before the deadline", async () => {
    const h = harness({ timeoutMs: 100 });
    h.link.leader = "";
    const error = await h.log.append(createApi("api_6")).catch((caught: unknown) => caught);
    expect((error as V1Error).statusCode).toBe(503);
    expect((error as V1Error).message).toMatch(/no cluster leader .* nothing was changed/);
  });

  it("answers 503 'outcome unknown' when a committed write is not applied here in time", async () => {
    const h = harness({ timeoutMs: 100 });
    h.link.leader = "n2";
    const error = await h.log.append(createApi("api_7")).catch((caught: unknown) => caught);
    expect((error as V1Error).statusCode).toBe(503);
    expect((error as V1Error).message).toMatch(/outcome is unknown/);
  });

  it("refuses past pendingMax, and refuses a command that would not replay unchanged, before anything is sent", async () => {
    const h = harness({ pendingMax: 1 });
    h.link.leader = "n2";
    h.rpcAnswer = () => new Promise(() => undefined);
    void h.log.append(createApi("api_8")).catch(() => undefined);
    const overloaded = await h.log.append(createApi("api_9")).catch((caught: unknown) => caught);
    expect(isStoreError(overloaded, "KEYRAFT_STORE_OVERLOADED")).toBe(true);
    const h2 = harness();
    const poisoned = JSON.parse(
      '{"type":"createApi","apiId":"x","name":"n","nowMs":1,"meta":{"__proto__":{"a":1}}}',
    ) as KeyCommand;
    const refused = await h2.log.append(poisoned).catch((caught: unknown) => caught);
    expect(isStoreError(refused, "KEYRAFT_STORE_UNENCODABLE")).toBe(true);
    expect(h2.proposals).toHaveLength(0);
  });

  it("maps a full proposal queue on the leader to the store's overloaded error (503, nothing changed)", async () => {
    const h = harness();
    h.link.propose = async () => {
      throw new RaftNodeError("RAFT_ERR_PENDING_FULL", "full");
    };
    const error = await h.log.append(createApi("api_10")).catch((caught: unknown) => caught);
    expect(isStoreError(error, "KEYRAFT_STORE_OVERLOADED")).toBe(true);
  });
});

describe("ReplicatedKeyMachine", () => {
  it("applies commands and address-book entries, and a snapshot restores both on another node", async () => {
    const ownApplied: number[] = [];
    const peersSeen: [string, string | null][] = [];
    const source = new ReplicatedKeyMachine(keyStateMachine(), {
      origin,
      onOwnApplied: (seq) => ownApplied.push(seq),
      onPeer: (id, url) => peersSeen.push([id, url]),
    });
    const entries = [
      encodeEntry({ kind: "command", origin, seq: 1, command: createApi("api_a") }),
      encodeEntry({ kind: "command", origin: "n2/other", seq: 1, command: createApi("api_b") }),
      encodeEntry({ kind: "peer", id: "n4", url: "ws://127.0.0.1:7004" }),
      encodeEntry({ kind: "peer", id: "n5", url: "ws://127.0.0.1:7005" }),
      encodeEntry({ kind: "peer", id: "n5", url: null }),
    ];
    entries.forEach((data, i) => source.apply({ term: 1, index: i + 1, type: "normal", data }));
    expect(ownApplied).toEqual([1]); // only this origin's entries settle local requests
    expect(source.appliedIndex).toBe(5);
    expect([...source.peers]).toEqual([["n4", "ws://127.0.0.1:7004"]]);

    const data = joinSnapshotData(await source.takeSnapshot()); // as storage hands the bytes back
    expect(decodeSnapshot(data).peers).toEqual({ n4: "ws://127.0.0.1:7004" });
    const machine = keyStateMachine();
    const restoredPeers: string[] = [];
    const target = new ReplicatedKeyMachine(machine, {
      origin: "n3/x",
      onOwnApplied: () => undefined,
      onPeer: (id) => restoredPeers.push(id),
    });
    await target.installSnapshot({ metadata: { index: 5, term: 1, conf: { voters: ["n1"], learners: [] } }, data });
    expect(target.appliedIndex).toBe(5);
    expect(restoredPeers).toEqual(["n4"]);
    expect([...machine.state.apis.keys()].sort()).toEqual(expect.arrayContaining(["api_a", "api_b"]));
  });

  it("a snapshot is the state of the moment it was taken, though commands apply while it is encoded in slices", async () => {
    const keys = keyStateMachine();
    const source = new ReplicatedKeyMachine(keys, { origin, onOwnApplied: () => undefined, onPeer: () => undefined });
    let index = 0;
    const apply = (command: KeyCommand) =>
      source.apply({
        term: 1,
        index: ++index,
        type: "normal",
        data: encodeEntry({ kind: "command", origin, seq: index, command }),
      });
    apply(createApi("api_a"));
    // Many slices of apis: the encoding takes several times its budget per turn, so it yields.
    const apiCount = snapshotSliceRecords * 40 + 7;
    for (let i = 0; i < apiCount; i++) apply(createApi(`api_${String(i).padStart(6, "0")}`));
    const expected = keys.snapshot();
    const pending = source.takeSnapshot();
    // While it encodes, later entries apply: new apis, and deletions of captured ones.
    let appliedDuring = 0;
    const writer = setInterval(() => {
      apply({ type: "deleteApi", apiId: `api_${String(appliedDuring).padStart(6, "0")}` });
      apply(createApi(`api_late_${appliedDuring++}`));
    }, 0);
    const data = joinSnapshotData(await pending);
    clearInterval(writer);
    expect(appliedDuring).toBeGreaterThan(0); // the encoding yielded, and commands applied meanwhile
    expect(keys.state.apis.has("api_000000")).toBe(false); // ...and changed the live state
    const restored = keyStateMachine();
    await new ReplicatedKeyMachine(restored, {
      origin: "n3/x",
      onOwnApplied: () => undefined,
      onPeer: () => undefined,
    }).installSnapshot({
      metadata: { index: apiCount + 1, term: 1, conf: { voters: ["n1"], learners: [] } },
      data,
    });
    expect(restored.snapshot()).toEqual(expected);
  });

  it("still reads a snapshot of the sliced single-value format (version 2)", async () => {
    const keys = keyStateMachine();
    keys.apply(createApi("api_a"));
    for (let i = 0; i < snapshotSliceRecords + 3; i++) keys.apply(createApi(`api_${String(i).padStart(6, "0")}`));
    // Version 2 as it was written: the key state's record arrays in slices, all in one msgpack value.
    const state = keys.snapshot() as unknown as Record<string, unknown>;
    const head: Record<string, unknown> = {};
    const parts: [string, Uint8Array][] = [];
    for (const [name, value] of Object.entries(state)) {
      if (!Array.isArray(value)) head[name] = value;
      else if (value.length === 0) parts.push([name, encodeValue([])]);
      else
        for (let start = 0; start < value.length; start += snapshotSliceRecords)
          parts.push([name, encodeValue(value.slice(start, start + snapshotSliceRecords))]);
    }
    const data = encodeValue({ v: 2, head, parts, peers: { n4: "ws://127.0.0.1:7004" } });
    const restored = keyStateMachine();
    const restoredPeers: string[] = [];
    await new ReplicatedKeyMachine(restored, {
      origin: "n3/x",
      onOwnApplied: () => undefined,
      onPeer: (id) => restoredPeers.push(id),
    }).installSnapshot({ metadata: { index: 1, term: 1, conf: { voters: ["n1"], learners: [] } }, data });
    expect(restored.snapshot()).toEqual(keys.snapshot());
    expect(restoredPeers).toEqual(["n4"]);
  });

  it("writes version 3 (a list of parts, no joining copy) and refuses one cut short or with bytes after its parts", async () => {
    const keys = keyStateMachine();
    for (let i = 0; i < snapshotSliceRecords + 3; i++) keys.apply(createApi(`api_${String(i).padStart(6, "0")}`));
    const source = new ReplicatedKeyMachine(keys, { origin, onOwnApplied: () => undefined, onPeer: () => undefined });
    const parts = await source.takeSnapshot();
    expect(parts.length).toBeGreaterThan(3); // prefix, header, and a part per slice, not joined
    const data = joinSnapshotData(parts);
    expect(data[0]).toBe(0xc1);
    expect(decodeSnapshot(parts)).toEqual(decodeSnapshot(data));
    expect(() => decodeSnapshot(data.subarray(0, data.byteLength - 1))).toThrow(/past the end/);
    expect(() => decodeSnapshot(joinSnapshotData([data, new Uint8Array([1])]))).toThrow(/after the last part/);
  });

  it("still reads a snapshot of the single-value format (version 1)", async () => {
    const keys = keyStateMachine();
    keys.apply(createApi("api_a"));
    const data = encodeValue({ v: 1, keys: keys.snapshot(), peers: { n4: "ws://127.0.0.1:7004" } });
    const restored = keyStateMachine();
    const restoredPeers: string[] = [];
    await new ReplicatedKeyMachine(restored, {
      origin: "n3/x",
      onOwnApplied: () => undefined,
      onPeer: (id) => restoredPeers.push(id),
    }).installSnapshot({
      metadata: { index: 1, term: 1, conf: { voters: ["n1"], learners: [] } },
      data,
    });
    expect(restored.snapshot()).toEqual(keys.snapshot());
    expect(restoredPeers).toEqual(["n4"]);
  });

  it("refuses an entry it did not write (a broken invariant stops the node)", () => {
    const machine = new ReplicatedKeyMachine(keyStateMachine(), {
      origin,
      onOwnApplied: () => undefined,
      onPeer: () => undefined,
    });
    expect(() => machine.apply({ term: 1, index: 1, type: "normal", data: new Uint8Array([1, 2, 3]) })).toThrow();
  });
});
