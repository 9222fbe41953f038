import { describe, expect, it } from "vitest";
import { seededRandom } from "../src/prng.js";
import { indexSampler, zipfCdf } from "../src/zipf.js";

function frequencies(n: number, draws: number, distribution: "uniform" | "zipf", exponent = 1): number[] {
  const sample = indexSampler(n, distribution, seededRandom(7), exponent);
  const counts = new Array<number>(n).fill(0);
  let outOfRange = 0;
  for (let i = 0; i < draws; i++) {
    const index = sample();
    if (!Number.isInteger(index) || index < 0 || index >= n) outOfRange++;
    else counts[index] = (counts[index] ?? 0) + 1;
  }
  expect(outOfRange).toBe(0);
  return counts;
}

describe("zipf sampler", () => {
  it("has a CDF that increases to exactly 1", () => {
    const cdf = zipfCdf(1000, 1);
    for (let i = 1; i < cdf.length; i++) expect(cdf[i] as number).toBeGreaterThan(cdf[i - 1] as number);
    expect(cdf[cdf.length - 1]).toBe(1);
  });

  it("draws rank k in proportion to 1/k^s", () => {
    const n = 100,
      draws = 200_000;
    const counts = frequencies(n, draws, "zipf", 1);
    const harmonic = Array.from({ length: n }, (_, k) => 1 / (k + 1)).reduce((a, b) => a + b, 0);
    for (const k of [0, 1, 4, 9]) {
      const expected = draws / (k + 1) / harmonic;
      expect(Math.abs((counts[k] as number) - expected) / expected).toBeLessThan(0.05);
    }
    // Rank 1 about twice rank 2, ten times rank 10.
    expect((counts[0] as number) / (counts[1] as number)).toBeGreaterThan(1.8);
    expect((counts[0] as number) / (counts[9] as number)).toBeGreaterThan(8);
  });

  it("is steeper with a larger exponent", () => {
    const flat = frequencies(1000, 50_000, "zipf", 0.5),
      steep = frequencies(1000, 50_000, "zipf", 1.5);
    expect(steep[0] as number).toBeGreaterThan(2 * (flat[0] as number));
  });

  it("uniform draws every index about equally", () => {
    const counts = frequencies(10, 100_000, "uniform");
    for (const count of counts) expect(Math.abs(count - 10_000)).toBeLessThan(600);
  });

  it("is reproducible from its seed and works for a pool of one", () => {
    const a = indexSampler(1000, "zipf", seededRandom(3)),
      b = indexSampler(1000, "zipf", seededRandom(3));
    const drawsA = Array.from({ length: 50 }, a),
      drawsB = Array.from({ length: 50 }, b);
    expect(drawsA).toEqual(drawsB);
    const one = indexSampler(1, "zipf", seededRandom(1));
    expect([one(), one(), one()]).toEqual([0, 0, 0]);
  });

  it("rejects an empty pool and a non-positive exponent", () => {
    expect(() => indexSampler(0, "uniform", seededRandom(1))).toThrow(RangeError);
    expect(() => zipfCdf(10, 0)).toThrow(RangeError);
  });
});
