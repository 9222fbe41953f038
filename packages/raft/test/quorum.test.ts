import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { committedIndex, hasQuorum, quorumSize, voteResult } from "../src/core/quorum.js";

describe("quorum", () => {
  it("majority sizes", () => {
    expect([1, 2, 3, 4, 5, 6, 7].map(quorumSize)).toEqual([1, 2, 2, 3, 3, 4, 4]);
  });

  it("committedIndex is the largest index replicated on a majority (checked against brute force)", () => {
    fc.assert(
      fc.property(fc.array(fc.nat(50), { minLength: 1, maxLength: 9 }), (matches) => {
        const voters = matches.map((_, i) => `v${i}`);
        const got = committedIndex(voters, (id) => matches[Number(id.slice(1))] ?? 0);
        const onMajority = (index: number) => matches.filter((m) => m >= index).length >= quorumSize(voters.length);
        expect(onMajority(got)).toBe(true);
        expect(onMajority(got + 1)).toBe(false);
      }),
    );
  });

  it("voteResult: won, lost, pending", () => {
    const voters = ["a", "b", "c", "d", "e"];
    const votes = new Map<string, boolean>([
      ["a", true],
      ["b", true],
    ]);
    expect(voteResult(voters, votes)).toBe("pending");
    votes.set("c", true);
    expect(voteResult(voters, votes)).toBe("won");
    const lost = new Map<string, boolean>([
      ["a", true],
      ["b", false],
      ["c", false],
      ["d", false],
    ]);
    expect(voteResult(voters, lost)).toBe("lost");
    expect(
      voteResult(
        voters,
        new Map([
          ["x", true],
          ["y", true],
          ["z", true],
        ]),
      ),
    ).toBe("pending"); // non-voters do not count
  });

  it("hasQuorum counts only voters", () => {
    expect(hasQuorum(["a", "b", "c"], new Set(["a", "b"]))).toBe(true);
    expect(hasQuorum(["a", "b", "c"], new Set(["a", "x", "y"]))).toBe(false);
  });
});
