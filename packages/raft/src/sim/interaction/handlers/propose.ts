import { RaftError } from "../../../core/errors.js";
import type { CommandArgs } from "../datadriven.js";
import type { InteractionEnv } from "../env.js";
import { positional } from "./args.js";

/** propose n1 data: proposes a command; prints where it went or the coded error. */
export function handlePropose(env: InteractionEnv, args: CommandArgs): void {
  const id = positional(args, 0, "node");
  try {
    const proposal = env.raw(id).propose(new TextEncoder().encode(positional(args, 1, "data")));
    env.output.push(`proposed at ${proposal.term}/${proposal.index}`);
  } catch (error) {
    if (!(error instanceof RaftError)) throw error;
    env.output.push(`${error.code}${error.leader === "" ? "" : ` leader=${error.leader}`}`);
  }
}
