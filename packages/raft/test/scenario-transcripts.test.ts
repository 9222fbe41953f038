import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { runInteractionTranscript } from "../src/sim/interaction/run.js";

// Each testdata/*.txt is a transcript of commands and their exact output (etcd datadriven style).
// UPDATE_TESTDATA=1 rewrites the expected outputs from the actual ones; review the diff before committing.
const dir = fileURLToPath(new URL("../testdata/", import.meta.url));
// *-seeds.txt files are regression seed lists of the simulators, not transcripts.
const files = readdirSync(dir)
  .filter((f) => f.endsWith(".txt") && !f.endsWith("-seeds.txt"))
  .sort();

describe("interaction transcripts", () => {
  it("has transcripts", () => {
    expect(files).toEqual(expect.arrayContaining(["election.txt", "replication.txt"]));
  });
  for (const file of files) {
    it(file, () => {
      const text = readFileSync(dir + file, "utf8");
      const result = runInteractionTranscript(text);
      if (process.env["UPDATE_TESTDATA"] === "1") {
        writeFileSync(dir + file, result.rewritten);
        return;
      }
      for (const m of result.mismatches) {
        expect(`${file}:${m.line} ${m.input}\n${m.actual}`).toBe(`${file}:${m.line} ${m.input}\n${m.expected}`);
      }
      expect(result.mismatches).toHaveLength(0);
    });
  }
});
