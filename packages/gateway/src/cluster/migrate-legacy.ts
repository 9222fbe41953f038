// Upgrading a data dir of the pre-cluster single-node store (a LevelDB database at the top of
// KEYRAFT_DATA_DIR, with its own command log) into a one-member cluster:
//   1. restore the key state from the old snapshot + log (the old store's own recovery);
//   2. copy the rate-limit reservations into <dataDir>/node (so a restart still never lets a limit
//      admit more than it should);
//   3. build the Raft storage in <dataDir>/raft.migrating: a snapshot at index 1 holding that state,
//      with this node as the only voter; then rename it to <dataDir>/raft (atomic);
//   4. move the old database's files into <dataDir>/pre-cluster-backup (kept, never read again).
// A crash before 3 ends leaves the old store untouched (the next start migrates again); a crash
// after it only has step 4 left, which the next start finishes. Only a one-member cluster
// migrates: other members would not have the state (add them at run time afterwards).
import { existsSync } from "node:fs";
import { mkdir, readdir, rename, rm } from "node:fs/promises";
import { join } from "node:path";
import { keyStateMachine, type CommandOutcome, type KeyCommand } from "@keyraft/core";
import { joinSnapshotData, LevelStorage } from "@keyraft/raft";
import type { Logger } from "pino";
import { LevelCommandLog } from "../store/level-command-log.js";
import { openStoreDb, storeSublevel, syncedBatchWrite, type StoreOp } from "../store/level-db.js";
import { encodeSnapshotSliced } from "./entry-codec.js";

export const backupDirName = "pre-cluster-backup";
const migratingDirName = "raft.migrating";
/** Reservations copied per batch. */
const copyBatchEntriesMax = 1000;

export interface MigrationOptions {
  dataDir: string;
  raftDir: string;
  nodeDir: string;
  nodeId: string;
  /** Whether this node is a one-member cluster (KEYRAFT_PEERS unset or only itself, not joining). */
  singleMember: boolean;
  logger: Logger;
}

export function hasLegacyStore(dataDir: string): boolean {
  return existsSync(join(dataDir, "CURRENT"));
}

/** Migrates when needed; throws an Error with the message to print when it cannot. */
export async function migrateLegacyStore(options: MigrationOptions): Promise<void> {
  const { dataDir, raftDir, logger } = options;
  if (!hasLegacyStore(dataDir)) return;
  if (existsSync(raftDir)) {
    // Step 3 completed before a crash: only the move of the old files is left.
    await moveLegacyFiles(dataDir);
    logger.info({ dataDir }, "pre-cluster store: finished moving the old files aside");
    return;
  }
  if (!options.singleMember) {
    throw new Error(
      `${dataDir} holds a pre-cluster single-node store. It can only be upgraded into a one-member cluster: ` +
        `start this node once without KEYRAFT_PEERS (or with only itself) to migrate it, then add the other nodes at run time (docs/cluster.md).`,
    );
  }
  logger.info({ dataDir }, "pre-cluster store found: migrating it into a one-member cluster");
  const machine = keyStateMachine();
  const legacy = await openStoreDb(dataDir);
  let index: number;
  try {
    const log = await LevelCommandLog.open<KeyCommand, CommandOutcome>(legacy, machine, {
      onFatal: () => undefined, // nothing is appended to the old log
    });
    index = log.appliedIndex();
    await log.close();
    await copyReservations(legacy, options.nodeDir);
  } finally {
    await legacy.close();
  }
  const migrating = join(dataDir, migratingDirName);
  await rm(migrating, { recursive: true, force: true });
  const storage = await LevelStorage.open({ path: migrating });
  try {
    const conf = { voters: [options.nodeId], learners: [] };
    await storage.applySnapshot({
      metadata: { index: 1, term: 1, conf },
      data: joinSnapshotData(await encodeSnapshotSliced({ keys: machine.capture(), peers: {} }, async () => undefined)),
    });
    await storage.append([], { term: 1, vote: "", commit: 1 }, true);
  } finally {
    await storage.close();
  }
  await rename(migrating, raftDir);
  await moveLegacyFiles(dataDir);
  logger.info(
    { dataDir, oldAppliedIndex: index, keys: machine.state.keys.size, backup: join(dataDir, backupDirName) },
    "pre-cluster store migrated",
  );
}

async function copyReservations(legacy: Awaited<ReturnType<typeof openStoreDb>>, nodeDir: string): Promise<void> {
  const target = await openStoreDb(nodeDir);
  try {
    const from = storeSublevel(legacy, "rl");
    const to = storeSublevel(target, "rl");
    const write = syncedBatchWrite(target);
    let batch: StoreOp[] = [];
    for await (const [key, value] of from.iterator()) {
      batch.push({ type: "put", sublevel: to, key, value });
      if (batch.length >= copyBatchEntriesMax) {
        await write(batch);
        batch = [];
      }
    }
    if (batch.length > 0) await write(batch);
  } finally {
    await target.close();
  }
}

/** Moves every top-level file of the old database (not our directories) into the backup dir. */
async function moveLegacyFiles(dataDir: string): Promise<void> {
  const backup = join(dataDir, backupDirName);
  await mkdir(backup, { recursive: true });
  for (const entry of await readdir(dataDir, { withFileTypes: true })) {
    if (!entry.isFile()) continue;
    await rename(join(dataDir, entry.name), join(backup, entry.name));
  }
}
