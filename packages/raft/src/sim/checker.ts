import type { Entry, NodeId } from "../core/types.js";
import type { SimStorage } from "./sim-storage.js";

/** A safety property was violated: the message names the property and the evidence. */
export class SafetyViolation extends Error {
  override readonly name = "SafetyViolation";
}

function entryKey(entry: Entry): string {
  let key = `${entry.term}:${entry.type}:`;
  for (const byte of entry.data) key += byte.toString(16).padStart(2, "0");
  return key;
}

/**
 * Checks the Raft safety properties (paper Figure 3) across the whole simulated cluster:
 * election safety, log matching, leader completeness, state-machine safety, and that reads
 * (ReadIndex) never return an index older than a commit that finished before they started.
 */
export class SafetyChecker {
  private readonly leaderOfTerm = new Map<number, NodeId>();
  /** (index/term) -> entry key and the term of the previous index. */
  private readonly logEntries = new Map<string, { key: string; prevTerm: number | null }>();
  /** index -> applied entry key and the state machine digest after it. */
  private readonly applied = new Map<number, { key: string; term: number; digest: number }>();
  /** Highest index applied anywhere: a read that starts now must see at least this. */
  appliedMax = 0;

  private fail(property: string, detail: string): never {
    throw new SafetyViolation(`${property}: ${detail}`);
  }

  /** Election safety: at most one leader per term. Leader completeness: it has every committed entry. */
  observeLeader(id: NodeId, term: number, storage: SimStorage): void {
    const known = this.leaderOfTerm.get(term);
    if (known === id) return;
    if (known !== undefined) this.fail("election safety", `term ${term} has leaders ${known} and ${id}`);
    this.leaderOfTerm.set(term, id);
    // A leader elected late in an older term (its votes were held in the network) need not hold
    // entries a later term committed: completeness is about entries committed in terms before its
    // own. It cannot commit anything (a quorum has moved on), and the other checks still hold it.
    const stale = term < this.leaderTermMax;
    this.leaderTermMax = Math.max(this.leaderTermMax, term);
    if (!stale) this.checkCompleteness(id, term, storage);
  }

  /** The highest term of any leader observed so far. */
  private leaderTermMax = 0;

  private checkCompleteness(id: NodeId, term: number, storage: SimStorage): void {
    for (const [index, entry] of this.applied) {
      if (entry.term >= term || index < storage.firstIndex()) continue; // later term, or inside its snapshot
      if (index > storage.lastIndex()) {
        this.fail("leader completeness", `leader ${id} (term ${term}) lacks committed entry ${index}`);
      }
      const own = storage.term(index);
      if (own !== entry.term) {
        this.fail(
          "leader completeness",
          `leader ${id} (term ${term}) has term ${own} at committed index ${index}, want ${entry.term}`,
        );
      }
    }
  }

  /** Log matching: entries with the same index and term hold the same command and follow the same previous term. */
  observePersisted(id: NodeId, entries: readonly Entry[], storage: SimStorage): void {
    for (const entry of entries) {
      let prevTerm: number | null;
      try {
        prevTerm = entry.index > 1 ? storage.term(entry.index - 1) : 0;
      } catch {
        prevTerm = null; // previous entry compacted away
      }
      const slot = `${entry.index}/${entry.term}`;
      const key = entryKey(entry);
      const seen = this.logEntries.get(slot);
      if (seen === undefined) {
        this.logEntries.set(slot, { key, prevTerm });
        continue;
      }
      if (seen.key !== key)
        this.fail("log matching", `${id} index ${entry.index} term ${entry.term} holds a different command`);
      if (seen.prevTerm !== null && prevTerm !== null && seen.prevTerm !== prevTerm) {
        this.fail(
          "log matching",
          `${id} index ${entry.index} term ${entry.term} follows term ${prevTerm}, elsewhere ${seen.prevTerm}`,
        );
      }
    }
  }

  /** State-machine safety: no two nodes apply different entries at an index, and their states agree. */
  observeApplied(id: NodeId, entry: Entry, digest: number): void {
    const key = entryKey(entry);
    const seen = this.applied.get(entry.index);
    if (seen === undefined) {
      this.applied.set(entry.index, { key, term: entry.term, digest });
      this.appliedMax = Math.max(this.appliedMax, entry.index);
      return;
    }
    if (seen.key !== key) this.fail("state-machine safety", `${id} applied a different entry at ${entry.index}`);
    if (seen.digest !== digest) this.fail("state-machine safety", `${id} state differs after ${entry.index}`);
  }

  /** A snapshot installed at `index` must carry the state every node had after applying `index`. */
  observeSnapshotInstalled(id: NodeId, index: number, digest: number): void {
    const seen = this.applied.get(index);
    if (seen !== undefined && seen.digest !== digest)
      this.fail("state-machine safety", `${id} installed a snapshot at ${index} with a different state`);
    if (seen === undefined && index > 0)
      this.fail("state-machine safety", `${id} installed a snapshot at ${index} never applied by anyone`);
  }

  /** Linearizable reads: the read index covers every write applied before the read began. */
  observeRead(id: NodeId, readIndex: number, appliedMaxAtStart: number): void {
    if (readIndex < appliedMaxAtStart) {
      this.fail(
        "linearizable read",
        `${id} read at ${readIndex} but ${appliedMaxAtStart} was applied before the read started`,
      );
    }
  }

  appliedEntry(index: number): { term: number } | undefined {
    return this.applied.get(index);
  }
}
