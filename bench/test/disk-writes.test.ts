import { describe, expect, it } from "vitest";
import {
  parseWriteCounters,
  PhaseWriteCounter,
  writesPerVerification,
  type WriteCounters,
} from "../src/scenarios/disk-writes.js";

const exposition = (batches: number, puts: number, deletes: number, valid: number, limited: number): string =>
  [
    "# HELP keyraft_store_batches_total Synced batches.",
    "# TYPE keyraft_store_batches_total counter",
    `keyraft_store_batches_total ${batches}`,
    `keyraft_store_operations_total{op="put"} ${puts}`,
    `keyraft_store_operations_total{op="delete"} ${deletes}`,
    `keyraft_verifications_total{api="api_1",code="VALID"} ${valid}`,
    `keyraft_verifications_total{api="api_1",code="RATE_LIMITED"} ${limited}`,
    `keyraft_verifications_total{api="other",code="NOT_FOUND"} 0`,
    "keyraft_credit_lease_journal_writes_total 99",
    "",
  ].join("\n");

describe("disk writes per verification", () => {
  it("reads the store counters and sums verifications over every api and code", () => {
    expect(parseWriteCounters(exposition(3, 40, 5, 100, 20))).toEqual({
      batches: 3,
      puts: 40,
      deletes: 5,
      verifications: 120,
    });
  });

  it("is unknown (null) for a node without the store series", () => {
    expect(parseWriteCounters('keyraft_verifications_total{api="a",code="VALID"} 5\n')).toBeNull();
  });

  it("divides by verifications, to 4 decimals, and is null when nothing was verified", () => {
    expect(writesPerVerification({ batches: 1, puts: 2, deletes: 1, verifications: 3 })).toEqual({
      total: 1,
      puts: 0.6667,
      deletes: 0.3333,
      batches: 0.3333,
    });
    expect(writesPerVerification({ batches: 1, puts: 2, deletes: 1, verifications: 0 }).total).toBeNull();
    expect(writesPerVerification(null).puts).toBeNull();
  });

  it("adds up the runs of a phase (rounds) from scrapes taken before and after each", async () => {
    const readings: Array<WriteCounters | null> = [
      { batches: 10, puts: 100, deletes: 50, verifications: 1_000 },
      { batches: 12, puts: 110, deletes: 55, verifications: 2_000 },
      // Another phase ran in between: its writes are not this phase's.
      { batches: 40, puts: 400, deletes: 60, verifications: 5_000 },
      { batches: 41, puts: 410, deletes: 60, verifications: 6_000 },
    ];
    const counter = new PhaseWriteCounter(async () => readings.shift() ?? null);
    for (let run = 0; run < 2; run++) {
      await counter.before();
      await counter.after();
    }
    expect(counter.result()).toEqual({ total: 0.0125, puts: 0.01, deletes: 0.0025, batches: 0.0015 });
  });

  it("is unknown once a scrape failed, never a figure from part of the runs", async () => {
    const readings: Array<WriteCounters | null> = [
      { batches: 1, puts: 1, deletes: 0, verifications: 10 },
      null,
      { batches: 1, puts: 1, deletes: 0, verifications: 10 },
      { batches: 2, puts: 2, deletes: 0, verifications: 20 },
    ];
    const counter = new PhaseWriteCounter(async () => readings.shift() ?? null);
    for (let run = 0; run < 2; run++) {
      await counter.before();
      await counter.after();
    }
    expect(counter.result().total).toBeNull();
  });
});
