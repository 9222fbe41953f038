import type { CommandArgs } from "../datadriven.js";
import type { InteractionEnv } from "../env.js";
import { positional } from "./args.js";

/** campaign n1: starts an election (pre-vote first when enabled). */
export function handleCampaign(env: InteractionEnv, args: CommandArgs): void {
  env.raw(positional(args, 0, "node")).campaign();
}
