// Closed-loop load on one node: `concurrency` proposers, each proposing again as soon as its last
// proposal is committed and applied. Measures commits and commit latency (propose -> resolved).

import { RaftNodeError } from "../errors.js";
import type { RaftNode } from "../node.js";
import type { LoadResult } from "./process-protocol.js";

/** Upper bound of recorded latency samples (a reservoir beyond it). */
export const latencySamplesMax = 1_000_000;

export async function runLoad(
  node: RaftNode,
  options: { concurrency: number; durationMs: number; payloadBytes: number },
): Promise<LoadResult> {
  const payload = new Uint8Array(options.payloadBytes);
  const latenciesMs: number[] = [];
  const errorCodes: Record<string, number> = {};
  let commits = 0;
  let errors = 0;
  let seen = 0;
  const startMs = performance.now();
  const endMs = startMs + options.durationMs;
  const proposer = async (worker: number): Promise<void> => {
    for (let n = 0; performance.now() < endMs; n++) {
      new DataView(payload.buffer).setUint32(0, worker * 1_000_003 + n); // distinct commands
      const sentMs = performance.now();
      try {
        await node.propose(payload.slice());
        commits++;
        record(latenciesMs, performance.now() - sentMs, ++seen);
      } catch (error) {
        errors++;
        const code = error instanceof RaftNodeError ? error.code : "OTHER";
        errorCodes[code] = (errorCodes[code] ?? 0) + 1;
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    }
  };
  const before = node.metrics();
  await Promise.all(Array.from({ length: options.concurrency }, (_, worker) => proposer(worker)));
  const durationMs = performance.now() - startMs;
  const after = node.metrics();
  const leader = Object.fromEntries(
    Object.entries(after).map(([key, value]) => [
      key,
      Math.round((value - before[key as keyof typeof before]) * 10) / 10,
    ]),
  );
  latenciesMs.sort((a, b) => a - b);
  return {
    commits,
    errors,
    durationMs,
    p50Ms: quantile(latenciesMs, 0.5),
    p99Ms: quantile(latenciesMs, 0.99),
    errorCodes,
    leader,
  };
}

function record(samples: number[], valueMs: number, seen: number): void {
  if (samples.length < latencySamplesMax) samples.push(valueMs);
  else {
    const slot = Math.floor(Math.random() * seen);
    if (slot < latencySamplesMax) samples[slot] = valueMs;
  }
}

export function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
}
