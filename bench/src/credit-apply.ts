// What applying credit lease commands costs in a large key state: `node bench/dist/credit-apply.js
// [keys]` (default 1,000,000). Keys are imported in process as the scale scenario imports them
// (scale-memory.ts fillState), then creditBatch commands of 32 items are applied as a node's lease
// holder sends them: a round of grants on keys picked at random (a key's first verification), a
// round that settles them, and another round of grants. Each round prints microseconds per item
// and the longest batch; a restart replays such entries and a leader applies them as verifications
// of new keys arrive. The last line is JSON. Timings vary with the machine: compare runs of one
// session.
import { pathToFileURL } from "node:url";
import { applyCommand, type KeyCommand } from "@keyraft/core";
import { fillState } from "./scale-memory.js";

const keysDefault = 1_000_000;
/** Items per creditBatch command: what a lease holder batches under load. */
const itemsPerBatch = 32;
/** Batches per round. */
const batchesPerRound = 2_000;

interface Round {
  round: string;
  microsPerItem: number;
  batchMsMax: number;
  /** How many items the ledger answered so ("granted", "settled", ...). */
  outcomes: Record<string, number>;
}

export function measureCreditApply(keyCount: number): Round[] {
  const state = fillState(keyCount);
  const ids = [...state.keys.keys()];
  const granted: { keyId: string; seq: number }[] = [];
  let seq = 1;
  let seed = 12345;
  const pick = (): string => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return ids[seed % ids.length]!;
  };
  const rounds: Round[] = [];
  for (const round of ["grant", "settle", "grant again"]) {
    const startMs = performance.now();
    let batchMsMax = 0;
    const outcomes: Record<string, number> = {};
    for (let b = 0; b < batchesPerRound; b++) {
      const batchStartMs = performance.now();
      const commands = [];
      for (let i = 0; i < itemsPerBatch; i++) {
        const settle = round === "settle" ? granted.pop() : undefined;
        if (settle !== undefined) {
          commands.push({ type: "settleCreditLease", keyId: settle.keyId, nodeId: "n1", seq: settle.seq, spent: 3 });
          continue;
        }
        const keyId = pick();
        granted.push({ keyId, seq });
        commands.push({ type: "grantCreditLease", keyId, nodeId: "n1", seq: seq++, requested: 100, voters: ["n1"] });
      }
      const outcome = applyCommand(state, { type: "creditBatch", commands } as KeyCommand);
      if (!outcome.ok) throw new Error(`creditBatch: ${JSON.stringify(outcome)}`);
      for (const lease of outcome.leases ?? []) outcomes[lease.type] = (outcomes[lease.type] ?? 0) + 1;
      batchMsMax = Math.max(batchMsMax, performance.now() - batchStartMs);
    }
    const items = batchesPerRound * itemsPerBatch;
    rounds.push({ round, microsPerItem: ((performance.now() - startMs) * 1000) / items, batchMsMax, outcomes });
  }
  return rounds;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const keyCount = Number(process.argv[2] ?? keysDefault);
  if (!Number.isSafeInteger(keyCount) || keyCount < 1000) throw new Error("keys: a whole number of at least 1000");
  process.stdout.write(`credit lease commands applied with ${keyCount} keys (node ${process.version}):\n`);
  const rounds = measureCreditApply(keyCount);
  for (const { round, microsPerItem, batchMsMax } of rounds)
    process.stdout.write(
      `  ${round}: ${microsPerItem.toFixed(1)} µs per item, longest batch of ${itemsPerBatch} ${batchMsMax.toFixed(1)} ms\n`,
    );
  process.stdout.write(
    `${JSON.stringify({ keys: keyCount, ...Object.fromEntries(rounds.map((r) => [r.round, Number(r.microsPerItem.toFixed(2))])) })}\n`,
  );
}
