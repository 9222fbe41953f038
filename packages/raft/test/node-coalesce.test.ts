import { describe, expect, it } from "vitest";
import type { AppendMessage, Message } from "../src/core/messages.js";
import type { Entry } from "../src/core/types.js";
import { coalesceAppends, coalescedAppendBytesMax } from "../src/driver/coalesce.js";

const entry = (index: number, term = 2, bytes = 1): Entry => ({
  index,
  term,
  type: "normal",
  data: new Uint8Array(bytes),
});

function app(to: string, index: number, logTerm: number, entries: Entry[], commit: number): AppendMessage {
  return { type: "app", from: "n1", to, term: 2, index, logTerm, entries, commit };
}

const heartbeat = (to: string): Message => ({ type: "heartbeat", from: "n1", to, term: 2, commit: 0, context: null });

describe("coalesceAppends", () => {
  it("merges chained appends per follower, keeps the highest commit", () => {
    const input = [
      app("n2", 4, 1, [entry(5)], 3),
      app("n3", 4, 1, [entry(5)], 3),
      app("n2", 5, 2, [entry(6)], 4),
      app("n3", 5, 2, [entry(6)], 4),
      app("n2", 6, 2, [], 6),
    ];
    const copy = structuredClone(input);
    const out = coalesceAppends(input);
    expect(out).toEqual([app("n2", 4, 1, [entry(5), entry(6)], 6), app("n3", 4, 1, [entry(5), entry(6)], 4)]);
    expect(input).toEqual(copy); // the core's messages are not modified
  });

  it("does not merge across another message to the same peer, nor appends that do not chain", () => {
    const input = [
      app("n2", 4, 1, [entry(5)], 3),
      heartbeat("n2"),
      app("n2", 5, 2, [entry(6)], 3),
      app("n2", 9, 2, [entry(10)], 3),
      app("n2", 10, 1, [entry(11)], 3),
    ];
    expect(coalesceAppends(input)).toEqual(input);
  });

  it("merges an empty commit-only append into the previous one", () => {
    expect(coalesceAppends([app("n2", 4, 1, [], 2), app("n2", 4, 1, [], 4)])).toEqual([app("n2", 4, 1, [], 4)]);
  });

  it("stops merging at coalescedAppendBytesMax (at the limit merges, past it starts a new message)", () => {
    const half = coalescedAppendBytesMax / 2;
    const atLimit = coalesceAppends([app("n2", 0, 0, [entry(1, 2, half)], 0), app("n2", 1, 2, [entry(2, 2, half)], 0)]);
    expect(atLimit).toHaveLength(1);
    const past = coalesceAppends([
      app("n2", 0, 0, [entry(1, 2, half)], 0),
      app("n2", 1, 2, [entry(2, 2, half + 1)], 0),
    ]);
    expect(past).toHaveLength(2);
  });

  it("keeps only the last of consecutive successful append responses to a peer; never drops a rejection", () => {
    const resp = (index: number, reject = false): Message => ({
      type: "appResp",
      from: "n2",
      to: "n1",
      term: 2,
      index,
      reject,
      rejectHint: 0,
      logTerm: 0,
    });
    expect(coalesceAppends([resp(8), resp(9), resp(9), resp(12)])).toEqual([resp(12)]);
    expect(coalesceAppends([resp(8), resp(7, true), resp(9)])).toEqual([resp(8), resp(7, true), resp(9)]);
    expect(coalesceAppends([resp(9), resp(8)])).toEqual([resp(9), resp(8)]); // not monotonic: keep both
  });
});
