import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { RaftAssertionError } from "../src/core/assert.js";
import { applyConfChange, decodeConfChange, encodeConfChange, validateConfChange } from "../src/core/confchange.js";
import { resolveConfig } from "../src/core/config.js";
import { RAFT_ERROR_CODES, RaftError } from "../src/core/errors.js";
import { Xoshiro128, seedFromString } from "../src/core/prng.js";
import { RawNode } from "../src/core/raw-node.js";
import { isReadyEmpty } from "../src/core/ready.js";
import { SimStorage } from "../src/sim/sim-storage.js";
import { InteractionEnv } from "../src/sim/interaction/env.js";
import { electLeader, newCluster } from "./scenario-helpers.js";

describe("Xoshiro128 PRNG", () => {
  it("is deterministic per seed and differs across seeds", () => {
    const draw = (seed: number) => {
      const random = new Xoshiro128(seed);
      return Array.from({ length: 5 }, () => random.nextUint32());
    };
    expect(draw(42)).toEqual(draw(42));
    expect(draw(42)).not.toEqual(draw(43));
  });

  it("intBelow stays in range and covers it", () => {
    const random = new Xoshiro128(seedFromString("n1"));
    const seen = new Set<number>();
    for (let i = 0; i < 1000; i++) {
      const value = random.intBelow(10);
      expect(value >= 0 && value < 10).toBe(true);
      seen.add(value);
    }
    expect(seen.size).toBe(10);
    expect(() => random.intBelow(0)).toThrow(RaftAssertionError);
  });
});

describe("conf changes", () => {
  it("encode and decode round-trip", () => {
    for (const change of [
      { type: "addLearner", node: "n4" },
      { type: "promote", node: "n4" },
      { type: "remove", node: "n1" },
    ] as const) {
      expect(decodeConfChange(encodeConfChange(change))).toEqual(change);
    }
    expect(() => decodeConfChange(new TextEncoder().encode('{"type":"explode","node":"x"}'))).toThrow(
      RaftAssertionError,
    );
  });

  it("validate refuses changes that do not fit the configuration", () => {
    const conf = { voters: ["n1"], learners: ["n2"] };
    expect(() => validateConfChange(conf, { type: "addLearner", node: "n1" })).toThrow(/already a member/);
    expect(() => validateConfChange(conf, { type: "promote", node: "n1" })).toThrow(/not a learner/);
    expect(() => validateConfChange(conf, { type: "remove", node: "n1" })).toThrow(/last voter/);
    expect(() => validateConfChange(conf, { type: "remove", node: "n9" })).toThrow(RaftError);
    expect(() => validateConfChange(conf, { type: "addLearner", node: "x".repeat(65) })).toThrow(/bad node id/);
    validateConfChange(conf, { type: "promote", node: "n2" });
  });

  it("apply moves a node learner -> voter -> out", () => {
    let conf = { voters: ["n1"], learners: [] as string[] };
    conf = applyConfChange(conf, { type: "addLearner", node: "n2" });
    expect(conf).toEqual({ voters: ["n1"], learners: ["n2"] });
    conf = applyConfChange(conf, { type: "promote", node: "n2" });
    expect(conf).toEqual({ voters: ["n1", "n2"], learners: [] });
    conf = applyConfChange(conf, { type: "remove", node: "n1" });
    expect(conf).toEqual({ voters: ["n2"], learners: [] });
  });
});

describe("config", () => {
  it("fills defaults: pre-vote and check-quorum on", () => {
    const config = resolveConfig({ id: "n1" });
    expect(config).toMatchObject({
      preVote: true,
      checkQuorum: true,
      electionTicks: 10,
      heartbeatTicks: 1,
      voters: [],
    });
  });

  it("rejects invalid bounds", () => {
    expect(() => resolveConfig({ id: "" })).toThrow(RaftAssertionError);
    expect(() => resolveConfig({ id: "n1", electionTicks: 1, heartbeatTicks: 1 })).toThrow(/electionTicks/);
    expect(() => resolveConfig({ id: "n1", maxInflightMsgs: 0 })).toThrow(/maxInflightMsgs/);
    expect(() => resolveConfig({ id: "n1", maxInflightMsgs: 4097 })).toThrow(/maxInflightMsgsMax/);
    resolveConfig({ id: "n1", maxInflightMsgs: 4096 }); // at the limit
    expect(() => resolveConfig({ id: "n1", voters: ["a"], learners: ["a"] })).toThrow(/distinct/);
  });
});

