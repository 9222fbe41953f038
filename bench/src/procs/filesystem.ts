// The filesystem type a path lives on (Linux, from /proc/mounts): a node whose data dir is on
// tmpfs gets fsync for free, which would flatter every durable-write figure.
import { readFileSync } from "node:fs";

/** Mount type (ext4, xfs, tmpfs, overlay, ...) of the longest mount point containing `path`; null if unknown. */
export function filesystemTypeOf(path: string, mounts = readMounts()): string | null {
  let best: { mountPoint: string; type: string } | null = null;
  for (const line of mounts.split("\n")) {
    const [, mountPoint, type] = line.split(" ");
    if (mountPoint === undefined || type === undefined) continue;
    const prefix = mountPoint.endsWith("/") ? mountPoint : `${mountPoint}/`;
    const contains = path === mountPoint || path.startsWith(prefix);
    if (contains && (best === null || mountPoint.length > best.mountPoint.length)) best = { mountPoint, type };
  }
  return best?.type ?? null;
}

function readMounts(): string {
  try {
    return readFileSync("/proc/mounts", "utf8");
  } catch {
    return "";
  }
}
