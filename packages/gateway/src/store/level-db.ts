// The one LevelDB database of a node and its sublevels. Keys are utf8 strings and values raw
// bytes (`view`): every value is encoded by store/codec.ts, so the database never guesses.
import { mkdir } from "node:fs/promises";
import { Level } from "level";

export type StoreDb = Level<string, Uint8Array>;

/** Opens (creating it and its directory when missing) the database at `dir`. */
export async function openStoreDb(dir: string): Promise<StoreDb> {
  await mkdir(dir, { recursive: true });
  const db: StoreDb = new Level<string, Uint8Array>(dir, { keyEncoding: "utf8", valueEncoding: "view" });
  await db.open();
  return db;
}

export function storeSublevel(db: StoreDb, name: string) {
  return db.sublevel<string, Uint8Array>(name, { keyEncoding: "utf8", valueEncoding: "view" });
}

export type StoreSublevel = ReturnType<typeof storeSublevel>;

/** One operation of an atomic batch, addressed to a sublevel. */
export type StoreOp =
  | { type: "put"; sublevel: StoreSublevel; key: string; value: Uint8Array }
  | { type: "del"; sublevel: StoreSublevel; key: string };

/** Writes `ops` as one atomic batch and resolves once it is fsynced. */
export type SyncedBatchWrite = (ops: readonly StoreOp[]) => Promise<void>;

/**
 * The synced batch writer over `db`. classic-level defaults to `sync: false`, which leaves the
 * write in the OS page cache: a power loss could drop an acknowledged write. `sync: true` makes
 * LevelDB fsync its write-ahead log before the promise resolves.
 */
export function syncedBatchWrite(db: StoreDb): SyncedBatchWrite {
  const counts = storeWriteCounts(db);
  return (ops) => {
    counts.batches += 1;
    for (const op of ops) {
      if (op.type === "put") counts.puts += 1;
      else counts.deletes += 1;
    }
    return db.batch([...ops], { sync: true });
  };
}

/** The synced batches written to a database and the operations they held (GET /metrics, the verify bench). */
export interface StoreWriteCounts {
  batches: number;
  puts: number;
  deletes: number;
}

const writeCountsByDb = new WeakMap<StoreDb, StoreWriteCounts>();

/** The write counts of `db` (every syncedBatchWrite over it adds to them), made on first use. */
export function storeWriteCounts(db: StoreDb): StoreWriteCounts {
  let counts = writeCountsByDb.get(db);
  if (counts === undefined) {
    counts = { batches: 0, puts: 0, deletes: 0 };
    writeCountsByDb.set(db, counts);
  }
  return counts;
}
