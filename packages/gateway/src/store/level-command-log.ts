// The single node's CommandLog: a LevelDB log of msgpack-encoded commands in front of any
// ReplicatedStateMachine, with group commit and periodic snapshots that compact the log.
//
// Layout (sublevels of the node's database):
//   meta/format          msgpack 1 (the on-disk format version)
//   log/<16 hex digits>  one command per index; byte order of keys == numeric order of indexes
//   snap/latest          msgpack { index, state }: the machine's snapshot after applying `index`
// Invariant on disk, after every batch: the log holds exactly the indexes
// snap.index + 1 .. lastIndex, contiguous. A snapshot and the deletion of the entries it covers
// are one atomic batch, so a crash at any point leaves either the old or the new pair.
import { assert } from "@keyraft/core";
import type { CommandLog, ReplicatedStateMachine } from "./types.js";
import { decodeValue, encodeValue, logIndexKey, parseLogIndexKey, replaysEqual } from "./codec.js";
import { applyFailedError, closedError, corruptError, overloadedError, unencodableError } from "./errors.js";
import { GroupCommitWriter, type GroupCommitStats } from "./group-commit.js";
import {
  storeSublevel,
  syncedBatchWrite,
  type StoreDb,
  type StoreOp,
  type StoreSublevel,
  type SyncedBatchWrite,
} from "./level-db.js";

export interface CommandLogOptions {
  /** Take a snapshot (and drop the entries it covers) every this many entries. */
  snapshotEveryEntries: number;
  /**
   * Also take one once the entries since the last snapshot hold this many encoded bytes (0: only by
   * entries), so a few large commands (a bulk import) are not all replayed on restart.
   */
  snapshotEveryBytes: number;
  /** Most entries in one fsynced batch. */
  batchEntriesMax: number;
  /** Bytes at which a batch stops taking more entries (one larger entry is written alone). */
  batchBytesMax: number;
  /** Most entries waiting for the disk (queued or being written); past it `append` rejects with KEYRAFT_STORE_OVERLOADED. */
  queueEntriesMax: number;
  /** Called once when a write fails: memory is ahead of the disk and the process must exit non-zero. */
  onFatal: (error: Error) => void;
  /** The synced batch write; tests inject failures here. Defaults to `db.batch(ops, { sync: true })`. */
  write?: SyncedBatchWrite;
}

export const commandLogDefaults = {
  snapshotEveryEntries: 10_000,
  snapshotEveryBytes: 64 * 1024 * 1024,
  batchEntriesMax: 1024,
  batchBytesMax: 4 * 1024 * 1024,
  queueEntriesMax: 10_000,
} as const;

export const commandLogFormatVersion = 1;
const formatKey = "format";
const snapshotKey = "latest";
const what = "command log";

export interface CommandLogStats extends GroupCommitStats {
  /** Index of the latest snapshot taken (0: none). */
  snapshotIndex: number;
  snapshotsTaken: number;
}

interface StoredSnapshot {
  index: number;
  state: unknown;
}

export class LevelCommandLog<Command, Outcome> implements CommandLog<Command, Outcome> {
  private lastIndex: number;
  private snapshotIndex: number;
  private snapshotsTaken = 0;
  /** Encoded bytes of the entries after the latest snapshot. */
  private bytesSinceSnapshot: number;
  private closed = false;
  /** Set when apply threw: the machine may be half-changed, so nothing more is accepted. */
  private applyFailure: Error | null = null;
  private readonly writer: GroupCommitWriter;

  private constructor(
    private readonly machine: ReplicatedStateMachine<Command, Outcome>,
    private readonly logLevel: StoreSublevel,
    private readonly snapLevel: StoreSublevel,
    private readonly options: Required<CommandLogOptions>,
    recovered: { lastIndex: number; snapshotIndex: number; bytesSinceSnapshot: number },
  ) {
    assert(recovered.lastIndex >= recovered.snapshotIndex, "command log: the log ends at or after the snapshot");
    this.lastIndex = recovered.lastIndex;
    this.snapshotIndex = recovered.snapshotIndex;
    this.bytesSinceSnapshot = recovered.bytesSinceSnapshot;
    this.writer = new GroupCommitWriter(what, options.write, options, options.onFatal);
  }

