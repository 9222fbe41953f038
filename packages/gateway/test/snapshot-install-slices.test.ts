// A large snapshot installs a slice per event-loop turn (replicated-machine.ts): timers keep
// firing while 100,000 keys restore, readers see the old state until the last slice, and the
// result equals a synchronous restore of the same bytes.
import { keyStateMachine, type KeyCommand, type KeyStateSnapshot } from "@keyraft/core";
import { joinSnapshotData } from "@keyraft/raft";
import { describe, expect, it } from "vitest";
import { decodeSnapshot, snapshotSliceRecords } from "../src/cluster/entry-codec.js";
import { ReplicatedKeyMachine } from "../src/cluster/replicated-machine.js";

const keyCount = 100_000;
/**
 * The longest the loop may go without a turn during the restore: a slice takes 3-10 ms here, a
 * garbage collection up to ~150 ms; a synchronous restore of these keys blocks for ~1 s.
 */
const loopBlockedMsMax = 400;

/**
 * Timer turns that show the work ran in slices: one turn per 20 ms of it on average (the work
 * takes 1 ms per turn, snapshotTurnBudgetMs), capped at half its slice count. Not the slice
 * count itself: a fast run fits several slices in one turn's budget, and a count tied to the
 * slices failed a clean run whose encoding was quick (87 turns for 200 slices).
 */
function slicedTurnsMin(durationMs: number): number {
  return Math.min(durationMs / 20, keyCount / snapshotSliceRecords / 2);
}

function createKey(keyId: string, remaining: number | null): KeyCommand {
  return {
    type: "createKey",
    keyId,
    apiId: "api_a",
    hash: `hash_${keyId}`,
    start: "sk_",
    name: null,
    ownerId: null,
    identity: null,
    meta: { team: keyId },
    expiresAtMs: null,
    remaining,
    refill: null,
    ratelimit: null,
    enabled: true,
    environment: null,
    permissions: [],
    roles: [],
    allowCreatePermissions: false,
    allowCreateRoles: false,
    nowMs: 1,
  };
}

/** A machine holding `keyCount` keys: a few made by commands, the rest copies of one with new ids. */
function largeMachine(): ReturnType<typeof keyStateMachine> {
  const source = keyStateMachine();
  const outcomes = [
    source.apply({ type: "createApi", apiId: "api_a", name: "api", nowMs: 1 }),
    source.apply(createKey("key_ledger", 5)),
    // Spent from, so its ledger is stored (untouched ones are not).
    source.apply({ type: "spendCredits", keyId: "key_ledger", cost: 1, nowMs: 1 }),
    source.apply(createKey("key_template", null)),
  ];
  for (const outcome of outcomes) expect(outcome.ok).toBe(true);
  const capture = source.snapshot();
  const template = capture.keys.find((key) => key.id === "key_template")!;
  const keys = [...capture.keys];
  // Ids in a scrambled order (a multiplicative permutation), so the state's maps hold them out of
  // id order as live ones do (a snapshot keeps the maps' order).
  for (let i = 0; keys.length < keyCount; i++) {
    const id = `key_${String((i * 7919) % keyCount).padStart(7, "0")}`;
    keys.push({ ...template, id, hash: `hash_${id}` });
  }
  const large: KeyStateSnapshot = { ...capture, keys };
  const machine = keyStateMachine();
  machine.restore(large);
  return machine;
}

async function largeSnapshotBytes(): Promise<Uint8Array> {
  const replicated = new ReplicatedKeyMachine(largeMachine(), { origin: "n1/x", onOwnApplied: noop, onPeer: noop });
  return joinSnapshotData(await replicated.takeSnapshot()); // as storage hands them back
}

/** A timer that re-arms itself until stopped: its gaps are how long the loop went without a turn. */
function loopWatch(): { stop(): { ticks: number; gapMsMax: number } } {
  let ticks = 0;
  let gapMsMax = 0;
  let lastTickMs = performance.now();
  let running = true;
  const tick = () => {
    const nowMs = performance.now();
    gapMsMax = Math.max(gapMsMax, nowMs - lastTickMs);
    lastTickMs = nowMs;
    ticks++;
    if (running) setTimeout(tick, 0);
  };
  setTimeout(tick, 0);
  return {
    stop: () => {
      running = false;
      return { ticks, gapMsMax };
    },
  };
}

