// A small seeded PRNG (sfc32) so that a run's key choices are reproducible from its seed.
export type Random = () => number;

/** Returns a function giving uniform floats in [0, 1), fully determined by `seed` (a 32-bit integer). */
export function seededRandom(seed: number): Random {
  let a = 0x9e3779b9,
    b = 0x243f6a88,
    c = 0xb7e15162,
    d = seed >>> 0;
  const next = (): number => {
    a >>>= 0;
    b >>>= 0;
    c >>>= 0;
    d >>>= 0;
    const t = (((a + b) | 0) + d) | 0;
    d = (d + 1) | 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) | 0;
    c = (c << 21) | (c >>> 11);
    c = (c + t) | 0;
    return (t >>> 0) / 4294967296;
  };
  // Discard the first outputs: sfc32 mixes poorly for the first few draws from similar seeds.
  for (let i = 0; i < 15; i++) next();
  return next;
}
