import type { CommandArgs } from "../datadriven.js";
import type { InteractionEnv } from "../env.js";

/** process-ready n1 [n2 ...]: runs one Ready of each node through the contract (persist, send, apply, advance). */
export function handleProcessReady(env: InteractionEnv, args: CommandArgs): void {
  for (const id of args.positional) if (!env.processReady(id)) env.output.push(`> ${id} no ready`);
}
