// Index samplers over a pool of n items: uniform, or zipf (rank k drawn with probability ∝ 1/k^s),
// the usual model of "a few keys are hot". Index 0 is the hottest rank.
import type { Distribution } from "./args.js";
import type { Random } from "./prng.js";

export type IndexSampler = () => number;

/** Builds a sampler of indexes in [0, n). Zipf precomputes a CDF (8 bytes per item) and draws by binary search. */
export function indexSampler(n: number, distribution: Distribution, random: Random, zipfExponent = 1): IndexSampler {
  if (!Number.isInteger(n) || n < 1) throw new RangeError(`pool size must be a positive integer, got ${n}`);
  switch (distribution) {
    case "uniform":
      return () => Math.floor(random() * n);
    case "zipf":
      return zipfSampler(zipfCdf(n, zipfExponent), random);
    default: {
      const unknown: never = distribution;
      throw new Error(`unknown distribution ${String(unknown)}`);
    }
  }
}

/** Cumulative probabilities of ranks 1..n; the last entry is exactly 1. */
export function zipfCdf(n: number, exponent: number): Float64Array {
  if (!(exponent > 0)) throw new RangeError(`zipf exponent must be positive, got ${exponent}`);
  const cdf = new Float64Array(n);
  let sum = 0;
  for (let k = 1; k <= n; k++) {
    sum += 1 / Math.pow(k, exponent);
    cdf[k - 1] = sum;
  }
  for (let i = 0; i < n; i++) cdf[i] = (cdf[i] as number) / sum;
  cdf[n - 1] = 1;
  return cdf;
}

function zipfSampler(cdf: Float64Array, random: Random): IndexSampler {
  const last = cdf.length - 1;
  return () => {
    const u = random();
    // Smallest index whose cumulative probability exceeds u.
    let low = 0,
      high = last;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if ((cdf[mid] as number) > u) high = mid;
      else low = mid + 1;
    }
    return low;
  };
}
