import { describe, expect, it } from "vitest";
import { compactHolderJournal, replayHolderJournal, type HolderJournalRecord } from "../src/leases/journal.js";
import { LeaseExpiryTracker } from "../src/leases/expiry.js";
import { LeaseHolder, type LeaseHolderOptions } from "../src/leases/holder.js";
import { expiryWaitMs } from "../src/leases/expiry.js";

const options: LeaseHolderOptions = {
  ttlMs: 1000,
  requestTimeoutMs: 300,
  settleRetryMs: 100,
  requestCredits: 10,
  requestCreditsMax: 10,
  renewFraction: 0.25,
  refusedBackoffMs: 50,
};

function granted(seq: number, amount: number) {
  return {
    type: "granted" as const,
    keyId: "k",
    nodeId: "n1",
    seq,
    granted: amount,
    epoch: 0,
    ownerNodeId: "n1",
    low: false,
  };
}

describe("LeaseHolder", () => {
  it("asks, spends within the grant, stops at its own deadline and settles what it spent", () => {
    const holder = LeaseHolder.create("n1", options);
    const journal: HolderJournalRecord[] = [];
    expect(holder.verify("k", 3, 0).result.type).toBe("no-lease");
    const asked = holder.poll(0);
    journal.push(...asked.journal);
    expect(asked.requests).toEqual([{ type: "grantCreditLease", keyId: "k", nodeId: "n1", seq: 1, requested: 10 }]);
    journal.push(...holder.onOutcome(granted(1, 5), 100).journal);
    const a = holder.verify("k", 3, 200);
    expect(a.result).toEqual({ type: "admitted", leaseRemaining: 2 });
    journal.push(...a.journal);
    expect(holder.verify("k", 3, 210).result.type).toBe("no-lease"); // 2 left, never more than granted
    // Deadline = request sent (0) + ttl, on the holder's clock: at 1000 it no longer spends.
    expect(holder.verify("k", 1, 1000).result.type).toBe("no-lease");
    const closed = holder.poll(1000);
    journal.push(...closed.journal);
    expect(closed.requests).toContainEqual({ type: "settleCreditLease", keyId: "k", nodeId: "n1", seq: 1, spent: 3 });
    expect(replayHolderJournal(journal).leases.get(1)).toMatchObject({ granted: 5, spent: 3, closed: true });
  });

  it("after a crash every journaled lease is closed and settled with its journaled spends", () => {
    const holder = LeaseHolder.create("n1", options);
    const journal: HolderJournalRecord[] = [];
    holder.verify("k", 2, 0);
    journal.push(...holder.poll(0).journal);
    journal.push(...holder.onOutcome(granted(1, 10), 10).journal);
    journal.push(...holder.verify("k", 2, 20).journal);
    journal.push(...holder.verify("k", 4, 30).journal);
    const { holder: restored, journal: closes } = LeaseHolder.restore("n1", journal, options);
    expect(closes).toEqual([{ t: "close", keyId: "k", seq: 1 }]);
    expect(restored.verify("k", 1, 40).result.type).toBe("no-lease"); // pre-crash leases: settle only
    const out = restored.poll(40);
    expect(out.requests).toContainEqual({ type: "settleCreditLease", keyId: "k", nodeId: "n1", seq: 1, spent: 6 });
    // The next lease number continues after the journal's (no seq is reused for a request that was sent).
    expect(out.requests.find((r) => r.type === "grantCreditLease")).toMatchObject({ seq: 2 });
  });

  it("asks for twice as much after a lease ran low fast (up to the maximum), and for half after one neared its deadline unspent", () => {
    const holder = LeaseHolder.create("n1", { ...options, requestCreditsMax: 40 });
    let seq = 0;
    let nowMs = 0;
    const requestedNext = (): number => {
      const request = holder.poll(nowMs).requests.find((r) => r.type === "grantCreditLease");
      if (request === undefined || request.type !== "grantCreditLease") throw new Error("no request");
      seq = request.seq;
      return request.requested;
    };
    const grantAll = (amount: number) => holder.onOutcome(granted(seq, amount), nowMs);
    // A busy key: each lease is used up within an eighth of the ttl (125 ms).
    holder.verify("k", 1, nowMs);
    const sizes = [requestedNext()];
    for (let round = 0; round < 4; round++) {
      grantAll(sizes[sizes.length - 1] as number);
      nowMs += 10;
      const lastGranted = sizes[sizes.length - 1] as number;
      for (let i = 0; i < lastGranted - 1; i++) expect(holder.verify("k", 1, nowMs).result.type).toBe("admitted");
      sizes.push(requestedNext()); // running low: the renewal
      // settle the spent-out lease's remainder by spending it, then time moves on a little
      expect(holder.verify("k", 1, nowMs).result.type).toBe("admitted");
    }
    expect(sizes).toEqual([10, 20, 40, 40, 40]); // doubled, capped at requestCreditsMax
    // A quiet key: the renewal is due because the deadline nears with most of the lease unspent.
    grantAll(40);
    nowMs += 900; // deadline at sent + 1000: within renewFraction (250 ms) of it
    holder.verify("k", 1, nowMs);
    expect(requestedNext()).toBe(20);
  });

  it("renews near the deadline a key in use whose lease was spent from; a renewal never spent from is not renewed again", () => {
    const holder = LeaseHolder.create("n1", options);
    holder.verify("k", 1, 0);
    holder.poll(0);
    holder.onOutcome(granted(1, 10), 10);
    holder.verify("k", 1, 20);
    // Deadline 1000, window 250: last used 780 ms ago (within the ttl) and the lease was spent from.
    expect(holder.poll(800).requests).toEqual([
      { type: "grantCreditLease", keyId: "k", nodeId: "n1", seq: 2, requested: 10 },
    ]);
    holder.onOutcome(granted(2, 10), 810);
    expect(holder.verify("k", 1, 900).result.type).toBe("admitted"); // from lease 1 (earliest deadline)
    expect(holder.poll(1000).requests).toEqual([
      { type: "settleCreditLease", keyId: "k", nodeId: "n1", seq: 1, spent: 2 },
    ]);
    holder.onOutcome({ type: "settled", keyId: "k", nodeId: "n1", seq: 1, returned: 8 }, 1001);
    // Lease 2 (deadline 1800) was never spent from and the key was not used in its window: it lapses.
    expect(holder.poll(1600)).toEqual({ journal: [], requests: [] });
    expect(holder.poll(1800).requests).toEqual([
      { type: "settleCreditLease", keyId: "k", nodeId: "n1", seq: 2, spent: 0 },
    ]);
  });

  it("a use inside the renewal window asks for the renewal, even of a lease not spent from before", () => {
    const holder = LeaseHolder.create("n1", options);
    holder.verify("k", 1, 0);
    holder.poll(0);
    holder.onOutcome(granted(1, 10), 10);
    holder.verify("k", 1, 20);
    holder.poll(800);
    holder.onOutcome(granted(2, 10), 810);
    holder.poll(1000); // lease 1 closes
    holder.onOutcome({ type: "settled", keyId: "k", nodeId: "n1", seq: 1, returned: 9 }, 1001);
    expect(holder.verify("k", 1, 1600).result.type).toBe("admitted"); // lease 2, inside its window
    expect(holder.poll(1610).requests).toEqual([
      { type: "grantCreditLease", keyId: "k", nodeId: "n1", seq: 3, requested: 10 },
    ]);
  });

  it("verifications that found no lease while it was on its way spend from it, and ask for no second one", () => {
    const holder = LeaseHolder.create("n1", options);
    holder.verify("k", 1, 0);
    expect(holder.poll(0).requests).toHaveLength(1);
    expect(holder.verify("k", 2, 5).result.type).toBe("no-lease"); // waits for the lease asked for
    holder.onOutcome(granted(1, 10), 10);
    expect(holder.verify("k", 2, 11).result.type).toBe("admitted");
    expect(holder.poll(12)).toEqual({ journal: [], requests: [] });
    // A want the grant does not meet stands: a costlier verification asks for its cost.
    expect(holder.verify("k", 9, 13).result.type).toBe("no-lease");
    expect(holder.poll(14).requests).toEqual([
      { type: "grantCreditLease", keyId: "k", nodeId: "n1", seq: 2, requested: 10 },
    ]);
  });

  it("abandons an unanswered request by settling it with 0 spent, and ignores its late grant", () => {
    const holder = LeaseHolder.create("n1", options);
    holder.verify("k", 1, 0);
    holder.poll(0);
    const abandoned = holder.poll(300);
    expect(abandoned.requests).toContainEqual({
      type: "settleCreditLease",
      keyId: "k",
      nodeId: "n1",
      seq: 1,
      spent: 0,
    });
    holder.onOutcome(granted(1, 10), 310);
    expect(holder.verify("k", 1, 320).result.type).toBe("no-lease");
  });

  it("a stale-seq refusal (a duplicate's answer) is settled with 0, in case the first copy was granted", () => {
    const holder = LeaseHolder.create("n1", options);
    holder.verify("k", 1, 0);
    holder.poll(0);
    const out = holder.onOutcome(
      { type: "refused", keyId: "k", nodeId: "n1", seq: 1, reason: "stale-seq", ownerNodeId: "n1" },
      5,
    );
    expect(out.requests).toEqual([{ type: "settleCreditLease", keyId: "k", nodeId: "n1", seq: 1, spent: 0 }]);
  });

  it("a duplicate grant answer for a held lease changes nothing", () => {
    const holder = LeaseHolder.create("n1", options);
    holder.verify("k", 1, 0);
    holder.poll(0);
    holder.onOutcome(granted(1, 10), 5);
    expect(holder.onOutcome(granted(1, 10), 6)).toEqual({ journal: [], requests: [] });
    expect(holder.verify("k", 10, 7).result.type).toBe("admitted");
  });

  it("a new epoch in the replica closes older leases at once", () => {
    const holder = LeaseHolder.create("n1", options);
    holder.verify("k", 1, 0);
    holder.poll(0);
    holder.onOutcome(granted(1, 10), 5);
    const out = holder.onEpoch("k", 1, 6);
    expect(out.requests).toEqual([{ type: "settleCreditLease", keyId: "k", nodeId: "n1", seq: 1, spent: 0 }]);
    expect(holder.verify("k", 1, 7).result.type).toBe("no-lease");
  });

  it("cost 0 is a pure read: admitted without a lease, journals nothing, asks for nothing", () => {
    const holder = LeaseHolder.create("n1", options);
    expect(holder.verify("k", 0, 0)).toEqual({ result: { type: "admitted", leaseRemaining: 0 }, journal: [] });
    expect(holder.poll(0)).toEqual({ journal: [], requests: [] });
  });

  it("a grant from before a reset the replica already shows is settled at once", () => {
    const holder = LeaseHolder.create("n1", options);
    holder.verify("k", 1, 0);
    holder.poll(0);
    holder.onEpoch("k", 2, 1);
    const out = holder.onOutcome(granted(1, 10), 2); // epoch 0 < 2
    expect(out.requests).toEqual([{ type: "settleCreditLease", keyId: "k", nodeId: "n1", seq: 1, spent: 0 }]);
    expect(holder.verify("k", 1, 3).result.type).toBe("no-lease");
  });

  it("a low-credit refusal names the owner to forward to", () => {
    const holder = LeaseHolder.create("n1", options);
    holder.verify("k", 1, 0);
    holder.poll(0);
    holder.onOutcome(
      { type: "refused", keyId: "k", nodeId: "n1", seq: 1, reason: "low-not-owner", ownerNodeId: "n3" },
      5,
    );
    expect(holder.verify("k", 1, 6).result).toEqual({ type: "no-lease", forwardTo: "n3", leaseRemaining: 0 });
  });
});

