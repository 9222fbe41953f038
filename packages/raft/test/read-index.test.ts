// ReadIndex is linearizable only if an acknowledgement can confirm no read newer than the heartbeat
// it answers, and no requester can be handed another read's answer. Each test below was a failure
// of the former scheme (contexts numbered from 1 per process, matched by their bytes alone).
import { describe, expect, it } from "vitest";
import { roundContext } from "../src/core/read-only.js";
import type { Message } from "../src/core/messages.js";
import type { InteractionEnv } from "../src/sim/interaction/env.js";
import { ReadContexts, readContextNonceBytes } from "../src/driver/read-context.js";
import { electLeader, newCluster } from "./scenario-helpers.js";

const encoder = new TextEncoder();

/** Takes the queued messages matching `predicate` out of the network (held, to deliver later or never). */
function hold(env: InteractionEnv, predicate: (m: Message) => boolean): Message[] {
  const held = env.queue.filter(predicate);
  env.queue = env.queue.filter((m) => !predicate(m));
  return held;
}

function proposeAndCommit(env: InteractionEnv, leader: string, data: string): number {
  const { index } = env.raw(leader).propose(encoder.encode(data));
  env.stabilize();
  return index;
}

function hex(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString("hex");
}

describe("ReadIndex", () => {
  it("a deposed leader's new read is not confirmed by a delayed acknowledgement of an older round", () => {
    const env = newCluster(["n1", "n2", "n3"], { checkQuorum: false, preVote: false });
    electLeader(env, "n1");
    const context = encoder.encode("read");
    env.raw("n1").readIndex(context);
    env.processReady("n1"); // heartbeats of the read's round
    env.deliver(["n2", "n3"]);
    env.processReady("n2");
    env.processReady("n3");
    const delayed = hold(env, (m) => m.type === "heartbeatResp" && m.from === "n3");
    env.stabilize(); // n2's acknowledgement completes the quorum: the first read is answered
    expect(env.node("n1").readStates).toHaveLength(1);

    // n1 is cut off, does not notice (no check-quorum), and n2 becomes leader and commits a write.
    env.isolated.add("n1");
    env.tick("n2", 30);
    env.stabilize(["n2", "n3"]);
    expect(env.raw("n2").status().role).toBe("leader");
    const written = proposeAndCommit(env, "n2", "written after the read began");
    expect(env.raw("n3").status().commit).toBeGreaterThanOrEqual(written);

    // n1, still leader of the old term, starts a read with the same context bytes.
    env.raw("n1").readIndex(context);
    env.processReady("n1");
    env.queue = [];
    env.isolated.delete("n1");
    env.queue.push(...delayed); // the acknowledgement of the FIRST round arrives late
    env.deliver(["n1"]);
    env.processReady("n1");
    // Confirming it would answer at an index below `written`, a write that completed before the read began.
    expect(env.node("n1").readStates).toHaveLength(1);
  });

  it("a restarted node's read is never answered with the index of its previous process's read", () => {
    const env = newCluster(["n1", "n2", "n3"]);
    electLeader(env, "n1");
    const firstProcess = new ReadContexts("n2", new Uint8Array(readContextNonceBytes).fill(1));
    const oldRead = firstProcess.next();
    env.raw("n2").readIndex(oldRead);
    env.stabilize(["n2"]);
    env.deliver(["n1"]);
    env.processReady("n1");
    hold(env, (m) => m.type === "heartbeat"); // the round is lost: the old read stays pending on n1
    const oldIndex = env.raw("n1").status().commit;

    env.crash("n2");
    env.restart("n2");
    env.isolated.add("n2");
    const written = proposeAndCommit(env, "n1", "applied before the new read");
    env.isolated.delete("n2");
    env.tick("n1", 1); // a heartbeat tells the restarted n2 who leads
    env.stabilize();
    expect(written).toBeGreaterThan(oldIndex);

    const secondProcess = new ReadContexts("n2", new Uint8Array(readContextNonceBytes).fill(2));
    const newRead = secondProcess.next();
    expect(hex(newRead)).not.toBe(hex(oldRead)); // the former counter gave both reads the context 1
    env.raw("n2").readIndex(newRead);
    env.stabilize();
    const answers = env.node("n2").readStates.filter((read) => hex(read.context) === hex(newRead));
    expect(answers).toHaveLength(1);
    expect(answers[0]?.index).toBeGreaterThanOrEqual(written);
    // The hazard was there: the previous process's read was answered too, with its older index.
    const late = env.node("n2").readStates.filter((read) => hex(read.context) === hex(oldRead));
    expect(late.map((read) => read.index)).toEqual([oldIndex]);
    expect(env.node("n2").droppedReads).toEqual([]);
  });

  it("two followers' reads with colliding contexts are both answered", () => {
    const env = newCluster(["n1", "n2", "n3"]);
    electLeader(env, "n1");
    const context = encoder.encode("same bytes");
    env.raw("n2").readIndex(context);
    env.raw("n3").readIndex(context);
    env.stabilize();
    expect(env.node("n2").readStates.map((read) => hex(read.context))).toEqual([hex(context)]);
    expect(env.node("n3").readStates.map((read) => hex(read.context))).toEqual([hex(context)]);
  });

  it("a forwarded read the leader cannot take is refused at once, not left to time out", () => {
    const env = newCluster(["n1", "n2", "n3"]);
    electLeader(env, "n1");
    env.isolated.add("n3"); // no quorum of acks without n2: reads stay pending
    const context = encoder.encode("twice");
    env.raw("n2").readIndex(context);
    env.stabilize(["n2"]);
    env.deliver(["n1"]);
    hold(env, () => true);
    env.raw("n2").readIndex(context); // the same requester and context while the first is pending
    env.stabilize(["n1", "n2"]);
    expect(env.node("n2").droppedReads.map(hex)).toEqual([hex(context)]);
  });

  it("a read forwarded to a node that is no longer the leader is refused at once", () => {
    const env = newCluster(["n1", "n2", "n3"]);
    electLeader(env, "n1");
    const term = env.raw("n2").status().term;
    const context = encoder.encode("to a follower");
    env.raw("n3").step({ type: "readIndex", from: "n2", to: "n3", term, context });
    env.stabilize();
    expect(env.node("n2").droppedReads.map(hex)).toEqual([hex(context)]);
    expect(env.node("n2").readStates).toEqual([]);
  });

  it("a read whose heartbeat round lost its acknowledgements is confirmed by the next periodic heartbeat", () => {
    const env = newCluster(["n1", "n2", "n3"]);
    electLeader(env, "n1");
    env.raw("n1").readIndex(encoder.encode("retry me"));
    env.processReady("n1");
    expect(hold(env, (m) => m.type === "heartbeat")).toHaveLength(2); // the whole round is lost
    env.stabilize();
    expect(env.node("n1").readStates).toEqual([]);
    env.tick("n1", 1); // heartbeatTicks = 1
    env.stabilize();
    expect(env.node("n1").readStates.map((read) => new TextDecoder().decode(read.context))).toEqual(["retry me"]);
  });

  it("an acknowledgement confirms its round and every earlier one, never a later one", () => {
    const env = newCluster(["n1", "n2", "n3"]);
    electLeader(env, "n1");
    for (const name of ["a", "b", "c"]) env.raw("n1").readIndex(encoder.encode(name));
    env.processReady("n1");
    env.queue = [];
    const term = env.raw("n1").status().term;
    // An acknowledgement of round 2 (as if its heartbeat was the one that got through).
    env.raw("n1").step({ type: "heartbeatResp", from: "n2", to: "n1", term, context: roundContext(2) });
    env.processReady("n1");
    expect(env.node("n1").readStates.map((read) => new TextDecoder().decode(read.context))).toEqual(["a", "b"]);
  });
});

describe("ReadContexts", () => {
  it("never repeats a context within a process, across processes or across nodes", () => {
    const seen = new Set<string>();
    const sources = [
      new ReadContexts("n1", new Uint8Array(readContextNonceBytes).fill(7)),
      new ReadContexts("n1", new Uint8Array(readContextNonceBytes).fill(8)), // the same node after a restart
      new ReadContexts("n2", new Uint8Array(readContextNonceBytes).fill(7)), // another node, same nonce
    ];
    for (const source of sources) for (let i = 0; i < 1000; i++) seen.add(hex(source.next()));
    expect(seen.size).toBe(3000);
    expect(() => new ReadContexts("n1", new Uint8Array(4))).toThrow(/nonce/);
  });
});
