// Raft's election jitter and core's counter simulations use the same generator, written once in
// each package because neither package depends on the other (packages/raft/src/core/prng.ts,
// packages/core/src/sim-counters/prng.ts). The seeds in packages/core/testdata/sim-counters-*.txt
// were found with raft's copy, so the two streams must stay equal.
import { Xoshiro128 } from "@keyraft/raft";
import { describe, expect, it } from "vitest";
import { SimRandom } from "../packages/core/src/sim-counters/prng.js";

describe("the two xoshiro128** copies", () => {
  it("give the same stream for the same seed", () => {
    for (const seed of [0, 1, 7, 2 ** 31 - 1, -5, 123_456_789]) {
      const raft = new Xoshiro128(seed);
      const sim = new SimRandom(seed);
      for (let i = 0; i < 200; i++) {
        expect(sim.nextUint32(), `seed ${seed} draw ${i}`).toBe(raft.nextUint32());
        expect(sim.intBelow(1 + i), `seed ${seed} draw ${i}`).toBe(raft.intBelow(1 + i));
        expect(sim.nextFloat(), `seed ${seed} draw ${i}`).toBe(raft.nextFloat());
      }
    }
  });
});
