// Rendezvous (highest random weight) hashing: the owner of an identifier among a set of nodes is
// the node with the highest score hash(node, identifier). Pure and deterministic, so every node
// that knows the same voter set picks the same owner with no coordination. Stable under
// membership change: adding a node moves only the identifiers it now wins (about 1/(n+1) of
// them); removing a node moves only the identifiers it owned, each to its next-ranked node.
import { assert } from "../assert.js";

/** Most nodes ranked for one identifier (raft's membersMax is 64). */
export const placementNodesMax = 64;

function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** FNV-1a over UTF-16 code units, from a seed, finalized with murmur3's fmix (good avalanche). */
function hash32(text: string, seed: number): number {
  let h = (0x811c9dc5 ^ seed) >>> 0;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return fmix32(h >>> 0);
}

/**
 * The weight of `nodeId` for `identifier`: 52 bits from two independent 32-bit hashes, so ties
 * are practically impossible; a tie is still broken by node id, so the order is total.
 */
export function rendezvousScore(nodeId: string, identifier: string): number {
  const text = `${nodeId.length}:${nodeId}\u0000${identifier}`;
  const high = hash32(text, 0x9e3779b9) >>> 12; // 20 bits
  const low = hash32(text, 0x7f4a7c15); // 32 bits
  return high * 2 ** 32 + low;
}

function assertNodes(nodes: readonly string[]): void {
  assert(nodes.length <= placementNodesMax, "placement: at most placementNodesMax nodes");
  assert(new Set(nodes).size === nodes.length, "placement: node ids are distinct");
}

/** Nodes ordered by preference for `identifier`: owner first, then its successors. */
export function rankNodes(identifier: string, nodes: readonly string[]): string[] {
  assertNodes(nodes);
  const scored = nodes.map((nodeId) => ({ nodeId, score: rendezvousScore(nodeId, identifier) }));
  scored.sort((a, b) => b.score - a.score || (a.nodeId < b.nodeId ? -1 : a.nodeId > b.nodeId ? 1 : 0));
  return scored.map((s) => s.nodeId);
}

/** The owner of `identifier` among `nodes` (non-empty); the order of `nodes` does not matter. */
export function ownerOf(identifier: string, nodes: readonly string[]): string {
  assert(nodes.length > 0, "ownerOf: at least one node");
  assertNodes(nodes);
  let best = "";
  let bestScore = -1;
  for (const nodeId of nodes) {
    const score = rendezvousScore(nodeId, identifier);
    if (score > bestScore || (score === bestScore && nodeId < best)) {
      best = nodeId;
      bestScore = score;
    }
  }
  return best;
}

/**
 * The owner among the nodes that are up, with the takeover rule of docs/counters.md: only the
 * first-ranked node or, when it is down, the second-ranked one (which holds the owner's
 * reservations) may serve the identifier. When both are down it returns null: fail closed.
 */
export function servingNode(
  identifier: string,
  voters: readonly string[],
  isUp: (nodeId: string) => boolean,
): string | null {
  const ranked = rankNodes(identifier, voters);
  const first = ranked[0];
  if (first === undefined) return null;
  if (isUp(first)) return first;
  const second = ranked[1];
  return second !== undefined && isUp(second) ? second : null;
}
