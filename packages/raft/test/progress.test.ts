import { describe, expect, it } from "vitest";
import { RaftAssertionError } from "../src/core/assert.js";
import { Inflights } from "../src/core/inflights.js";
import { Progress } from "../src/core/progress.js";

describe("Inflights (bounded ring)", () => {
  it("accepts exactly `capacity` messages, then is full; freeing reopens it", () => {
    const inflights = new Inflights(3);
    inflights.add(5);
    inflights.add(7);
    inflights.add(9);
    expect(inflights.full()).toBe(true);
    expect(() => inflights.add(11)).toThrow(RaftAssertionError); // past the limit
    inflights.freeLE(7);
    expect(inflights.count).toBe(1);
    inflights.add(11);
    inflights.add(12); // wraps around the ring
    expect(inflights.full()).toBe(true);
    inflights.freeFirstOne();
    expect(inflights.count).toBe(2);
    inflights.freeLE(100);
    expect(inflights.count).toBe(0);
  });

  it("requires increasing indexes", () => {
    const inflights = new Inflights(4);
    inflights.add(5);
    expect(() => inflights.add(5)).toThrow(/increase/);
  });
});

describe("Progress", () => {
  it("probe: one append at a time, then replicate after a success", () => {
    const pr = new Progress(10, 2, false);
    expect(pr.isPaused()).toBe(false);
    pr.sentEntries(12, 3);
    expect(pr.isPaused()).toBe(true);
    expect(pr.maybeUpdate(12)).toBe(true);
    pr.becomeReplicate();
    expect([pr.state, pr.match, pr.next]).toEqual(["replicate", 12, 13]);
  });

  it("replicate: pipelines until the inflight window is full", () => {
    const pr = new Progress(1, 2, false);
    pr.becomeReplicate();
    pr.sentEntries(3, 3);
    pr.sentEntries(5, 2);
    expect([pr.next, pr.isPaused()]).toEqual([6, true]);
    pr.maybeUpdate(3);
    pr.inflights.freeLE(3);
    expect(pr.isPaused()).toBe(false);
  });

  it("maybeDecrTo ignores stale rejections and uses the follower's hint", () => {
    const pr = new Progress(10, 4, false);
    pr.sentEntries(12, 3); // probe at next=10 (prev 9)
    expect(pr.maybeDecrTo(5, 3)).toBe(false); // not the probe we are waiting on
    expect(pr.maybeDecrTo(9, 3)).toBe(true);
    expect([pr.next, pr.probeSent]).toEqual([4, false]);
    pr.match = 6;
    pr.becomeReplicate();
    expect(pr.maybeDecrTo(6, 0)).toBe(false); // rejection at or below match is stale
    expect(pr.maybeDecrTo(8, 0)).toBe(true);
    expect(pr.next).toBe(7);
  });

  it("snapshot state pauses appends and resumes after the snapshot index", () => {
    const pr = new Progress(3, 4, false);
    pr.becomeSnapshot(20);
    expect(pr.isPaused()).toBe(true);
    pr.becomeProbe();
    expect([pr.state, pr.next]).toEqual(["probe", 21]);
  });
});