describe("RawNode and the Ready contract", () => {
  it("a fresh founding node's first Ready persists (synced) and applies the bootstrap conf entries", () => {
    const node = new RawNode({ id: "n1", voters: ["n1", "n2"] }, new SimStorage());
    const ready = node.ready();
    expect(ready.mustSync).toBe(true);
    expect(ready.hardState).toEqual({ term: 1, vote: "", commit: 4 });
    expect(ready.entries.map((e) => e.type)).toEqual(["conf", "conf", "conf", "conf"]);
    expect(ready.committedEntries).toHaveLength(4);
    node.advance(ready);
    expect(node.confState()).toEqual({ voters: ["n1", "n2"], learners: [] });
    expect(node.hasReady()).toBe(false);
  });

  it("forbids any input between ready() and advance()", () => {
    const node = new RawNode({ id: "n1", voters: ["n1"] }, new SimStorage());
    const ready = node.ready();
    expect(() => node.tick()).toThrow(/outstanding/);
    expect(() => node.step({ type: "heartbeatResp", from: "x", to: "n1", term: 1, context: null })).toThrow(
      /outstanding/,
    );
    expect(() => node.ready()).toThrow(/outstanding/);
    expect(() => node.advance({ ...ready })).toThrow(/not the outstanding Ready/);
    node.advance(ready);
    node.tick();
  });

  it("a commit-only change is not synced; hardState is null when unchanged", () => {
    const env = newCluster(["n1", "n2", "n3"]);
    electLeader(env, "n1");
    env.raw("n1").propose(new Uint8Array([7]));
    const first = env.raw("n1").ready();
    expect(first.mustSync).toBe(true); // new entry
    expect(first.hardState).toBeNull();
    env.raw("n1").advance(first);
    env.node("n1").storage.appendSync(first.entries, null, true);
    env.queue.push(...first.messagesBeforePersist, ...first.messages);
    env.deliver(["n2", "n3"]);
    for (const id of ["n2", "n3"]) env.processReady(id);
    env.deliver(["n1"]);
    const second = env.raw("n1").ready();
    expect(second.hardState?.commit).toBe(first.entries[0]?.index);
    expect(second.mustSync).toBe(false);
    expect(second.committedEntries.map((e) => e.index)).toEqual([first.entries[0]?.index]);
    env.raw("n1").advance(second);
  });

  it("propose on a follower throws RAFT_ERR_NOT_LEADER with the leader id", () => {
    const env = newCluster(["n1", "n2", "n3"]);
    electLeader(env, "n1");
    try {
      env.raw("n2").propose(new Uint8Array([1]));
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(RaftError);
      expect(error).toMatchObject({ code: "RAFT_ERR_NOT_LEADER", leader: "n1" });
    }
  });

  it("status is a copy and reports progress only on the leader", () => {
    const env = newCluster(["n1", "n2", "n3"]);
    electLeader(env, "n1");
    const status = env.raw("n1").status();
    status.conf.voters.push("mutated");
    expect(env.raw("n1").confState().voters).toEqual(["n1", "n2", "n3"]);
    expect(Object.keys(status.progress).sort()).toEqual(["n1", "n2", "n3"]);
    expect(env.raw("n2").status().progress).toEqual({});
  });

  it("an empty Ready is recognised", () => {
    expect(
      isReadyEmpty({
        hardState: null,
        entries: [],
        snapshot: null,
        committedEntries: [],
        messagesBeforePersist: [],
        messages: [],
        mustSync: false,
        readStates: [],
        droppedReads: [],
      }),
    ).toBe(true);
  });
});

describe("error registry", () => {
  it("every code is documented in docs/raft-core.md and codes are unique", () => {
    const docs = readFileSync(new URL("../../../docs/raft-core.md", import.meta.url), "utf8");
    const codes = Object.keys(RAFT_ERROR_CODES);
    expect(new Set(codes).size).toBe(codes.length);
    for (const code of codes) {
      expect(code).toMatch(/^RAFT_ERR_[A-Z_]+$/);
      expect(docs).toContain(code);
    }
  });
});

