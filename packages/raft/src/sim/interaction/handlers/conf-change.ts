import { assert } from "../../../core/assert.js";
import { RaftError } from "../../../core/errors.js";
import type { ConfChange } from "../../../core/types.js";
import type { CommandArgs } from "../datadriven.js";
import type { InteractionEnv } from "../env.js";
import { positional } from "./args.js";

/** propose-conf-change n1 addLearner|promote|remove n4 */
export function handleConfChange(env: InteractionEnv, args: CommandArgs): void {
  const id = positional(args, 0, "node");
  const type = positional(args, 1, "change type");
  assert(type === "addLearner" || type === "promote" || type === "remove", `unknown change ${type}`);
  const change: ConfChange = { type, node: positional(args, 2, "target node") };
  try {
    const proposal = env.raw(id).proposeConfChange(change);
    env.output.push(`proposed at ${proposal.term}/${proposal.index}`);
  } catch (error) {
    if (!(error instanceof RaftError)) throw error;
    env.output.push(error.code);
  }
}
