// The power cut's trace reading and plan: each file cut back by what was appended after its last
// fsync, through renames, thread interleavings and failed calls.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { applyPowerCut, parseSyncTrace, planPowerCut, straceArgs } from "../../cluster/faults/src/power-cut.js";
import { powerCutUnavailableReason } from "../../cluster/faults/src/processes.js";

const trace = [
  `7 openat(AT_FDCWD</d>, "/d/n1/000001.log", O_WRONLY|O_CREAT|O_TRUNC|O_CLOEXEC, 0644) = 20</d/n1/000001.log>`,
  `7 write(20</d/n1/000001.log>, ""..., 100) = 100`,
  `8 fdatasync(20</d/n1/000001.log>) = 0`,
  `8 write(20</d/n1/000001.log>, ""..., 30 <unfinished ...>`,
  `9 write(21<socket:[99]>, ""..., 5) = 5`,
  `8 <... write resumed>) = 30`,
  `7 write(20</d/n1/000001.log>, ""..., 12) = -1 ENOSPC (No space left on device)`,
  `7 openat(AT_FDCWD</d>, "/d/n1/CURRENT.tmp", O_WRONLY|O_CREAT|O_TRUNC|O_CLOEXEC, 0644) = 22</d/n1/CURRENT.tmp>`,
  `7 write(22</d/n1/CURRENT.tmp>, ""..., 16) = 16`,
  `7 fsync(22</d/n1/CURRENT.tmp>) = 0`,
  `7 rename("/d/n1/CURRENT.tmp", "/d/n1/CURRENT") = 0`,
  `7 openat(AT_FDCWD</d>, "/d/n1/new.ldb", O_WRONLY|O_CREAT|O_TRUNC|O_CLOEXEC, 0644) = 23</d/n1/new.ldb>`,
  `7 write(23</d/n1/new.ldb>, ""..., 40) = 40`,
  `7 pwrite64(24</d/n1/IDENTITY.json>, ""..., 10, 0) = 10`,
  `7 write(25</d/n1/gone.log>, ""..., 10) = 10`,
  `7 unlink("/d/n1/gone.log") = 0`,
  `7 write(26</elsewhere/x>, ""..., 10) = 10`,
].join("\n");

describe("power cut", () => {
  it("counts each file's bytes appended since its last fsync", () => {
    const files = parseSyncTrace(trace);
    expect(files.get("/d/n1/000001.log")).toEqual({ unsyncedBytes: 30, overwritten: false });
    expect(files.get("/d/n1/CURRENT")).toEqual({ unsyncedBytes: 0, overwritten: false });
    expect(files.has("/d/n1/CURRENT.tmp")).toBe(false);
    expect(files.get("/d/n1/new.ldb")).toEqual({ unsyncedBytes: 40, overwritten: false });
    expect(files.get("/d/n1/IDENTITY.json")?.overwritten).toBe(true);
    expect(files.has("/d/n1/gone.log")).toBe(false);
  });

  it("plans to cut back only files under the node's directory, and keeps overwritten ones whole", () => {
    const sizes: Record<string, number> = { "/d/n1/000001.log": 130, "/d/n1/new.ldb": 40, "/elsewhere/x": 10 };
    const plan = planPowerCut(parseSyncTrace(trace), "/d/n1", (path) => sizes[path] ?? null);
    expect(plan.truncations).toEqual([
      { path: "/d/n1/000001.log", fromBytes: 130, toBytes: 100 },
      { path: "/d/n1/new.ldb", fromBytes: 40, toBytes: 0 },
    ]);
    expect(plan.keptWhole).toEqual(["/d/n1/IDENTITY.json"]);
  });

  it.skipIf(powerCutUnavailableReason() !== null)(
    "on a real traced process: the synced prefix stays, the rest is gone",
    () => {
      const dir = mkdtempSync(join(tmpdir(), "keyraft-powercut-"));
      try {
        const file = join(dir, "journal");
        const output = join(dir, "trace.txt");
        const script = `const fs=require("fs");const fd=fs.openSync(${JSON.stringify(file)},"w");fs.writeSync(fd,"synced|");fs.fdatasyncSync(fd);fs.writeSync(fd,"unsynced");`;
        execFileSync("strace", straceArgs(output, [process.execPath, "-e", script]));
        expect(readFileSync(file, "utf8")).toBe("synced|unsynced");
        const plan = applyPowerCut(readFileSync(output, "utf8"), dir);
        expect(plan.truncations).toEqual([{ path: file, fromBytes: 15, toBytes: 7 }]);
        expect(readFileSync(file, "utf8")).toBe("synced|");
        writeFileSync(output, "");
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );
});