describe("sending before persisting (Ready.messagesBeforePersist)", () => {
  it("a leader's appends may leave before its write; acknowledgements and votes wait for it", () => {
    const env = newCluster(["n1", "n2", "n3"]);
    electLeader(env, "n1");
    env.raw("n1").propose(new Uint8Array([1]));
    const leaderReady = env.raw("n1").ready();
    expect(leaderReady.entries).toHaveLength(1);
    expect(leaderReady.messagesBeforePersist.map((m) => [m.type, m.to]).sort()).toEqual([
      ["app", "n2"],
      ["app", "n3"],
    ]);
    expect(leaderReady.messages).toEqual([]);
    env.node("n1").storage.appendSync(leaderReady.entries, leaderReady.hardState, leaderReady.mustSync);
    env.raw("n1").advance(leaderReady);
    env.queue.push(...leaderReady.messagesBeforePersist);
    env.deliver(["n2"]);
    const followerReady = env.raw("n2").ready();
    expect(followerReady.entries).toHaveLength(1);
    expect(followerReady.messagesBeforePersist).toEqual([]); // its acknowledgement promises its write
    expect(followerReady.messages.map((m) => m.type)).toEqual(["appResp"]);
    env.raw("n2").advance(followerReady);
    // A campaign's vote requests (new term and vote to persist) never go early either.
    env.raw("n3").campaign();
    const campaign = env.raw("n3").ready();
    expect(campaign.messagesBeforePersist).toEqual([]);
    expect(campaign.messages.some((m) => m.type === "vote")).toBe(true);
    env.raw("n3").advance(campaign);
  });

  it("the leader counts its own copy only once its write is acknowledged (advance)", () => {
    const env = newCluster(["solo"]);
    electLeader(env, "solo");
    const raw = env.raw("solo");
    const committedBefore = raw.status().commit;
    raw.propose(new Uint8Array([9]));
    const write = raw.ready();
    expect(write.entries).toHaveLength(1);
    expect(write.committedEntries).toEqual([]); // one voter, yet not committed before its own write
    expect(raw.status().commit).toBe(committedBefore);
    env.node("solo").storage.appendSync(write.entries, write.hardState, write.mustSync);
    raw.advance(write);
    expect(raw.status().commit).toBe(write.entries[0]?.index);
    const apply = raw.ready();
    expect(apply.committedEntries.map((e) => e.index)).toEqual([write.entries[0]?.index]);
    raw.advance(apply);
  });

  it("a leader elected in the Ready that raises its term sends nothing before that term is durable", () => {
    const env = new InteractionEnv();
    env.addNode({ id: "solo", voters: ["solo"], learners: ["l1"] });
    env.addNode({ id: "l1", voters: ["solo"], learners: ["l1"] });
    env.stabilize();
    env.raw("solo").campaign(); // the only voter wins at once: new term and appends to the learner in one Ready
    const ready = env.raw("solo").ready();
    expect(ready.softState?.role).toBe("leader");
    expect(ready.hardState?.term).toBeGreaterThan(0);
    expect(ready.messages.some((m) => m.type === "app" && m.to === "l1")).toBe(true);
    expect(ready.messagesBeforePersist).toEqual([]);
    env.raw("solo").advance(ready);
  });
});

describe("losing the connection to the leader (reportUnreachable on a follower)", () => {
  const tickUntil = (env: InteractionEnv, id: string, done: () => boolean, ticksMax: number): number => {
    for (let tick = 1; tick <= ticksMax; tick++) {
      env.raw(id).tick();
      if (done()) return tick;
    }
    return -1;
  };

  it("a follower that alone lost the leader campaigns early, and a peer still in the leader's lease refuses it", () => {
    const env = newCluster(["n1", "n2", "n3"]);
    electLeader(env, "n1");
    const term = env.raw("n1").status().term;
    env.raw("n2").reportUnreachable("n1");
    // Without the report n2 would wait at least electionTicks (10) ticks; now it pre-campaigns within them.
    expect(tickUntil(env, "n2", () => env.raw("n2").status().role === "preCandidate", 10)).toBeGreaterThan(0);
    env.isolated.add("n1"); // the leader's heartbeats do not reach n2 meanwhile
    env.stabilize(["n2", "n3"]);
    expect(env.raw("n2").status().role).not.toBe("leader"); // n3 still holds n1's lease
    expect(env.raw("n3").status()).toMatchObject({ term, leader: "n1" });
  });

  it("when every follower lost the leader (its process died), one is elected within one election timeout", () => {
    const env = newCluster(["n1", "n2", "n3"]);
    electLeader(env, "n1");
    const term = env.raw("n1").status().term;
    env.crash("n1");
    for (const id of ["n2", "n3"]) env.raw(id).reportUnreachable("n1");
    let elected = "";
    for (let tick = 1; tick <= 10 && elected === ""; tick++) {
      for (const id of ["n2", "n3"]) env.raw(id).tick();
      env.stabilize(["n2", "n3"]);
      elected = ["n2", "n3"].find((id) => env.raw(id).status().role === "leader") ?? "";
    }
    expect(elected).not.toBe("");
    expect(env.raw(elected).status().term).toBe(term + 1);
  });

  it("is ignored for a peer that is not the leader", () => {
    const env = newCluster(["n1", "n2", "n3"]);
    electLeader(env, "n1");
    env.raw("n2").reportUnreachable("n3");
    expect(tickUntil(env, "n2", () => env.raw("n2").status().role !== "follower", 9)).toBe(-1);
  });
});
