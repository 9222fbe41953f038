// The generated root key of a new cluster (no KEYRAFT_ROOT_KEY): exactly one, and known.
//
// Every founder runs this loop until its replica holds a root key. Only a leader generates, and
// only after a read barrier in its term: the barrier completes once an entry of this leader's term
// is committed and this node applied everything before it. A root-key entry proposed by an
// earlier leader is then either applied here (seen: nothing generated) or can never commit
// (terms only grow along the log, so it cannot follow this term's committed entry). Two leaders of
// different terms therefore never both get a generated key committed, and one leader runs this
// loop once. Without the barrier, a new leader that had not yet applied its predecessor's entry
// generated a second key.
//
// The plaintext is drawn once per process and kept across attempts: a write answered "outcome
// unknown" that committed after all is recognised by its hash and printed then, instead of
// leaving a root key nobody knows (and a retry with a fresh plaintext making a second one).
import type { Logger } from "pino";

export interface RootKeyLink {
  isLeader(): boolean;
  /** Read barrier (Raft read-index): resolves once this node applied everything committed before it. */
  barrier(): Promise<void>;
  /** Hash of a root key in this node's replica, or null when there is none. */
  rootKeyHash(): string | null;
  /** Proposes `secret` as the root key (bootstrapRootKey with KEYRAFT_ROOT_KEY = secret); resolves once applied here. */
  propose(secret: string): Promise<void>;
  hash(secret: string): string;
}

export interface GenerateRootKeyOptions {
  /** Pause between checks while this node is not the leader or a write did not go through. */
  pollMs: number;
  logger: Logger;
  /** True once the node is stopping: the loop ends without a key. */
  stopped(): boolean;
}

/** "generated": `secret` is the cluster's root key (print it once); "exists": another key was there or came first; "stopped". */
export type RootKeyResult = "generated" | "exists" | "stopped";

export async function generateRootKeyOnce(
  link: RootKeyLink,
  secret: string,
  options: GenerateRootKeyOptions,
): Promise<RootKeyResult> {
  const ours = link.hash(secret);
  const settled = (): RootKeyResult | null => {
    const existing = link.rootKeyHash();
    if (existing === null) return null;
    return existing === ours ? "generated" : "exists";
  };
  const pause = () => new Promise((resolve) => setTimeout(resolve, options.pollMs));
  for (;;) {
    if (options.stopped()) return "stopped";
    const before = settled();
    if (before !== null) return before;
    if (!link.isLeader()) {
      await pause();
      continue;
    }
    try {
      await link.barrier();
    } catch (error) {
      options.logger.debug({ err: (error as Error).message }, "root key: read barrier failed; trying again");
      await pause();
      continue;
    }
    const after = settled();
    if (after !== null) return after;
    if (!link.isLeader()) continue;
    try {
      await link.propose(secret);
    } catch (error) {
      // Not proposed, or outcome unknown: the next round's barrier tells which (our hash applied, or nothing).
      options.logger.warn(
        { err: (error as Error).message },
        "root key: the cluster did not take the write; checking again",
      );
      await pause();
    }
  }
}
