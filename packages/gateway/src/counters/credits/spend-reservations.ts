// Spends journaled ahead (like the rate-limit reservations of store/counter-durability): the
// journal says a lease spent `reserved` credits, always at least what this node has answered from
// it. A lease's first reservation rides in the same journal write as its grant, and a reservation
// is extended while the one on disk still covers the spends being answered (once half of its
// headroom is used), so a verification almost never waits for a write of its own: it is covered
// by a durable record, or by the grant's write it would have waited for anyway. After a crash the
// holder settles the lease with the journaled (reserved) amount, so a restart forfeits at most the
// headroom, less than a quarter lease per open lease, and never returns a credit that was answered
// (Theorem 1 needs settle >= answered spends).
import { assert, type HolderJournalRecord } from "@keyraft/core";

/** The journal says at most granted / this - 1 credits more than were answered (the crash forfeit: under a quarter lease). */
export const reservationHeadroomDivisor = 4;
/** Leases tracked at once (a holder keeps at most 2 per key); past it spends are journaled one by one. */
export const reservedLeasesMax = 250_000;

interface Reserved {
  keyId: string;
  granted: number;
  /** Most credits reserved beyond those answered: ceil(granted / 4) - 1 (0: spends are journaled exactly). */
  headroom: number;
  /** Credits answered from the lease. */
  spent: number;
  /** Credits the journal says were spent (queued or durable). */
  reserved: number;
  /** Of `reserved`, what is durable already. */
  durableReserved: number;
  /** The latest reservation write (journal writes land in order: it covers all of `reserved`); null once durable. */
  pending: Promise<void> | null;
  /**
   * A reservation write that failed: the journal then says less than `reserved`, so nothing more
   * is answered from this lease (its spends wait on this rejected write and fail).
   */
  failed: Promise<void> | null;
}

/** A reservation record to journal: `onQueued` gets the promise of its write. */
export interface ReservationWrite {
  record: HolderJournalRecord;
  onQueued(durable: Promise<void>): void;
}

export type SpendCover =
  /** Covered by a durable record: answer now (and journal `ahead`, if any, without waiting for it). */
  | { type: "durable"; ahead: ReservationWrite | null }
  /** Covered by a record on its way to disk: answer once it is durable (and journal `ahead`, if any). */
  | { type: "pending"; durable: Promise<void>; ahead: ReservationWrite | null }
  /** Journal this record, then answer once it is durable. */
  | ({ type: "write" } & ReservationWrite);

export class SpendReservations {
  private readonly leases = new Map<number, Reserved>();

  /**
   * Follows the holder's journal: grants open a lease for reservations, closes end it. Returns the
   * records to journal, in order: the holder's, each grant of a lease that stays open followed by
   * its first reservation; `onQueued` takes the promise of their write.
   */
  observe(records: readonly HolderJournalRecord[]): {
    records: readonly HolderJournalRecord[];
    onQueued(durable: Promise<void>): void;
  } {
    let out: HolderJournalRecord[] | null = null;
    let reservedNow: Reserved[] | null = null;
    for (let i = 0; i < records.length; i++) {
      const record = records[i]!;
      out?.push(record);
      if (record.t === "grant" && this.leases.size < reservedLeasesMax) {
        const headroom = Math.ceil(record.granted / reservationHeadroomDivisor) - 1;
        const lease: Reserved = {
          keyId: record.keyId,
          granted: record.granted,
          headroom,
          spent: 0,
          reserved: 0,
          durableReserved: 0,
          pending: null,
          failed: null,
        };
        this.leases.set(record.seq, lease);
        if (headroom > 0 && !closedLater(records, i, record.seq)) {
          out ??= records.slice(0, i + 1);
          out.push({ t: "spend", keyId: record.keyId, seq: record.seq, cost: headroom });
          lease.reserved = headroom;
          (reservedNow ??= []).push(lease);
        }
      } else if (record.t === "close" || record.t === "settled") {
        this.leases.delete(record.seq);
      }
    }
    const leases = reservedNow;
    return {
      records: out ?? records,
      onQueued: (durable) => {
        if (leases !== null) for (const lease of leases) track(lease, durable, lease.headroom);
      },
    };
  }

  /** The cover for a spend record the holder produced. */
  cover(record: Extract<HolderJournalRecord, { t: "spend" }>): SpendCover {
    const lease = this.leases.get(record.seq);
    if (lease === undefined) return { type: "write", record, onQueued: () => undefined };
    lease.spent += record.cost;
    assert(lease.spent <= lease.granted, "reservations: spent within the grant");
    if (lease.failed !== null) return { type: "pending", durable: lease.failed, ahead: null };
    const ahead = lease.reserved - lease.spent;
    // Covered by what is journaled (durable, or on its way: the latest write covers it).
    const covered: Promise<void> | null = lease.spent <= lease.durableReserved ? null : lease.pending;
    assert(
      ahead < 0 || covered !== null || lease.spent <= lease.durableReserved,
      "reservations: a cover is durable or on its way",
    );
    // Half the headroom left (or the whole grant reserved): no extension yet.
    if (ahead >= Math.ceil(lease.headroom / 2) || lease.reserved === lease.granted) {
      assert(ahead >= 0, "reservations: a spend within the reservation");
      return covered === null ? { type: "durable", ahead: null } : { type: "pending", durable: covered, ahead: null };
    }
    const target = Math.min(lease.granted, lease.spent + lease.headroom);
    const write = this.extend(lease, record, target);
    if (ahead < 0) return { type: "write", ...write };
    // Covered by the reservation already journaled; the next one is written meanwhile.
    return covered === null ? { type: "durable", ahead: write } : { type: "pending", durable: covered, ahead: write };
  }

  private extend(
    lease: Reserved,
    record: Extract<HolderJournalRecord, { t: "spend" }>,
    target: number,
  ): ReservationWrite {
    assert(target > lease.reserved && target <= lease.granted, "reservations: an extension stays within the grant");
    const cost = target - lease.reserved;
    lease.reserved = target;
    return {
      record: { t: "spend", keyId: record.keyId, seq: record.seq, cost },
      onQueued: (durable) => track(lease, durable, target),
    };
  }

  /** Keys with a lease in use (a graceful stop settles them). */
  keysWithLeases(): string[] {
    return [...new Set([...this.leases.values()].map((lease) => lease.keyId))];
  }

  tracked(): number {
    return this.leases.size;
  }
}

/** Whether a close of `seq` follows record `index` in the same output (a lease closed at once is not reserved). */
function closedLater(records: readonly HolderJournalRecord[], index: number, seq: number): boolean {
  for (let j = index + 1; j < records.length; j++)
    if (records[j]!.t === "close" && records[j]!.seq === seq) return true;
  return false;
}

/** A write reserving up to `reserved` is on its way: the latest until a later one; durable once it resolves. */
function track(lease: Reserved, durable: Promise<void>, reserved: number): void {
  lease.pending = durable;
  durable.then(
    () => {
      lease.durableReserved = Math.max(lease.durableReserved, reserved);
      if (lease.pending === durable) lease.pending = null;
    },
    () => {
      lease.failed = durable;
    },
  );
}
