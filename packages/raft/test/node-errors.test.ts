import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { RAFT_ERROR_CODES, RaftError } from "../src/core/errors.js";
import { fromCoreError, NotLeaderError, RAFT_ERRORS, RAFT_IO_ERROR_CODES, RaftNodeError } from "../src/errors.js";

const docs = readFileSync(new URL("../../../docs/raft-io.md", import.meta.url), "utf8");

describe("error registry (I/O side)", () => {
  it("reuses no core code and documents every code in docs/raft-io.md", () => {
    for (const code of Object.keys(RAFT_IO_ERROR_CODES)) {
      expect(Object.keys(RAFT_ERROR_CODES)).not.toContain(code);
      expect(code).toMatch(/^RAFT_ERR_[A-Z_]+$/);
      expect(docs).toContain(code);
    }
    expect(Object.keys(RAFT_ERRORS)).toHaveLength(
      Object.keys(RAFT_ERROR_CODES).length + Object.keys(RAFT_IO_ERROR_CODES).length,
    );
  });

  it("maps core errors to RaftNodeError, keeping code, leader and cause; bugs are rethrown", () => {
    const notLeader = fromCoreError(new RaftError("RAFT_ERR_NOT_LEADER", "follower", "n2"), "");
    expect(notLeader).toBeInstanceOf(NotLeaderError);
    expect(notLeader).toMatchObject({ code: "RAFT_ERR_NOT_LEADER", leader: "n2" });
    const dropped = new RaftError("RAFT_ERR_PROPOSAL_DROPPED", "transfer in progress");
    expect(fromCoreError(dropped, "n3")).toMatchObject({
      code: "RAFT_ERR_PROPOSAL_DROPPED",
      leader: "n3",
      cause: dropped,
    });
    expect(fromCoreError(new NotLeaderError("n1"), "")).toBeInstanceOf(RaftNodeError);
    expect(() => fromCoreError(new TypeError("bug"), "")).toThrow(TypeError);
  });
});
