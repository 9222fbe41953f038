// Layout of KEYRAFT_DATA_DIR on a cluster node:
//   <dataDir>/raft/   the Raft log, hard state and snapshots (LevelStorage)
//   <dataDir>/node/   this node's own data: rate-limit reservations (never replicated)
// A data dir written by the pre-cluster single-node store (a LevelDB database at the top level,
// with its own command log) is refused with a clear message rather than silently ignored.
import { existsSync } from "node:fs";
import { join } from "node:path";

export interface DataDirLayout {
  raftDir: string;
  nodeDir: string;
}

export function dataDirLayout(dataDir: string): DataDirLayout {
  return { raftDir: join(dataDir, "raft"), nodeDir: join(dataDir, "node") };
}

/** Non-null when `dataDir` holds a pre-cluster single-node store: the message to print. */
export function legacyStoreMessage(dataDir: string): string | null {
  if (!existsSync(join(dataDir, "CURRENT"))) return null;
  return (
    `${dataDir} holds a pre-cluster single-node store (a LevelDB database at its top level). ` +
    `This version keeps its state in ${join(dataDir, "raft")} (replicated through Raft) and ${join(dataDir, "node")}; ` +
    `it does not read the old format. Start on an empty KEYRAFT_DATA_DIR and re-create the keys (see docs/cluster.md, "Upgrading a single-node data dir").`
  );
}
