import type { CommandArgs } from "../datadriven.js";
import type { InteractionEnv } from "../env.js";
import { intArg, positional } from "./args.js";

/** compact n1 [padding=N]: the app snapshots at its applied index and the log before it is discarded. */
export function handleCompact(env: InteractionEnv, args: CommandArgs): void {
  const node = env.node(positional(args, 0, "node"));
  const raw = env.raw(node.id);
  const index = node.app.appliedIndex;
  node.storage.createSnapshotSync(index, raw.confState(), node.app.encode(intArg(args, "padding", 0)));
  env.output.push(`${node.id} snapshot at ${index}, first index now ${node.storage.firstIndex()}`);
}
