import type { CommandArgs } from "../datadriven.js";
import type { InteractionEnv } from "../env.js";

/** stabilize [n1 ...]: processes readies and delivers messages until nothing is left to do. */
export function handleStabilize(env: InteractionEnv, args: CommandArgs): void {
  env.stabilize(args.positional);
}
