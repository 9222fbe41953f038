import type { CommandArgs } from "../datadriven.js";
import type { InteractionEnv } from "../env.js";

/** status [n1 ...]: one line per node, plus the leader's view of every peer. */
export function handleStatus(env: InteractionEnv, args: CommandArgs): void {
  const ids = args.positional.length > 0 ? args.positional : [...env.nodes.keys()];
  for (const id of ids) {
    const raw = env.node(id).raw;
    if (raw === null) {
      env.output.push(`${id}: down`);
      continue;
    }
    const s = raw.status();
    const learners = s.conf.learners.length > 0 ? ` learners=${s.conf.learners.join(",")}` : "";
    const indexes = `commit=${s.commit} applied=${s.applied} last=${s.lastIndex}`;
    env.output.push(
      `${id}: ${s.role} term=${s.term} vote=${s.vote || "-"} leader=${s.leader || "-"} ${indexes} ` +
        `voters=${s.conf.voters.join(",")}${learners}`,
    );
    for (const [peer, p] of Object.entries(s.progress)) {
      env.output.push(
        `  ${peer}: ${p.state} match=${p.match} next=${p.next} inflight=${p.inflight}${p.learner ? " learner" : ""}`,
      );
    }
  }
}
