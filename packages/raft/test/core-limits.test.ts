// Every buffer of the core has a named limit; each is tested at the limit and one past it.
import { describe, expect, it } from "vitest";
import { messagesPerReadyMax, pendingReadIndexMax, readStatesMax } from "../src/core/config.js";
import { membersMax, validateConfChange } from "../src/core/confchange.js";
import { RaftError } from "../src/core/errors.js";
import { electLeader, newCluster } from "./scenario-helpers.js";

describe("core limits", () => {
  it(`queues at most pendingReadIndexMax (${pendingReadIndexMax}) reads on the leader`, () => {
    const env = newCluster(["n1", "n2", "n3"]);
    electLeader(env, "n1");
    env.isolated.add("n1"); // no heartbeat acknowledgements: reads stay pending
    const raw = env.raw("n1");
    for (let i = 0; i < pendingReadIndexMax; i++) raw.readIndex(new TextEncoder().encode(`r${i}`));
    expect(() => raw.readIndex(new TextEncoder().encode("one-too-many"))).toThrow(RaftError);
    env.queue = [];
  });

  it("refuses a read whose context is already pending", () => {
    const env = newCluster(["n1", "n2", "n3"]);
    electLeader(env, "n1");
    env.isolated.add("n1");
    env.raw("n1").readIndex(new Uint8Array([1]));
    expect(() => env.raw("n1").readIndex(new Uint8Array([1]))).toThrow(/RAFT_ERR_READ_INDEX_DROPPED/);
  });

  it(`hands out at most readStatesMax (${readStatesMax}) read states per Ready`, () => {
    const env = newCluster(["solo"]);
    electLeader(env, "solo");
    const raw = env.raw("solo");
    for (let i = 0; i <= readStatesMax; i++) raw.readIndex(new TextEncoder().encode(`r${i}`)); // a 1-voter leader answers at once
    const ready = raw.ready();
    expect(ready.readStates).toHaveLength(readStatesMax);
    raw.advance(ready);
  });

  it(`keeps at most messagesPerReadyMax (${messagesPerReadyMax}) messages per Ready and counts the rest`, () => {
    const env = newCluster(["n1", "n2", "n3"], { electionTicks: 10_000, checkQuorum: false });
    electLeader(env, "n1");
    const raw = env.raw("n1");
    for (let i = 0; i < messagesPerReadyMax / 2 + 1; i++) raw.tick(); // two heartbeats per tick
    expect(raw.status().droppedMessages).toBe(2);
    const ready = raw.ready();
    expect(ready.messagesBeforePersist.length + ready.messages.length).toBe(messagesPerReadyMax);
    expect(ready.messagesBeforePersist).toHaveLength(messagesPerReadyMax); // heartbeats of a durable term: sendable before the write
    raw.advance(ready);
  });

  it(`accepts at most membersMax (${membersMax}) members`, () => {
    const voters = Array.from({ length: membersMax - 1 }, (_, i) => `v${i}`);
    validateConfChange({ voters, learners: [] }, { type: "addLearner", node: "last" }); // reaches the limit
    expect(() => validateConfChange({ voters, learners: ["last"] }, { type: "addLearner", node: "extra" })).toThrow(
      /membersMax/,
    );
  });
});
