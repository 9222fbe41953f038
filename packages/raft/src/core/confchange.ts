import { assert, RaftAssertionError } from "./assert.js";
import { RaftError } from "./errors.js";
import type { ConfChange, ConfState, NodeId } from "./types.js";

/** Longest node id accepted in a membership change (ids travel in every message). */
export const nodeIdBytesMax = 64;
/** Largest cluster we accept; quorum math and per-peer buffers are sized by it. */
export const membersMax = 64;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Encodes a ConfChange as the data of a "conf" entry (JSON: small, readable in dumps). */
/**
 * The term of a founding member's first entries: its initial membership as conf entries 1..k,
 * committed by fiat (Raft.bootstrap). No leader is ever elected in it (campaigns start at the next
 * term), so a conf entry of this term is one of those.
 */
export const bootstrapTerm = 1;

export function encodeConfChange(change: ConfChange): Uint8Array {
  const data = encoder.encode(JSON.stringify({ type: change.type, node: change.node }));
  assert(decodeConfChange(data).node === change.node, "conf change must round-trip");
  return data;
}

export function decodeConfChange(data: Uint8Array): ConfChange {
  const value: unknown = JSON.parse(decoder.decode(data));
  assert(typeof value === "object" && value !== null, "conf change: not an object");
  const { type, node } = value as { type?: unknown; node?: unknown };
  assert(typeof node === "string" && node.length > 0, "conf change: bad node");
  switch (type) {
    case "addLearner":
    case "promote":
    case "remove":
      return { type, node };
    default:
      throw new RaftAssertionError(`conf change: unknown type ${String(type)}`);
  }
}

/** Checks a proposed change against the current configuration; throws RAFT_ERR_CONF_CHANGE_INVALID. */
export function validateConfChange(conf: ConfState, change: ConfChange): void {
  const invalid = (why: string): never => {
    throw new RaftError("RAFT_ERR_CONF_CHANGE_INVALID", `${change.type} ${change.node}: ${why}`);
  };
  if (change.node.length === 0 || change.node.length > nodeIdBytesMax) invalid("bad node id");
  const isVoter = conf.voters.includes(change.node);
  const isLearner = conf.learners.includes(change.node);
  switch (change.type) {
    case "addLearner":
      if (isVoter || isLearner) invalid("already a member");
      if (conf.voters.length + conf.learners.length >= membersMax) invalid("membersMax reached");
      return;
    case "promote":
      if (!isLearner) invalid("not a learner");
      return;
    case "remove":
      if (!isVoter && !isLearner) invalid("not a member");
      if (isVoter && conf.voters.length === 1) invalid("cannot remove the last voter");
      return;
    default: {
      const never: never = change;
      return never;
    }
  }
}

/** The configuration after `change`. Changes that no longer apply (replayed) leave it unchanged. */
export function applyConfChange(conf: ConfState, change: ConfChange): ConfState {
  const without = (ids: NodeId[]) => ids.filter((id) => id !== change.node);
  switch (change.type) {
    case "addLearner":
      if (conf.voters.includes(change.node) || conf.learners.includes(change.node)) return conf;
      return { voters: [...conf.voters], learners: [...conf.learners, change.node] };
    case "promote":
      if (!conf.learners.includes(change.node)) return conf;
      return { voters: [...conf.voters, change.node], learners: without(conf.learners) };
    case "remove": {
      const next = { voters: without(conf.voters), learners: without(conf.learners) };
      // A committed change never removes the last voter (validated on proposal).
      assert(next.voters.length > 0, "conf change removed the last voter");
      return next;
    }
    default: {
      const never: never = change;
      return never;
    }
  }
}
