import type { CommandArgs } from "../datadriven.js";
import type { InteractionEnv } from "../env.js";
import { positional } from "./args.js";

/** transfer-leadership n1 n2: asks (via n1) that n2 become leader. */
export function handleTransferLeadership(env: InteractionEnv, args: CommandArgs): void {
  env.raw(positional(args, 0, "node")).transferLeadership(positional(args, 1, "transferee"));
}
