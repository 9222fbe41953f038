// CPU time of local processes, read from /proc (Linux). Elsewhere it reports null and the
// report says the target's CPU is unknown.
import { readFileSync } from "node:fs";

const ticksPerSecond = 100; // USER_HZ on Linux, fixed for /proc/<pid>/stat.

/** User + system CPU seconds consumed so far by `pid`, or null when unavailable. */
export function processCpuSeconds(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the command name (which may contain spaces) start after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const user = Number(fields[11]); // utime is field 14 of the full line
    const system = Number(fields[12]); // stime is field 15
    if (!Number.isFinite(user) || !Number.isFinite(system)) return null;
    return (user + system) / ticksPerSecond;
  } catch {
    return null;
  }
}

/** Sum over several pids; null if any is unknown. */
export function processesCpuSeconds(pids: readonly number[]): number | null {
  let total = 0;
  for (const pid of pids) {
    const seconds = processCpuSeconds(pid);
    if (seconds === null) return null;
    total += seconds;
  }
  return total;
}
