import { assert } from "./assert.js";
import type { NodeId } from "./types.js";

/** Votes needed among `voterCount` voters: a strict majority. */
export function quorumSize(voterCount: number): number {
  assert(voterCount >= 1, "quorum of an empty configuration");
  return Math.floor(voterCount / 2) + 1;
}

/** The highest index replicated on a majority of voters: the median of match indexes, sorted descending. */
export function committedIndex(voters: readonly NodeId[], matchOf: (id: NodeId) => number): number {
  const matches = voters.map(matchOf).sort((a, b) => b - a);
  const index = matches[quorumSize(voters.length) - 1];
  assert(index !== undefined, "committedIndex: quorum larger than voter set");
  return index;
}

export type VoteResult = "won" | "lost" | "pending";

/** Outcome of an election given granted/rejected votes (absent voters have not answered). */
export function voteResult(voters: readonly NodeId[], votes: ReadonlyMap<NodeId, boolean>): VoteResult {
  let granted = 0;
  let rejected = 0;
  for (const id of voters) {
    const vote = votes.get(id);
    if (vote === true) granted++;
    else if (vote === false) rejected++;
  }
  const quorum = quorumSize(voters.length);
  if (granted >= quorum) return "won";
  if (rejected > voters.length - quorum) return "lost";
  return "pending";
}

/** Whether the voters in `acks` form a majority. */
export function hasQuorum(voters: readonly NodeId[], acks: ReadonlySet<NodeId>): boolean {
  let count = 0;
  for (const id of voters) if (acks.has(id)) count++;
  return count >= quorumSize(voters.length);
}
