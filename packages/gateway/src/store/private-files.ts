// The data directory holds every key hash, the command log and the rate-limit counts: only the
// node's own user may read it. The process runs with umask 077, so what it creates is 0700
// (directories) and 0600 (files); what an older version or another tool created is narrowed at
// start. Symbolic links are left alone (chmod would follow them out of the directory).
import { chmod, lstat, readdir } from "node:fs/promises";
import { join } from "node:path";

export const privateUmask = 0o077;
export const privateDirMode = 0o700;
export const privateFileMode = 0o600;
/** Deepest directory nesting walked (LevelDB and the raft dir are two or three levels deep). */
export const privateWalkDepthMax = 8;

/** Makes the process create private files from now on; returns the previous umask. */
export function usePrivateUmask(): number {
  return process.umask(privateUmask);
}

/** Narrows `root` and everything under it to 0700/0600; returns how many entries changed. A missing root is fine. */
export async function restrictTree(root: string): Promise<number> {
  let changed = 0;
  const visit = async (path: string, depth: number): Promise<void> => {
    const stats = await lstat(path).catch((error: NodeJS.ErrnoException) => {
      if (error.code === "ENOENT") return null;
      throw error;
    });
    if (stats === null || stats.isSymbolicLink()) return;
    const wanted = stats.isDirectory() ? privateDirMode : privateFileMode;
    if ((stats.mode & 0o777) !== wanted) {
      await chmod(path, wanted);
      changed += 1;
    }
    if (!stats.isDirectory() || depth >= privateWalkDepthMax) return;
    for (const name of await readdir(path)) await visit(join(path, name), depth + 1);
  };
  await visit(root, 0);
  return changed;
}
