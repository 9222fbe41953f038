import type { CommandArgs } from "../datadriven.js";
import type { InteractionEnv } from "../env.js";

/** crash n1: power loss (unsynced writes lost). restart n1: boot from durable storage. */
export function handleCrash(env: InteractionEnv, args: CommandArgs): void {
  for (const id of args.positional) env.crash(id);
}

export function handleRestart(env: InteractionEnv, args: CommandArgs): void {
  for (const id of args.positional) env.restart(id);
}
