import { describe, expect, it } from "vitest";
import { ProposalWaiters, ReadWaiters, type Waiter } from "../src/driver/waiters.js";
import { RaftNodeError } from "../src/errors.js";

function waiter<T>(deadlineMs: number, log: string[], name: string): Waiter<T> {
  return { deadlineMs, resolve: () => void log.push(`${name} ok`), reject: (e) => void log.push(`${name} ${e.code}`) };
}

const timeout = () => new RaftNodeError("RAFT_ERR_TIMEOUT", "t");

describe("driver waiters", () => {
  it("ProposalWaiters: settle by (index, term), expire in order, reject up to a snapshot, bounded", () => {
    const log: string[] = [];
    const waiters = new ProposalWaiters<{ index: number }>(3);
    const lost = () => new RaftNodeError("RAFT_ERR_LEADERSHIP_LOST", "l");
    waiters.add(5, 2, waiter(100, log, "a"), lost);
    waiters.add(6, 2, waiter(200, log, "b"), lost);
    waiters.add(7, 2, waiter(300, log, "c"), lost);
    expect(waiters.full).toBe(true); // at the limit
    expect(() => waiters.add(8, 2, waiter(400, log, "d"), lost)).toThrow(/waitersMax/); // past it: a bug in the caller
    expect(() => waiters.add(7, 2, waiter(400, log, "d"), lost)).toThrow(/proposed twice/); // same term: impossible
    expect(waiters.take(6, 3)?.committed).toBe(false); // another term at that index: lost
    expect(waiters.take(6, 2)).toBeNull();
    waiters.expire(150, timeout);
    expect(log).toEqual(["a RAFT_ERR_TIMEOUT"]);
    waiters.rejectUpTo(7, () => new RaftNodeError("RAFT_ERR_LEADERSHIP_LOST", "s"));
    expect(log).toEqual(["a RAFT_ERR_TIMEOUT", "c RAFT_ERR_LEADERSHIP_LOST"]);
    expect(waiters.size).toBe(0);
  });

  it("ProposalWaiters: a proposal at an index reused by a later term rejects the stale one", () => {
    const log: string[] = [];
    const waiters = new ProposalWaiters<{ index: number }>(10);
    const lost = () => new RaftNodeError("RAFT_ERR_LEADERSHIP_LOST", "l");
    waiters.add(9, 3, waiter(100, log, "old9"), lost);
    waiters.add(10, 3, waiter(100, log, "old10"), lost);
    waiters.add(9, 5, waiter(200, log, "new9"), lost); // this node lost and regained leadership
    expect(log).toEqual(["old9 RAFT_ERR_LEADERSHIP_LOST"]);
    expect(waiters.take(9, 5)?.committed).toBe(true);
    waiters.rejectUpTo(10, lost); // not in index order any more: still finds 10
    expect(log).toEqual(["old9 RAFT_ERR_LEADERSHIP_LOST", "old10 RAFT_ERR_LEADERSHIP_LOST"]);
  });

  it("ReadWaiters: resolve once applied reaches the confirmed index; unconfirmed ones can be rejected", () => {
    const log: string[] = [];
    const reads = new ReadWaiters(4);
    reads.add("r1", waiter(1000, log, "r1"));
    reads.add("r2", waiter(1000, log, "r2"));
    reads.add("r3", waiter(10, log, "r3"));
    reads.confirm("r1", 10);
    reads.confirm("r2", 12);
    reads.confirm("unknown", 1);
    reads.resolveUpTo(11);
    expect(log).toEqual(["r1 ok"]);
    reads.expire(50, timeout);
    expect(log).toEqual(["r1 ok", "r3 RAFT_ERR_TIMEOUT"]);
    reads.add("r4", waiter(1000, log, "r4"));
    reads.rejectUnconfirmed(() => new RaftNodeError("RAFT_ERR_NOT_LEADER", "x"));
    expect(log).toEqual(["r1 ok", "r3 RAFT_ERR_TIMEOUT", "r4 RAFT_ERR_NOT_LEADER"]);
    reads.resolveUpTo(12);
    expect(log.at(-1)).toBe("r2 ok");
  });

  it("ReadWaiters: a read the leader refused fails at once; a confirmed one is not failed by a late refusal", () => {
    const log: string[] = [];
    const reads = new ReadWaiters(4);
    reads.add("r1", waiter(1000, log, "r1"));
    reads.add("r2", waiter(1000, log, "r2"));
    reads.confirm("r2", 5);
    const refused = new RaftNodeError("RAFT_ERR_READ_INDEX_DROPPED", "refused");
    reads.reject("r1", refused);
    reads.reject("r2", refused);
    reads.reject("unknown", refused);
    expect(log).toEqual(["r1 RAFT_ERR_READ_INDEX_DROPPED"]);
    reads.resolveUpTo(5);
    expect(log).toEqual(["r1 RAFT_ERR_READ_INDEX_DROPPED", "r2 ok"]);
  });
});
