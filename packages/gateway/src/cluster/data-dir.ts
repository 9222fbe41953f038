// Layout of KEYRAFT_DATA_DIR on a cluster node:
//   <dataDir>/raft/   the Raft log, hard state and snapshots (LevelStorage)
//   <dataDir>/node/   this node's own data: rate-limit reservations (never replicated)
// A data dir written by the pre-cluster single-node store (a LevelDB database at the top level,
// with its own command log) is migrated at start (migrate-legacy.ts).
import { join } from "node:path";

export interface DataDirLayout {
  raftDir: string;
  nodeDir: string;
}

export function dataDirLayout(dataDir: string): DataDirLayout {
  return { raftDir: join(dataDir, "raft"), nodeDir: join(dataDir, "node") };
}
