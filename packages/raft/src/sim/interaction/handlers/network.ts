import type { CommandArgs } from "../datadriven.js";
import type { InteractionEnv } from "../env.js";

/** isolate n1 | heal | cut n1->n2: partitions the hand-driven network (drops at delivery). */
export function handleIsolate(env: InteractionEnv, args: CommandArgs): void {
  for (const id of args.positional) env.isolated.add(id);
}

export function handleHeal(env: InteractionEnv, _args: CommandArgs): void {
  env.isolated.clear();
  env.cutLinks.clear();
}

export function handleCut(env: InteractionEnv, args: CommandArgs): void {
  for (const link of args.positional) env.cutLinks.add(link);
}