  /**
   * Loads the latest snapshot into `machine`, replays the log after it, and returns the log
   * ready to serve. Throws KEYRAFT_STORE_CORRUPT when the log is not contiguous or a value does
   * not decode: the node must not start on data it cannot trust.
   */
  static async open<Command, Outcome>(
    db: StoreDb,
    machine: ReplicatedStateMachine<Command, Outcome>,
    options: Partial<CommandLogOptions> & Pick<CommandLogOptions, "onFatal">,
  ): Promise<LevelCommandLog<Command, Outcome>> {
    const resolved = resolveOptions(db, options);
    const logLevel = storeSublevel(db, "log");
    const snapLevel = storeSublevel(db, "snap");
    await checkFormat(db, logLevel, snapLevel);
    const snapshot = await readSnapshot(snapLevel);
    if (snapshot !== undefined) machine.restore(snapshot.state);
    const snapshotIndex = snapshot?.index ?? 0;
    const { lastIndex, bytes } = await replay(logLevel, machine, snapshotIndex);
    return new LevelCommandLog(machine, logLevel, snapLevel, resolved, {
      lastIndex,
      snapshotIndex,
      bytesSinceSnapshot: bytes,
    });
  }

  /**
   * Applies `command` now (so what follows sees it) and resolves with its outcome once it is
   * fsynced. Rejects without applying it when the log is closed, failed, or overloaded, or the
   * command would not replay unchanged. A throw from `apply` is fatal (onFatal) and not logged.
   */
  append(command: Command): Promise<Outcome> {
    if (this.closed) return Promise.reject(closedError(what));
    const failure = this.applyFailure ?? this.writer.failed();
    if (failure !== null) return Promise.reject(failure);
    if (this.writer.pendingItems() >= this.options.queueEntriesMax) {
      return Promise.reject(overloadedError(what, this.options.queueEntriesMax));
    }
    // Encode before applying: apply may keep references into the command, and the bytes must be
    // what was applied. Write and read back: replay must see exactly this command (msgpackr
    // renames a "__proto__" key, for one), or the restarted state would differ.
    const value = encodeValue(command);
    if (!replaysEqual(command, decodeValue(value))) return Promise.reject(unencodableError(what));
    const index = this.lastIndex + 1;
    let outcome: Outcome;
    try {
      outcome = this.machine.apply(command);
    } catch (error) {
      // A machine reports refusals as outcomes; a throw is a broken invariant (an assert) and
      // may have left the state half-changed. Not logged, so a restart rebuilds a consistent
      // state; until then this process must not serve from memory.
      this.applyFailure = applyFailedError(what, error);
      this.options.onFatal(this.applyFailure);
      return Promise.reject(this.applyFailure);
    }
    this.lastIndex = index;
    const durable = this.writer.enqueue(
      [{ type: "put", sublevel: this.logLevel, key: logIndexKey(index), value }],
      value.byteLength,
    );
    this.bytesSinceSnapshot += value.byteLength;
    const { snapshotEveryEntries, snapshotEveryBytes } = this.options;
    if (
      index - this.snapshotIndex >= snapshotEveryEntries ||
      (snapshotEveryBytes > 0 && this.bytesSinceSnapshot >= snapshotEveryBytes)
    )
      this.takeSnapshot(index);
    return durable.then(() => outcome);
  }

  appliedIndex(): number {
    return this.lastIndex;
  }

  /** Stops taking appends and resolves once everything appended is fsynced (or the log failed). */
  async close(): Promise<void> {
    this.closed = true;
    await this.writer.idle();
  }

  statistics(): CommandLogStats {
    return { ...this.writer.statistics(), snapshotIndex: this.snapshotIndex, snapshotsTaken: this.snapshotsTaken };
  }

  // The machine is at exactly `index` here (apply is synchronous), so its snapshot is the state
  // after `index`. Queued behind entry `index`, it reaches the disk with or after that entry.
  private takeSnapshot(index: number): void {
    assert(
      index === this.lastIndex && index > this.snapshotIndex,
      "command log: a snapshot covers new entries up to the last one",
    );
    const stored: StoredSnapshot = { index, state: this.machine.snapshot() };
    const value = encodeValue(stored);
    const ops: StoreOp[] = [{ type: "put", sublevel: this.snapLevel, key: snapshotKey, value }];
    for (let covered = this.snapshotIndex + 1; covered <= index; covered++) {
      ops.push({ type: "del", sublevel: this.logLevel, key: logIndexKey(covered) });
    }
    this.snapshotIndex = index;
    this.bytesSinceSnapshot = 0;
    this.snapshotsTaken += 1;
    // A failure reaches the appenders and onFatal through the writer; nothing awaits this one.
    this.writer.enqueue(ops, value.byteLength).catch(() => undefined);
  }
}