function noop(): void {}

describe("installSnapshot of a large state", () => {
  it("restores 100,000 keys in slices: the loop keeps turning, readers see the old state until the end, and the state equals a synchronous restore", async () => {
    const data = await largeSnapshotBytes();
    const metadata = { index: 42, term: 3, conf: { voters: ["n1"], learners: [] } };

    const synchronous = keyStateMachine();
    synchronous.restore(decodeSnapshot(data).keys);
    expect(synchronous.state.keys.size).toBe(keyCount);

    const target = keyStateMachine();
    target.apply({ type: "createApi", apiId: "api_old", name: "old", nowMs: 1 });
    const stateObject = target.state;
    const peers: string[] = [];
    const machine = new ReplicatedKeyMachine(target, {
      origin: "n2/x",
      onOwnApplied: noop,
      onPeer: (id) => peers.push(id),
    });

    // A timer that re-arms itself: its gaps are how long the loop went without a turn.
    let ticks = 0;
    let gapMsMax = 0;
    let lastTickMs = performance.now();
    const sawOldStateOnly: boolean[] = [];
    let running = true;
    const tick = () => {
      const nowMs = performance.now();
      gapMsMax = Math.max(gapMsMax, nowMs - lastTickMs);
      lastTickMs = nowMs;
      ticks++;
      // A reader between slices sees the whole old state: the old api, none of the new keys.
      sawOldStateOnly.push(target.state.apis.has("api_old") && target.state.keys.size === 0);
      if (running) setTimeout(tick, 0);
    };
    setTimeout(tick, 0);
    const startMs = performance.now();
    lastTickMs = startMs;
    await machine.installSnapshot({ metadata, data });
    const durationMs = performance.now() - startMs;
    running = false;
    console.log(
      `installSnapshot of ${keyCount} keys: ${durationMs.toFixed(0)} ms, ${ticks} timer turns, ` +
        `longest gap ${gapMsMax.toFixed(1)} ms (slices of ${snapshotSliceRecords} records)`,
    );

    expect(ticks).toBeGreaterThan(slicedTurnsMin(durationMs)); // the timer fired all through the restore
    expect(gapMsMax).toBeLessThan(loopBlockedMsMax);
    expect(sawOldStateOnly.every((old) => old)).toBe(true);
    expect(target.state).toBe(stateObject); // readers holding the state object see the new content
    expect(target.snapshot()).toEqual(synchronous.snapshot());
    expect(target.state.keys.idOfHash("hash_key_0012345")).toBe("key_0012345");
    expect(target.state.creditLedgers.has("key_ledger")).toBe(true);
    expect(machine.appliedIndex).toBe(42);
    expect(peers).toEqual([]);
  });
});

describe("takeSnapshot of a large state", () => {
  it("captures 100,000 keys at the call and encodes them in slices: the loop keeps turning, later commands stay out", async () => {
    const machine = largeMachine();
    const expected = machine.snapshot();
    const replicated = new ReplicatedKeyMachine(machine, { origin: "n1/x", onOwnApplied: noop, onPeer: noop });
    const watch = loopWatch();
    const startMs = performance.now();
    const taking = replicated.takeSnapshot();
    // Applied after the call, while the snapshot is encoded: not part of it.
    expect(machine.apply({ type: "createApi", apiId: "api_later", name: "later", nowMs: 2 }).ok).toBe(true);
    const data = await taking;
    const durationMs = performance.now() - startMs;
    const { ticks, gapMsMax } = watch.stop();
    console.log(
      `takeSnapshot of ${keyCount} keys: ${durationMs.toFixed(0)} ms, ${ticks} timer turns, longest gap ${gapMsMax.toFixed(1)} ms`,
    );
    expect(ticks).toBeGreaterThan(slicedTurnsMin(durationMs));
    expect(gapMsMax).toBeLessThan(loopBlockedMsMax);
    const restored = keyStateMachine();
    restored.restore(decodeSnapshot(data).keys);
    expect(restored.state.apis.has("api_later")).toBe(false);
    expect(restored.snapshot()).toEqual(expected);
  });
});
