import type { CommandArgs } from "../datadriven.js";
import type { InteractionEnv } from "../env.js";
import { flag, intArg } from "./args.js";

/**
 * tick n1 [n2 ...] [count=1] [stabilize=false]: advances logical time on the named nodes (all when
 * none), interleaved as real clocks are. With stabilize=true the named nodes process readies and
 * exchange messages after every round of ticks, as a running cluster would.
 */
export function handleTick(env: InteractionEnv, args: CommandArgs): void {
  const ids = args.positional.length > 0 ? args.positional : [...env.nodes.keys()];
  const count = intArg(args, "count", 1);
  const stabilize = flag(args, "stabilize", false);
  for (let i = 0; i < count; i++) {
    for (const id of ids) if (env.node(id).raw !== null) env.tick(id, 1);
    if (stabilize) env.stabilize(ids);
  }
}
