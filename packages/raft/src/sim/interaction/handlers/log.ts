import type { CommandArgs } from "../datadriven.js";
import type { InteractionEnv } from "../env.js";
import { formatEntry } from "../format.js";

/** log n1: the node's persisted log (after its snapshot, if any). */
export function handleLog(env: InteractionEnv, args: CommandArgs): void {
  for (const id of args.positional) {
    const storage = env.node(id).storage;
    const first = storage.firstIndex();
    const last = storage.lastIndex();
    const snapshot = storage.snapshot().metadata;
    const head = snapshot.index > 0 ? ` snapshot=${snapshot.term}/${snapshot.index}` : "";
    const entries = last >= first ? storage.entries(first, last + 1, Number.MAX_SAFE_INTEGER) : [];
    env.output.push(`${id}:${head} ${entries.length === 0 ? "(empty)" : entries.map(formatEntry).join(", ")}`);
  }
}