function resolveOptions(
  db: StoreDb,
  options: Partial<CommandLogOptions> & Pick<CommandLogOptions, "onFatal">,
): Required<CommandLogOptions> {
  const resolved: Required<CommandLogOptions> = {
    snapshotEveryEntries: options.snapshotEveryEntries ?? commandLogDefaults.snapshotEveryEntries,
    snapshotEveryBytes: options.snapshotEveryBytes ?? commandLogDefaults.snapshotEveryBytes,
    batchEntriesMax: options.batchEntriesMax ?? commandLogDefaults.batchEntriesMax,
    batchBytesMax: options.batchBytesMax ?? commandLogDefaults.batchBytesMax,
    queueEntriesMax: options.queueEntriesMax ?? commandLogDefaults.queueEntriesMax,
    onFatal: options.onFatal,
    write: options.write ?? syncedBatchWrite(db),
  };
  for (const name of ["snapshotEveryEntries", "batchEntriesMax", "batchBytesMax", "queueEntriesMax"] as const) {
    const value = resolved[name];
    if (!Number.isSafeInteger(value) || value < 1)
      throw new RangeError(`${what}: ${name} must be a positive integer, got ${value}`);
  }
  if (!Number.isSafeInteger(resolved.snapshotEveryBytes) || resolved.snapshotEveryBytes < 0)
    throw new RangeError(
      `${what}: snapshotEveryBytes must be a non-negative integer, got ${resolved.snapshotEveryBytes}`,
    );
  return resolved;
}

async function checkFormat(db: StoreDb, logLevel: StoreSublevel, snapLevel: StoreSublevel): Promise<void> {
  const meta = storeSublevel(db, "meta");
  const stored = await meta.get(formatKey);
  if (stored === undefined) {
    // A fresh database. Refuse one that holds a log but no format: it is not ours, or damaged.
    const [anyLog] = await logLevel.keys({ limit: 1 }).all();
    const [anySnap] = await snapLevel.keys({ limit: 1 }).all();
    if (anyLog !== undefined || anySnap !== undefined)
      throw corruptError(what, "entries present but no format version");
    await syncedBatchWrite(db)([
      { type: "put", sublevel: meta, key: formatKey, value: encodeValue(commandLogFormatVersion) },
    ]);
    return;
  }
  const version = decodeOrCorrupt(stored, "format version");
  if (version !== commandLogFormatVersion) {
    throw corruptError(what, `format version ${String(version)} (this build reads ${commandLogFormatVersion})`);
  }
}

async function readSnapshot(snapLevel: StoreSublevel): Promise<StoredSnapshot | undefined> {
  const bytes = await snapLevel.get(snapshotKey);
  if (bytes === undefined) return undefined;
  const stored = decodeOrCorrupt(bytes, "snapshot");
  if (typeof stored !== "object" || stored === null || !("index" in stored) || !("state" in stored)) {
    throw corruptError(what, "snapshot is not { index, state }");
  }
  const index = stored.index;
  if (typeof index !== "number" || !Number.isSafeInteger(index) || index < 1)
    throw corruptError(what, `snapshot index ${String(index)}`);
  return { index, state: stored.state };
}

/** Applies every entry after `snapshotIndex`, checking they are contiguous; returns the last index and their bytes. */
async function replay<Command, Outcome>(
  logLevel: StoreSublevel,
  machine: ReplicatedStateMachine<Command, Outcome>,
  snapshotIndex: number,
): Promise<{ lastIndex: number; bytes: number }> {
  let lastIndex = snapshotIndex;
  let bytes = 0;
  for await (const [key, value] of logLevel.iterator({ gt: logIndexKey(snapshotIndex) })) {
    let index: number;
    try {
      index = parseLogIndexKey(key);
    } catch (error) {
      throw corruptError(what, `bad log key ${JSON.stringify(key)}`, error);
    }
    if (index !== lastIndex + 1) throw corruptError(what, `log gap: expected index ${lastIndex + 1}, found ${index}`);
    machine.apply(decodeOrCorrupt(value, `entry ${index}`) as Command);
    lastIndex = index;
    bytes += value.byteLength;
  }
  return { lastIndex, bytes };
}

function decodeOrCorrupt(bytes: Uint8Array, name: string): unknown {
  try {
    return decodeValue(bytes);
  } catch (error) {
    throw corruptError(what, `${name} does not decode`, error);
  }
}
