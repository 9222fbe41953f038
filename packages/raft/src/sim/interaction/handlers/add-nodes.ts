import type { CommandArgs } from "../datadriven.js";
import type { InteractionEnv } from "../env.js";
import { flag, idList, intArg } from "./args.js";

/** add-nodes n1 n2 n3 [voters=n1,n2,n3] [learners=] [prevote=true] [checkquorum=true] [election=10] [heartbeat=1] [inflight=256] [maxmsg=N] [chunk=N] */
export function handleAddNodes(env: InteractionEnv, args: CommandArgs): void {
  const voters = args.named.has("voters") ? idList(args.named.get("voters")) : args.positional;
  const learners = idList(args.named.get("learners"));
  for (const id of args.positional) {
    env.addNode({
      id,
      voters,
      learners,
      preVote: flag(args, "prevote", true),
      checkQuorum: flag(args, "checkquorum", true),
      electionTicks: intArg(args, "election", 10),
      heartbeatTicks: intArg(args, "heartbeat", 1),
      maxInflightMsgs: intArg(args, "inflight", 256),
      maxSizePerMsgBytes: intArg(args, "maxmsg", 1 << 20),
      maxSnapshotChunkBytes: intArg(args, "chunk", 1 << 20),
    });
  }
}
