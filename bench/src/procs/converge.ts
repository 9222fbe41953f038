// After seeding a cluster through one node: wait until every node has applied everything the
// cluster had committed, so the load phases never hit a node that does not know the seed yet (a
// verification would answer NOT_FOUND there and the phase would measure the replication lag).
import { BenchError } from "../errors.js";
import { getJson } from "../http.js";
import { limits } from "../limits.js";
import { sleep } from "./child.js";

interface ApplyProgress {
  commitIndex: number;
  appliedIndex: number;
}

/** A node's Raft progress from `GET /v1/cluster.status` (read with a root key); null when the target does not serve it. */
export async function applyProgress(target: string, rootKey: string): Promise<ApplyProgress | null> {
  try {
    const answer = await getJson(target, "/v1/cluster.status", rootKey);
    const body = answer.body as Partial<Record<keyof ApplyProgress, unknown>> | null;
    if (answer.status !== 200 || body === null || typeof body !== "object") return null;
    const { commitIndex, appliedIndex } = body;
    return typeof commitIndex === "number" && typeof appliedIndex === "number" ? { commitIndex, appliedIndex } : null;
  } catch {
    return null;
  }
}

/** The index every target must apply: the highest commit index any of them knows now. */
export function convergenceGoal(progress: readonly (ApplyProgress | null)[]): number | null {
  let goal = 0;
  for (const entry of progress) {
    if (entry === null) return null;
    goal = Math.max(goal, entry.commitIndex);
  }
  return goal;
}

/**
 * Waits until every target applied what was committed anywhere when it was called (a write that
 * was acknowledged was committed). Returns the index waited for, or null when some target does
 * not report its progress (not a keyraft cluster node): then nothing can be waited for.
 */
export async function waitConverged(
  targets: readonly string[],
  rootKey: string,
  timeoutMs = limits.convergeTimeoutMs,
): Promise<number | null> {
  const progressOf = (target: string) => applyProgress(target, rootKey);
  const goal = convergenceGoal(await Promise.all(targets.map(progressOf)));
  if (goal === null) return null;
  const deadlineMs = Date.now() + timeoutMs;
  for (;;) {
    const progress = await Promise.all(targets.map(progressOf));
    const behind = targets.filter((_, i) => (progress[i]?.appliedIndex ?? -1) < goal);
    if (behind.length === 0) return goal;
    if (Date.now() > deadlineMs) {
      throw new BenchError(
        `the seed did not reach every node within ${timeoutMs} ms: ${behind.join(", ")} had not applied index ${goal}`,
      );
    }
    await sleep(limits.convergePollMs);
  }
}
