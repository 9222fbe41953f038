import { RaftError } from "../../../core/errors.js";
import type { CommandArgs } from "../datadriven.js";
import type { InteractionEnv } from "../env.js";
import { positional } from "./args.js";

/** read-index n1 ctx: requests a linearizable read; the result shows up as a readState in a Ready. */
export function handleReadIndex(env: InteractionEnv, args: CommandArgs): void {
  try {
    env.raw(positional(args, 0, "node")).readIndex(new TextEncoder().encode(positional(args, 1, "context")));
  } catch (error) {
    if (!(error instanceof RaftError)) throw error;
    env.output.push(error.code);
  }
}
