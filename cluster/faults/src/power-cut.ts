// A power cut that drops a node's unsynced writes. A kill -9 leaves the OS's page cache, and with
// it every write the process made, so it cannot lose what the node never fsynced. Here the node
// runs under `strace` (writes, fsyncs, renames, unlinks of every thread, paths decoded with -y);
// at the cut the process is killed with SIGKILL, and each file it wrote since its last fsync is cut
// back by the bytes appended after that fsync, the state a power loss may leave. Pure parts
// (parsing, the plan) are unit-tested; `applyPowerCut` touches the disk.
import { statSync, truncateSync } from "node:fs";

/** The syscalls traced: what changes a file's content or name, and what makes it durable. */
export const tracedSyscalls = [
  "openat",
  "write",
  "writev",
  "pwrite64",
  "pwritev",
  "pwritev2",
  "ftruncate",
  "fsync",
  "fdatasync",
  "rename",
  "renameat",
  "renameat2",
  "unlink",
  "unlinkat",
] as const;

/** strace's arguments for `command` (written to `outputPath`); seccomp-bpf stops only the traced syscalls. */
export function straceArgs(outputPath: string, command: readonly string[]): string[] {
  return [
    "-f",
    "-qq",
    "-y",
    "-s",
    "0",
    "--seccomp-bpf",
    "-e",
    `trace=${tracedSyscalls.join(",")}`,
    "-o",
    outputPath,
    "--",
    ...command,
  ];
}

export interface FileSyncState {
  /** Bytes appended since the file's last fsync (or since it was opened with O_TRUNC / created). */
  unsyncedBytes: number;
  /** A positional write or a truncate since its last fsync: the lost content cannot be reconstructed. */
  overwritten: boolean;
}

/** Lines of one syscall longer than this are not ours (strace prints no data with -s 0). */
const traceLineCharsMax = 16_384;

/**
 * Each file's unsynced writes from an strace output (`-f -y`): calls split across threads
 * (`<unfinished ...>` / `<... resumed>`) are joined; failed calls are ignored.
 */
export function parseSyncTrace(text: string): Map<string, FileSyncState> {
  const files = new Map<string, FileSyncState>();
  const pending = new Map<string, string>();
  const state = (path: string): FileSyncState => {
    let s = files.get(path);
    if (s === undefined) {
      s = { unsyncedBytes: 0, overwritten: false };
      files.set(path, s);
    }
    return s;
  };
  for (const rawLine of text.split("\n")) {
    if (rawLine.length > traceLineCharsMax) continue;
    const head = /^(\d+)\s+(.*)$/.exec(rawLine);
    if (head === null) continue;
    const [, pid = "", rest = ""] = head;
    let line = rest;
    if (line.endsWith("<unfinished ...>")) {
      pending.set(pid, line.slice(0, -"<unfinished ...>".length));
      continue;
    }
    const resumed = /^<\.\.\. \w+ resumed>(.*)$/.exec(line);
    if (resumed !== null) {
      line = (pending.get(pid) ?? "") + (resumed[1] ?? "");
      pending.delete(pid);
    }
    const call = /^(\w+)\((.*)\)\s+=\s+(-?\d+)/.exec(line);
    if (call === null) continue;
    const [, name = "", args = "", resultText = ""] = call;
    const result = Number(resultText);
    if (result < 0) continue;
    const fdPath = /^\d+<(.*?)>,?/.exec(args)?.[1];
    const quoted = [...args.matchAll(/"((?:[^"\\]|\\.)*)"/g)].map((m) => m[1] ?? "");
    switch (name) {
      case "openat": {
        const path = /= \d+<(.*)>$/.exec(line)?.[1];
        if (path !== undefined && /O_TRUNC/.test(args)) files.set(path, { unsyncedBytes: 0, overwritten: false });
        break;
      }
      case "write":
      case "writev":
        if (fdPath !== undefined && fdPath.startsWith("/")) state(fdPath).unsyncedBytes += result;
        break;
      case "pwrite64":
      case "pwritev":
      case "pwritev2":
      case "ftruncate":
        if (fdPath !== undefined && fdPath.startsWith("/")) state(fdPath).overwritten = true;
        break;
      case "fsync":
      case "fdatasync":
        if (fdPath !== undefined) files.set(fdPath, { unsyncedBytes: 0, overwritten: false });
        break;
      case "rename":
      case "renameat":
      case "renameat2": {
        // renameat(AT_FDCWD<dir>, "old", AT_FDCWD<dir>, "new"): the two quoted names, absolute here.
        const [from, to] = quoted;
        if (from === undefined || to === undefined) break;
        const moved = files.get(from);
        files.delete(from);
        if (moved !== undefined) files.set(to, moved);
        else files.delete(to);
        break;
      }
      case "unlink":
      case "unlinkat": {
        const [path] = quoted;
        if (path !== undefined) files.delete(path);
        break;
      }
    }
  }
  return files;
}

export interface PowerCutPlan {
  /** Files cut back: path, size before and after. */
  truncations: { path: string; fromBytes: number; toBytes: number }[];
  /** Files with unsynced positional writes, left whole (their lost content is unknown). */
  keptWhole: string[];
}

/** What a power cut does to the files under `dir`, given their sizes now (`sizeOf`, null when gone). */
export function planPowerCut(
  files: ReadonlyMap<string, FileSyncState>,
  dir: string,
  sizeOf: (path: string) => number | null,
): PowerCutPlan {
  const plan: PowerCutPlan = { truncations: [], keptWhole: [] };
  const prefix = dir.endsWith("/") ? dir : `${dir}/`;
  for (const [path, s] of [...files].sort(([a], [b]) => a.localeCompare(b))) {
    if (!path.startsWith(prefix)) continue;
    if (s.overwritten) {
      plan.keptWhole.push(path);
      continue;
    }
    if (s.unsyncedBytes === 0) continue;
    const size = sizeOf(path);
    if (size === null) continue;
    plan.truncations.push({ path, fromBytes: size, toBytes: Math.max(0, size - s.unsyncedBytes) });
  }
  return plan;
}

/** Drops the unsynced writes of a killed node's trace from the files under `dir`. */
export function applyPowerCut(traceText: string, dir: string): PowerCutPlan {
  const plan = planPowerCut(parseSyncTrace(traceText), dir, (path) => {
    try {
      return statSync(path).size;
    } catch {
      return null;
    }
  });
  for (const t of plan.truncations) truncateSync(t.path, t.toBytes);
  return plan;
}
