// The root-key generation loop of a new cluster (cluster/root-key.ts) against a scripted replica:
// only a leader generates, only after a read barrier, a key committed by an earlier leader but
// not yet applied here is seen after the barrier (no second key), and an "outcome unknown" write
// that committed after all is recognised (the same plaintext; nothing proposed twice).
import pino from "pino";
import { describe, expect, it } from "vitest";
import { generateRootKeyOnce, type RootKeyLink } from "../../packages/gateway/src/cluster/root-key.js";

const logger = pino({ level: "silent" });
const options = { pollMs: 1, logger, stopped: () => false };

interface Replica {
  leader: boolean;
  /** Root-key hashes applied on this node. */
  applied: string[];
  /** Root-key hashes committed but applied here only once a barrier completes. */
  committedNotApplied: string[];
  proposals: string[];
  barriers: number;
}

function link(replica: Replica, propose: (secret: string) => Promise<void>): RootKeyLink {
  return {
    isLeader: () => replica.leader,
    barrier: async () => {
      replica.barriers++;
      replica.applied.push(...replica.committedNotApplied.splice(0));
    },
    rootKeyHash: () => replica.applied[0] ?? null,
    propose: async (secret) => {
      replica.proposals.push(secret);
      await propose(secret);
    },
    hash: (secret) => `hash(${secret})`,
  };
}

const fresh = (leader: boolean): Replica => ({
  leader,
  applied: [],
  committedNotApplied: [],
  proposals: [],
  barriers: 0,
});

describe("generateRootKeyOnce", () => {
  it("a new leader sees its predecessor's committed key after the barrier and generates none", async () => {
    const replica = fresh(true);
    replica.committedNotApplied.push("hash(predecessor)"); // committed under the old leader, not applied here yet
    const result = await generateRootKeyOnce(
      link(replica, async () => undefined),
      "mine",
      options,
    );
    expect(result).toBe("exists");
    expect(replica.barriers).toBe(1);
    expect(replica.proposals).toEqual([]);
  });

  it("a follower never generates; it returns once the key arrives through the log", async () => {
    const replica = fresh(false);
    const running = generateRootKeyOnce(
      link(replica, async () => undefined),
      "mine",
      options,
    );
    await new Promise((resolve) => setTimeout(resolve, 20));
    replica.applied.push("hash(leader's)");
    await expect(running).resolves.toBe("exists");
    expect(replica.proposals).toEqual([]);
    expect(replica.barriers).toBe(0);
  });

  it("a follower that comes to lead while there is none generates, after a barrier", async () => {
    const replica = fresh(false);
    const running = generateRootKeyOnce(
      link(replica, async (secret) => {
        replica.applied.push(`hash(${secret})`);
      }),
      "mine",
      options,
    );
    await new Promise((resolve) => setTimeout(resolve, 10));
    replica.leader = true;
    await expect(running).resolves.toBe("generated");
    expect(replica.proposals).toEqual(["mine"]);
    expect(replica.barriers).toBe(1);
  });

  it("an outcome-unknown write that committed after all is recognised as ours: printed, not proposed again", async () => {
    const replica = fresh(true);
    const result = await generateRootKeyOnce(
      link(replica, async (secret) => {
        replica.committedNotApplied.push(`hash(${secret})`); // it commits ...
        throw new Error("outcome unknown: not applied on this node within 5000 ms"); // ... but the answer was lost
      }),
      "mine",
      options,
    );
    expect(result).toBe("generated");
    expect(replica.proposals).toEqual(["mine"]);
  });

  it("a write that was lost is proposed again with the same plaintext after a new barrier", async () => {
    const replica = fresh(true);
    let attempts = 0;
    const result = await generateRootKeyOnce(
      link(replica, async (secret) => {
        if (++attempts === 1) throw new Error("leadership lost"); // overwritten: never commits
        replica.applied.push(`hash(${secret})`);
      }),
      "mine",
      options,
    );
    expect(result).toBe("generated");
    expect(replica.proposals).toEqual(["mine", "mine"]);
    expect(replica.barriers).toBe(2);
  });

  it("stops without a key when the node stops", async () => {
    const replica = fresh(false);
    let stopped = false;
    const running = generateRootKeyOnce(
      link(replica, async () => undefined),
      "mine",
      { ...options, stopped: () => stopped },
    );
    stopped = true;
    await expect(running).resolves.toBe("stopped");
  });
});
