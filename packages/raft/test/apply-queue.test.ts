import { describe, expect, it } from "vitest";
import { RaftAssertionError } from "../src/core/assert.js";
import type { Entry, Snapshot } from "../src/core/types.js";
import { ApplyQueue, applyQueueLimits } from "../src/driver/apply-queue.js";

const entry = (index: number, bytes = 0): Entry => ({ term: 1, index, type: "normal", data: new Uint8Array(bytes) });
const range = (from: number, count: number, bytes = 0): Entry[] =>
  Array.from({ length: count }, (_, i) => entry(from + i, bytes));
const snapshot = (index: number, bytes: number): Snapshot => ({
  metadata: { index, term: 1, conf: { voters: ["n1"], learners: [] } },
  data: new Uint8Array(bytes),
});

describe("ApplyQueue (what the Ready loop hands to the applier)", () => {
  it("hands work back in order and counts entries and bytes", () => {
    const queue = new ApplyQueue();
    queue.push({ kind: "entries", entries: range(1, 3, 10) });
    queue.push({ kind: "snapshot", snapshot: snapshot(10, 1 << 20) });
    queue.push({ kind: "entries", entries: range(11, 2, 5) });
    queue.push({ kind: "entries", entries: [] }); // nothing to apply: not queued
    expect({ entries: queue.entries, bytes: queue.bytes }).toEqual({ entries: 6, bytes: 40 });
    expect(queue.shift()).toMatchObject({ kind: "entries", entries: range(1, 3, 10) });
    expect(queue.shift()).toMatchObject({ kind: "snapshot" });
    expect(queue.shift()).toMatchObject({ kind: "entries", entries: range(11, 2, 5) });
    expect(queue.shift()).toBeUndefined();
    expect({ entries: queue.entries, bytes: queue.bytes, empty: queue.empty }).toEqual({
      entries: 0,
      bytes: 0,
      empty: true,
    });
  });

  it("refuses work that does not follow what it holds", () => {
    const queue = new ApplyQueue();
    queue.push({ kind: "entries", entries: range(5, 2) });
    expect(() => queue.push({ kind: "entries", entries: range(8, 1) })).toThrow(RaftAssertionError);
    expect(() => queue.push({ kind: "snapshot", snapshot: snapshot(6, 0) })).toThrow(RaftAssertionError);
    queue.push({ kind: "snapshot", snapshot: snapshot(20, 0) });
    queue.push({ kind: "entries", entries: range(21, 1) });
  });

  it("is backlogged past entriesMax, not at it, and refuses more until it is worked down", () => {
    const queue = new ApplyQueue();
    queue.push({ kind: "entries", entries: range(1, applyQueueLimits.entriesMax) });
    expect(queue.backlogged).toBe(false);
    queue.push({ kind: "entries", entries: range(applyQueueLimits.entriesMax + 1, 1) });
    expect(queue.backlogged).toBe(true);
    expect(() => queue.push({ kind: "entries", entries: range(applyQueueLimits.entriesMax + 2, 1) })).toThrow(
      RaftAssertionError,
    );
    queue.shift();
    expect(queue.backlogged).toBe(false);
  });

  it("is backlogged past bytesMax, not at it; a snapshot's bytes do not count", () => {
    const queue = new ApplyQueue();
    queue.push({ kind: "snapshot", snapshot: snapshot(1, 2 * applyQueueLimits.bytesMax) });
    expect(queue.backlogged).toBe(false);
    queue.push({ kind: "entries", entries: [entry(2, applyQueueLimits.bytesMax)] });
    expect(queue.backlogged).toBe(false);
    queue.push({ kind: "entries", entries: [entry(3, 1)] });
    expect(queue.backlogged).toBe(true);
  });
});
