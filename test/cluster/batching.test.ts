// Write batching: the entries of one event-loop turn become one Raft entry (a batch), which every
// node applies part by part in order; a batch is never split, and its items share one result.
import { keyStateMachine, type CommandOutcome, type KeyCommand } from "@keyraft/core";
import { describe, expect, it } from "vitest";
import {
  batchPartsMax,
  decodeEntries,
  encodeBatch,
  encodeEntry,
  entryParts,
  isBatch,
} from "../../packages/gateway/src/cluster/entry-codec.js";
import { ReplicatedKeyMachine } from "../../packages/gateway/src/cluster/replicated-machine.js";
import { TurnBatcher } from "../../packages/gateway/src/cluster/turn-batcher.js";

const createApi = (apiId: string): KeyCommand => ({ type: "createApi", apiId, name: apiId, nowMs: 1 });
const command = (origin: string, seq: number, apiId: string) =>
  encodeEntry({ kind: "command", origin, seq, command: createApi(apiId) });

describe("batch entries", () => {
  it("round-trip their parts in order; a single entry is its own only part", () => {
    const parts = [
      command("n1/a", 1, "api_1"),
      encodeEntry({ kind: "peer", id: "n4", url: "ws://127.0.0.1:7004" }),
      command("n2/b", 9, "api_2"),
    ];
    const batch = encodeBatch(parts);
    expect(isBatch(batch)).toBe(true);
    expect(isBatch(parts[0] as Uint8Array)).toBe(false);
    expect(entryParts(batch).map((part) => Buffer.from(part).toString("hex"))).toEqual(
      parts.map((part) => Buffer.from(part).toString("hex")),
    );
    expect(decodeEntries(batch)).toEqual([
      { kind: "command", origin: "n1/a", seq: 1, command: createApi("api_1") },
      { kind: "peer", id: "n4", url: "ws://127.0.0.1:7004" },
      { kind: "command", origin: "n2/b", seq: 9, command: createApi("api_2") },
    ]);
    expect(entryParts(parts[0] as Uint8Array)).toEqual([parts[0]]);
    // A batch of the maximum size (array 16 header) is still recognised.
    const big = encodeBatch(Array.from({ length: batchPartsMax }, (_, i) => command("n1/a", i + 1, `api_${i}`)));
    expect(isBatch(big)).toBe(true);
    expect(decodeEntries(big)).toHaveLength(batchPartsMax);
  });

  it("are applied part by part at one index, each own part handing its outcome to its waiter", () => {
    const outcomes: [number, CommandOutcome, number][] = [];
    const applied: number[] = [];
    const keys = keyStateMachine();
    const machine = new ReplicatedKeyMachine(keys, {
      origin: "n1/me",
      onOwnApplied: (seq, outcome, index) => outcomes.push([seq, outcome, index]),
      onPeer: () => undefined,
      onApplied: (index) => applied.push(index),
    });
    const batch = encodeBatch([
      command("n1/me", 1, "api_1"),
      command("n2/other", 1, "api_2"),
      command("n1/me", 2, "api_1"),
    ]);
    machine.apply({ index: 5, term: 1, type: "normal", data: batch });
    expect(keys.state.apis.has("api_1") && keys.state.apis.has("api_2")).toBe(true);
    expect(outcomes.map(([seq, outcome, index]) => [seq, outcome.ok, index])).toEqual([
      [1, true, 5],
      [2, false, 5], // the second createApi of api_1 is refused at apply: outcomes follow log order
    ]);
    expect(applied).toEqual([5]);
    expect(machine.appliedIndex).toBe(5);
  });
});

describe("TurnBatcher", () => {
  it("sends the entries of one turn as one batch per destination and hands every item the group's result", async () => {
    const sent: { key: string; parts: number }[] = [];
    const batcher = new TurnBatcher<string>(
      async (key, data) => {
        sent.push({ key, parts: entryParts(data).length });
        return `result-${key}-${sent.length}`;
      },
      100,
      () => new Error("full"),
    );
    const results = await Promise.all([
      batcher.submit("n2", command("n1/a", 1, "api_1")),
      batcher.submit("n3", command("n1/a", 2, "api_2")),
      batcher.submit("n2", command("n1/a", 3, "api_3")),
    ]);
    expect(sent).toEqual([
      { key: "n2", parts: 2 },
      { key: "n3", parts: 1 },
    ]);
    expect(results).toEqual(["result-n2-1", "result-n3-2", "result-n2-1"]);
    // The next turn is a new group.
    await expect(batcher.submit("n2", command("n1/a", 4, "api_4"))).resolves.toBe("result-n2-3");
  });

  it("never splits a submitted batch, starts a new group at the bounds, and fails every item of a failed group", async () => {
    const groups: number[] = [];
    const batcher = new TurnBatcher<number>(
      async (_key, data) => {
        const parts = entryParts(data).length;
        groups.push(parts);
        if (groups.length === 2) throw new Error("not the leader");
        return parts;
      },
      10,
      () => new Error("full"),
    );
    const forwarded = encodeBatch(
      Array.from({ length: batchPartsMax - 1 }, (_, i) => command("n2/f", i + 1, `api_f${i}`)),
    );
    const first = batcher.submit("", forwarded);
    const second = batcher.submit("", command("n1/a", 1, "api_a"));
    const third = batcher.submit("", command("n1/a", 2, "api_b")); // would exceed batchPartsMax: next group
    await expect(first).resolves.toBe(batchPartsMax);
    await expect(second).resolves.toBe(batchPartsMax);
    await expect(third).rejects.toThrow("not the leader");
    expect(groups).toEqual([batchPartsMax, 1]);
  });

  it("refuses past queueMax with the given error (nothing queued)", async () => {
    let sends = 0;
    const batcher = new TurnBatcher<number>(
      async () => ++sends,
      2,
      () => new Error("too many proposals waiting"),
    );
    const accepted = [batcher.submit("", command("n1/a", 1, "a")), batcher.submit("", command("n1/a", 2, "b"))];
    await expect(batcher.submit("", command("n1/a", 3, "c"))).rejects.toThrow("too many proposals waiting");
    await expect(Promise.all(accepted)).resolves.toEqual([1, 1]);
    expect(sends).toBe(1);
  });
});
