// The leader clamps a forwarded command's time to its own clock (src/cluster/command-time.ts): a
// proposer days ahead cannot move a refill instant or a timestamp past the leader's clock.
import { describe, expect, it } from "vitest";
import { clampCommandTimes, commandClockSkewMaxMs } from "../src/cluster/command-time.js";
import { decodeEntries, encodeBatch, encodeEntry } from "../src/cluster/entry-codec.js";

const leaderNowMs = Date.UTC(2026, 10, 25, 12);
const dayMs = 86_400_000;
const spend = (nowMs: number, seq = 1) =>
  encodeEntry({
    kind: "command",
    origin: "n2/p",
    seq,
    command: { type: "spendCredits", keyId: "k", cost: 1, nowMs },
  });

function times(data: Uint8Array): Array<number | undefined> {
  return decodeEntries(data).map((entry) =>
    entry.kind === "command" ? (entry.command as { nowMs?: number }).nowMs : undefined,
  );
}

describe("clampCommandTimes", () => {
  it("clamps a time days ahead or behind to the leader's clock within the skew, in single entries and batches", () => {
    expect(times(clampCommandTimes(spend(leaderNowMs + 3 * dayMs), leaderNowMs))).toEqual([
      leaderNowMs + commandClockSkewMaxMs,
    ]);
    expect(times(clampCommandTimes(spend(leaderNowMs - 3 * dayMs), leaderNowMs))).toEqual([
      leaderNowMs - commandClockSkewMaxMs,
    ]);
    const batch = encodeBatch([
      spend(leaderNowMs + 3 * dayMs, 1),
      encodeEntry({ kind: "peer", id: "n4", url: "ws://127.0.0.1:1" }),
      spend(leaderNowMs + 200, 2),
    ]);
    expect(times(clampCommandTimes(batch, leaderNowMs))).toEqual([
      leaderNowMs + commandClockSkewMaxMs,
      undefined,
      leaderNowMs + 200,
    ]);
  });

  it("keeps the very bytes when every time is within the skew (the entry the proposer checked)", () => {
    const single = spend(leaderNowMs - 300);
    expect(clampCommandTimes(single, leaderNowMs)).toBe(single);
    const batch = encodeBatch([spend(leaderNowMs, 1), spend(leaderNowMs + 999, 2)]);
    expect(clampCommandTimes(batch, leaderNowMs)).toBe(batch);
  });
});
