import { encodeConfChange } from "../src/core/confchange.js";
import type { RaftConfig } from "../src/core/config.js";
import type { Message } from "../src/core/messages.js";
import type { Entry, NodeId } from "../src/core/types.js";
import { InteractionEnv } from "../src/sim/interaction/env.js";
import { SimStorage } from "../src/sim/sim-storage.js";

const encoder = new TextEncoder();

export function entry(term: number, index: number, data = ""): Entry {
  return { term, index, type: "normal", data: encoder.encode(data) };
}

/** Entries of the given terms right after the bootstrap entries of `voterCount` voters. */
export function suffix(voterCount: number, ...terms: number[]): Entry[] {
  return terms.map((term, i) => entry(term, 2 * voterCount + 1 + i, `t${term}i${i}`));
}

/** The conf entries a founding cluster writes at term 1 (what bootstrap produces). */
export function bootstrapEntries(voters: readonly NodeId[]): Entry[] {
  return voters
    .flatMap((node) => [encodeConfChange({ type: "addLearner", node }), encodeConfChange({ type: "promote", node })])
    .map((data, i): Entry => ({ term: 1, index: i + 1, type: "conf", data }));
}

/** A cluster whose nodes start from hand-built logs: bootstrap entries, then `extra[id]`, at hard state `term`. */
export function clusterWithLogs(
  voters: readonly NodeId[],
  extra: Record<NodeId, Entry[]>,
  term: number,
  options: Partial<RaftConfig> = {},
): InteractionEnv {
  const env = new InteractionEnv();
  const base = bootstrapEntries(voters);
  for (const id of voters) {
    const storage = new SimStorage();
    storage.appendSync([...base, ...(extra[id] ?? [])], { term, vote: "", commit: base.length }, true);
    env.addNode({ id, voters: [...voters], preVote: false, checkQuorum: false, ...options }, storage);
  }
  env.stabilize(); // apply the bootstrap conf entries
  env.takeOutput();
  return env;
}

export function newCluster(ids: readonly NodeId[], options: Partial<RaftConfig> = {}): InteractionEnv {
  const env = new InteractionEnv();
  for (const id of ids) env.addNode({ id, voters: [...ids], ...options });
  env.stabilize();
  env.takeOutput();
  return env;
}

export function electLeader(env: InteractionEnv, id: NodeId): void {
  env.raw(id).campaign();
  env.stabilize();
  env.takeOutput();
}

export function termAt(env: InteractionEnv, id: NodeId, index: number): number {
  return env.node(id).storage.term(index);
}

export function queued(env: InteractionEnv, predicate: (m: Message) => boolean): Message[] {
  return env.queue.filter(predicate);
}
