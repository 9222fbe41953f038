import { describe, expect, it } from "vitest";
import { RaftLog, limitSize } from "../src/core/log.js";
import { UnstableLog } from "../src/core/log-unstable.js";
import { RaftAssertionError } from "../src/core/assert.js";
import { SimStorage } from "../src/sim/sim-storage.js";
import { entry } from "./scenario-helpers.js";

function logWith(terms: number[]): RaftLog {
  const storage = new SimStorage();
  storage.appendSync(
    terms.map((term, i) => entry(term, i + 1, `e${i + 1}`)),
    null,
    true,
  );
  return new RaftLog(storage);
}

describe("RaftLog", () => {
  it("reports first/last index and terms across stable and unstable parts", () => {
    const log = logWith([1, 1, 2]);
    log.append([entry(3, 4), entry(3, 5)]);
    expect([log.firstIndex(), log.lastIndex(), log.lastTerm()]).toEqual([1, 5, 3]);
    expect([log.term(0), log.term(3), log.term(4), log.term(6)]).toEqual([0, 2, 3, null]);
    expect(log.slice(2, 6, 1e9).map((e) => e.index)).toEqual([2, 3, 4, 5]);
  });

  it("maybeAppend accepts a matching append, rejects a mismatch, and truncates a conflicting suffix", () => {
    const log = logWith([1, 1, 2, 2]);
    expect(log.maybeAppend(4, 3, 0, [])).toBeNull(); // term at 4 is 2, not 3
    expect(log.maybeAppend(2, 1, 3, [entry(3, 3), entry(3, 4), entry(3, 5)])).toBe(5);
    expect([3, 4, 5].map((i) => log.term(i))).toEqual([3, 3, 3]);
    expect(log.committed).toBe(3);
    expect(log.unstable.offset).toBe(3); // storage keeps 3..4 until the truncation is persisted
  });

  it("refuses to overwrite a committed entry (assertion)", () => {
    const log = logWith([1, 1, 2]);
    log.commitTo(3);
    expect(() => log.append([entry(4, 3)])).toThrow(RaftAssertionError);
    expect(() => log.commitTo(9)).toThrow(/beyond last index/);
  });

  it("commits only entries of the current term (maybeCommit)", () => {
    const log = logWith([1, 2, 2]);
    expect(log.maybeCommit(3, 3)).toBe(false);
    expect(log.committed).toBe(0);
    log.append([entry(3, 4)]);
    expect(log.maybeCommit(4, 3)).toBe(true);
    expect(log.committed).toBe(4);
  });

  it("isUpToDate compares last term, then last index", () => {
    const log = logWith([1, 2, 2]);
    expect(log.isUpToDate(1, 3)).toBe(true);
    expect(log.isUpToDate(3, 2)).toBe(true);
    expect(log.isUpToDate(2, 2)).toBe(false);
    expect(log.isUpToDate(9, 1)).toBe(false);
  });

  it("findConflictByTerm walks back to the last index with a term <= the given term", () => {
    const log = logWith([1, 1, 2, 2, 4, 4]);
    expect(log.findConflictByTerm(6, 3)).toEqual({ index: 4, term: 2 });
    expect(log.findConflictByTerm(6, 4)).toEqual({ index: 6, term: 4 });
    expect(log.findConflictByTerm(9, 1)).toEqual({ index: 2, term: 1 });
  });

  it("hands out committed entries up to the size limit, at least one", () => {
    const log = logWith([1, 1, 1]);
    log.commitTo(3);
    expect(log.nextCommittedEntries(1).map((e) => e.index)).toEqual([1]);
    expect(log.nextCommittedEntries(4).map((e) => e.index)).toEqual([1, 2]);
    log.appliedTo(2);
    expect(log.nextCommittedEntries(1e9).map((e) => e.index)).toEqual([3]);
    expect(() => log.appliedTo(4)).toThrow(RaftAssertionError);
  });

  it("treats compacted indexes as unknown and restores from a snapshot", () => {
    const storage = new SimStorage();
    storage.appendSync([entry(1, 1), entry(1, 2), entry(2, 3)], null, true);
    storage.createSnapshotSync(2, { voters: ["a"], learners: [] }, new Uint8Array(0));
    const log = new RaftLog(storage);
    expect([log.firstIndex(), log.term(1), log.term(2), log.term(3)]).toEqual([3, null, 1, 2]);
    log.restore({ metadata: { index: 10, term: 5, conf: { voters: ["a"], learners: [] } }, data: new Uint8Array(0) });
    expect([log.firstIndex(), log.lastIndex(), log.committed, log.term(10)]).toEqual([11, 10, 10, 5]);
    expect(log.hasNextCommittedEntries()).toBe(false); // nothing to apply until the snapshot is installed
  });
});

describe("limitSize", () => {
  it("keeps at least one entry and cuts at the byte limit", () => {
    const entries = [entry(1, 1, "aaaa"), entry(1, 2, "bb"), entry(1, 3, "c")];
    expect(limitSize(entries, 0)).toHaveLength(1);
    expect(limitSize(entries, 6)).toHaveLength(2); // at the limit
    expect(limitSize(entries, 5)).toHaveLength(1); // one byte short
    expect(limitSize(entries, 7)).toHaveLength(3);
  });
});

describe("UnstableLog", () => {
  it("stableTo drops persisted entries only if their term still matches", () => {
    const unstable = new UnstableLog(5);
    unstable.truncateAndAppend([entry(1, 5), entry(1, 6), entry(1, 7)]);
    unstable.stableTo(6, 2); // stale acknowledgement: term differs
    expect(unstable.offset).toBe(5);
    unstable.stableTo(6, 1);
    expect([unstable.offset, unstable.entries.length]).toEqual([7, 1]);
  });

  it("truncateAndAppend replaces a suffix", () => {
    const unstable = new UnstableLog(5);
    unstable.truncateAndAppend([entry(1, 5), entry(1, 6), entry(1, 7)]);
    unstable.truncateAndAppend([entry(2, 6)]);
    expect(unstable.entries.map((e) => `${e.term}/${e.index}`)).toEqual(["1/5", "2/6"]);
    unstable.truncateAndAppend([entry(3, 4)]);
    expect([unstable.offset, unstable.entries.length]).toEqual([4, 1]);
  });
});
