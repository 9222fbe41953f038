// The deadline sweep of the cluster command log says "outcome unknown" only for a write that was
// sent to a leader; a write that never left this node (no leader known the whole time) is
// answered "nothing was changed", whichever of the sweep and the retry loop sees the deadline first.
import type { KeyCommand } from "@keyraft/core";
import { afterEach, describe, expect, it } from "vitest";
import { ClusterCommandLog } from "../../packages/gateway/src/cluster/cluster-command-log.js";
import type { RpcResult } from "../../packages/gateway/src/cluster/rpc.js";
import type { V1Error } from "../../packages/gateway/src/errors.js";

const createApi = (apiId: string): KeyCommand => ({ type: "createApi", apiId, name: "api", nowMs: 1 });
const logs: ClusterCommandLog[] = [];
afterEach(async () => {
  for (const log of logs.splice(0)) await log.close();
});

/** A log on a clock the test moves: the sweep (a real 10 ms interval) sees the jump first. */
function clockedLog(leader: () => string, answer: () => Promise<RpcResult>) {
  const clock = { nowMs: 0 };
  const log = new ClusterCommandLog({
    raft: { id: "n1", leader, propose: () => new Promise(() => undefined) },
    rpc: { call: () => answer() },
    origin: "n1/test",
    appliedIndex: () => 0,
    pendingMax: 10,
    timeoutMs: 100,
    retryDelayMs: 5,
    nowMs: () => clock.nowMs,
  });
  logs.push(log);
  return { log, clock };
}

describe("ClusterCommandLog deadline", () => {
  it("answers 'nothing was changed' when the sweep expires a write that was never sent", async () => {
    const { log, clock } = clockedLog(
      () => "",
      async () => ({ ok: true, index: 1 }),
    );
    const settled = log.append(createApi("api_1")).catch((error: unknown) => error as V1Error);
    clock.nowMs = 10_000; // past the deadline while the retry loop sleeps
    const error = await settled;
    expect(error.statusCode).toBe(503);
    expect(error.message).toMatch(/no cluster leader .* nothing was changed/);
  });

  it("answers 'outcome unknown' when the sweep expires a write the leader may have proposed", async () => {
    const { log, clock } = clockedLog(
      () => "n2",
      () => new Promise(() => undefined),
    ); // the leader never answers
    const settled = log.append(createApi("api_2")).catch((error: unknown) => error as V1Error);
    await new Promise((resolve) => setTimeout(resolve, 5)); // forwarded on the next loop turn
    clock.nowMs = 10_000;
    const error = await settled;
    expect(error.statusCode).toBe(503);
    expect(error.message).toMatch(/outcome is unknown/);
  });

  it("after a 'not the leader' answer (certainly not proposed) the sweep still says nothing was changed", async () => {
    let calls = 0;
    const { log, clock } = clockedLog(
      () => "n2",
      async () => {
        calls++;
        return { ok: false, retry: true, message: "n2 is not the leader" };
      },
    );
    const settled = log.append(createApi("api_3")).catch((error: unknown) => error as V1Error);
    await new Promise((resolve) => setTimeout(resolve, 5));
    clock.nowMs = 10_000;
    const error = await settled;
    expect(calls).toBeGreaterThan(0);
    expect(error.message).toMatch(/nothing was changed/);
  });
});
