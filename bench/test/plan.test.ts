import { describe, expect, it } from "vitest";
import { compileTemplate, splitEvenly } from "../src/load/plan.js";

describe("request templates", () => {
  it("fills {{pick}} as a JSON string and {{seq}}/{{seq8}} as numbers", () => {
    const build = compileTemplate(`{"keyId":{{pick}},"name":"n-{{seq}}","p":"x{{seq8}}"}`);
    expect(JSON.parse(build('a"b', 19))).toEqual({ keyId: 'a"b', name: "n-19", p: "x3" });
  });

  it("returns a template without holes unchanged", () => {
    expect(compileTemplate(`{"a":1}`)("ignored", 5)).toBe(`{"a":1}`);
  });

  it("splits connections evenly", () => {
    expect(splitEvenly(10, 3)).toEqual([4, 3, 3]);
    expect(splitEvenly(2, 2)).toEqual([1, 1]);
    expect(splitEvenly(64, 1)).toEqual([64]);
  });
});

import { throughputOf } from "../src/scenarios/raft-runner.js";

describe("throughput of a figures-only scenario", () => {
  it("uses rps when given, else the largest ...Rps/...PerSec figure, else null", () => {
    expect(throughputOf({ rps: 10, commitsPerSec64: 99 })).toBe(10);
    expect(throughputOf({ commitsPerSec1: 278, commitsPerSec64: 2369, p99CommitMs1: 20, failoverMedianMs: 282 })).toBe(
      2369,
    );
    expect(throughputOf({ verifyRps: 5, p99Ms: 3 })).toBe(5);
    expect(throughputOf({ p99Ms: 3 })).toBeNull();
  });
});