describe("holder journal compaction", () => {
  it("a compacted journal restores the same owed settles and lease numbering", () => {
    const holder = LeaseHolder.create("n1", options);
    const journal: HolderJournalRecord[] = [];
    for (const [i, key] of ["a", "b", "c"].entries()) {
      holder.verify(key, 1, i);
      journal.push(...holder.poll(i).journal);
    }
    journal.push(...holder.onOutcome({ ...granted(1, 10), keyId: "a" }, 5).journal);
    journal.push(...holder.onOutcome({ ...granted(2, 10), keyId: "b" }, 5).journal);
    journal.push(...holder.verify("a", 4, 6).journal);
    journal.push(...holder.verify("b", 2, 6).journal);
    journal.push(...holder.onEpoch("b", 1, 7).journal); // closes b's lease
    journal.push(...holder.onOutcome({ type: "settled", keyId: "b", nodeId: "n1", seq: 2, returned: 8 }, 8).journal);
    const compacted = compactHolderJournal(journal);
    expect(compacted.length).toBeLessThan(journal.length);
    const settles = (records: HolderJournalRecord[]) =>
      LeaseHolder.restore("n1", records, options)
        .holder.poll(100)
        .requests.filter((r) => r.type === "settleCreditLease");
    expect(settles(compacted)).toEqual(settles(journal));
    expect(settles(journal)).toEqual([
      { type: "settleCreditLease", keyId: "a", nodeId: "n1", seq: 1, spent: 4 },
      { type: "settleCreditLease", keyId: "c", nodeId: "n1", seq: 3, spent: 0 },
    ]);
    expect(replayHolderJournal(compacted).seqMax).toBe(3);
  });
});

describe("LeaseExpiryTracker", () => {
  it("waits ttl * (1 + drift) + margin of the leader's own time from when it saw the grant", () => {
    const tracker = new LeaseExpiryTracker({ ttlMs: 1000, driftMax: 0.05, marginMs: 20 });
    expect(expiryWaitMs({ ttlMs: 1000, driftMax: 0.05, marginMs: 20 })).toBe(1070);
    tracker.onGrantApplied({ keyId: "k", nodeId: "n1", seq: 1 }, 500);
    expect(tracker.due(1569)).toEqual([]);
    expect(tracker.due(1570)).toEqual([{ keyId: "k", nodeId: "n1", seq: 1 }]);
    // A new leader starts the wait afresh.
    tracker.becameLeader([{ keyId: "k", nodeId: "n1", seq: 1 }], 2000);
    expect(tracker.due(3069)).toEqual([]);
    tracker.onLeaseGone({ keyId: "k", nodeId: "n1", seq: 1 });
    expect(tracker.due(9999)).toEqual([]);
  });
});
