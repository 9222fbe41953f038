// Durations the Raft driver does not keep as histograms (appends with and without fsync, entries
// per append, snapshots), measured from the gateway side around the storage the node is given and
// the state machine's snapshot: the raft package stays unchanged.
import { snapshotDataBytes, type RaftStorageWriter } from "@keyraft/raft";
import { PlainHistogram } from "./plain.js";

/** Upper bounds (seconds) of storage write durations: LevelDB appends, fsyncs and snapshot writes. */
export const storageBucketsSeconds: readonly number[] = [
  0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
];
/** Upper bounds of the entries written by one append. */
export const entriesBuckets: readonly number[] = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024];

export class RaftTimings {
  readonly appendSynced = new PlainHistogram(storageBucketsSeconds);
  readonly appendUnsynced = new PlainHistogram(storageBucketsSeconds);
  readonly entriesPerAppend = new PlainHistogram(entriesBuckets);
  /** From the state machine starting to encode a snapshot to the snapshot stored (the log compacted). */
  readonly snapshot = new PlainHistogram(storageBucketsSeconds);
  lastSnapshotBytes = 0;
  private snapshotStartedMs: number | null = null;

  /** Wraps `storage.append` and `storage.createSnapshot` of this instance with timers. */
  observeStorage(storage: RaftStorageWriter): void {
    const append = storage.append.bind(storage);
    storage.append = async (entries, hardState, sync) => {
      const startMs = performance.now();
      await append(entries, hardState, sync);
      (sync ? this.appendSynced : this.appendUnsynced).observe((performance.now() - startMs) / 1000);
      if (entries.length > 0) this.entriesPerAppend.observe(entries.length);
    };
    const createSnapshot = storage.createSnapshot.bind(storage);
    storage.createSnapshot = async (index, conf, data) => {
      const startMs = this.snapshotStartedMs ?? performance.now();
      this.snapshotStartedMs = null;
      await createSnapshot(index, conf, data);
      this.snapshot.observe((performance.now() - startMs) / 1000);
      this.lastSnapshotBytes = snapshotDataBytes(data);
    };
  }

  /** The state machine began to encode a snapshot (the start of its duration). */
  snapshotStarted(): void {
    this.snapshotStartedMs = performance.now();
  }
}
