// When each recent log entry was applied on this node (wall clock), for measuring propagation:
// on one machine, applied-on-every-node minus applied-on-the-leader. A fixed ring: the newest
// `entriesMax` entries; older ones are forgotten.
export const applyTimesEntriesMax = 65_536;

export class ApplyTimes {
  private readonly times = new Float64Array(applyTimesEntriesMax);
  private readonly indexes = new Float64Array(applyTimesEntriesMax);

  record(index: number, nowMs: number): void {
    const slot = index % applyTimesEntriesMax;
    this.indexes[slot] = index;
    this.times[slot] = nowMs;
  }

  /** Apply time of `index`, or null when it was not applied here or was forgotten. */
  get(index: number): number | null {
    const slot = index % applyTimesEntriesMax;
    return this.indexes[slot] === index ? (this.times[slot] ?? null) : null;
  }
}
