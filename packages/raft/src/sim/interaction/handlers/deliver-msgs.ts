import { formatMessage } from "../format.js";
import type { CommandArgs } from "../datadriven.js";
import type { InteractionEnv } from "../env.js";

/** deliver-msgs [n1 ...] [drop=true]: delivers (or drops) queued messages to the named nodes (all when none). */
export function handleDeliverMsgs(env: InteractionEnv, args: CommandArgs): void {
  const to = args.positional;
  const dropping = args.named.get("drop") === "true";
  for (const message of env.queue) {
    if (to.length === 0 || to.includes(message.to))
      env.output.push(`  ${dropping ? "dropped" : "deliver"} ${formatMessage(message)}`);
  }
  if (dropping) env.queue = env.queue.filter((m) => to.length > 0 && !to.includes(m.to));
  else env.deliver(to);
}
