// diskWritesPerVerification: how many writes the node's own database (rate-limit reservations,
// the credit lease journal) takes per verification in a phase. Read from the targets' GET /metrics
// before and after each run of the phase (keyraft_store_* over keyraft_verifications_total), so
// warm-up requests count on both sides and the figure needs no knowledge of the load generator.
import { request } from "undici";

/** The counters read from one scrape, summed over the targets. */
export interface WriteCounters {
  batches: number;
  puts: number;
  deletes: number;
  verifications: number;
}

/** Per verification of a phase, to 4 decimals (amortized writes are small fractions); every field null when nothing was verified or a target had no metrics. */
export interface WritesPerVerification {
  /** Operations (puts + deletes). */
  total: number | null;
  puts: number | null;
  deletes: number | null;
  /** Synced batches: one fsync each. */
  batches: number | null;
}

const zero: WriteCounters = { batches: 0, puts: 0, deletes: 0, verifications: 0 };

/**
 * The counters of one Prometheus text exposition, or null when it lacks the store series (a node
 * from before they existed). Verifications are summed over every api and code.
 */
export function parseWriteCounters(text: string): WriteCounters | null {
  const counters = { ...zero };
  let sawStore = false;
  for (const line of text.split("\n")) {
    if (line.startsWith("#") || line.length === 0) continue;
    const space = line.lastIndexOf(" ");
    const series = line.slice(0, space);
    const value = Number(line.slice(space + 1));
    if (!Number.isFinite(value)) continue;
    if (series === "keyraft_store_batches_total") {
      counters.batches += value;
      sawStore = true;
    } else if (series === 'keyraft_store_operations_total{op="put"}') counters.puts += value;
    else if (series === 'keyraft_store_operations_total{op="delete"}') counters.deletes += value;
    else if (series.startsWith("keyraft_verifications_total")) counters.verifications += value;
  }
  return sawStore ? counters : null;
}

/** The writes per verification between two readings (or summed deltas); nulls when nothing was verified. */
export function writesPerVerification(delta: WriteCounters | null): WritesPerVerification {
  if (delta === null || delta.verifications <= 0) return { total: null, puts: null, deletes: null, batches: null };
  const per = (count: number): number => Math.round((count / delta.verifications) * 10_000) / 10_000;
  return {
    total: per(delta.puts + delta.deletes),
    puts: per(delta.puts),
    deletes: per(delta.deletes),
    batches: per(delta.batches),
  };
}

/**
 * Accumulates a phase's counters over its runs (rounds): `before` and `after` bracket one run.
 * Null once a scrape failed or lacked the series (the figure is then unknown, never a guess).
 */
export class PhaseWriteCounter {
  private sum: WriteCounters | null = { ...zero };
  private start: WriteCounters | null = null;

  constructor(private readonly scrape: () => Promise<WriteCounters | null>) {}

  async before(): Promise<void> {
    this.start = await this.scrape();
  }

  async after(): Promise<void> {
    const end = await this.scrape();
    const start = this.start;
    this.start = null;
    if (this.sum === null) return;
    if (start === null || end === null) {
      this.sum = null;
      return;
    }
    this.sum = {
      batches: this.sum.batches + end.batches - start.batches,
      puts: this.sum.puts + end.puts - start.puts,
      deletes: this.sum.deletes + end.deletes - start.deletes,
      verifications: this.sum.verifications + end.verifications - start.verifications,
    };
  }

  result(): WritesPerVerification {
    return writesPerVerification(this.sum);
  }
}

/** Reads and sums the counters of every target (GET /metrics on the API port); null if any one lacks them. */
export function scrapeTargets(targets: readonly string[]): () => Promise<WriteCounters | null> {
  return async () => {
    const total = { ...zero };
    for (const target of targets) {
      let text: string;
      try {
        const response = await request(`${target}/metrics`, {
          method: "GET",
          headersTimeout: 5_000,
          bodyTimeout: 5_000,
        });
        text = await response.body.text();
        if (response.statusCode !== 200) return null;
      } catch {
        return null;
      }
      const counters = parseWriteCounters(text);
      if (counters === null) return null;
      total.batches += counters.batches;
      total.puts += counters.puts;
      total.deletes += counters.deletes;
      total.verifications += counters.verifications;
    }
    return total;
  };
}
