import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ForwardBatcher } from "../src/placement/forward-batcher.js";
import { forwardBatchChecksMax, forwardQueuedMax } from "../src/placement/forward-batcher.js";

describe("ForwardBatcher", () => {
  it("sends a full batch at once and the rest after maxDelayMs", () => {
    const batcher = new ForwardBatcher<number>(5);
    for (let i = 0; i < forwardBatchChecksMax + 3; i++) batcher.add("n2", i, 100);
    const now = batcher.due(100);
    expect(now).toHaveLength(1);
    expect(now[0]?.items).toHaveLength(forwardBatchChecksMax);
    expect(batcher.due(104)).toEqual([]);
    expect(batcher.due(105)).toEqual([
      { ownerId: "n2", items: [forwardBatchChecksMax, forwardBatchChecksMax + 1, forwardBatchChecksMax + 2] },
    ]);
    expect(batcher.size()).toBe(0);
  });

  it(`refuses past forwardQueuedMax (${forwardQueuedMax}) queued checks`, () => {
    const batcher = new ForwardBatcher<number>(1000);
    for (let i = 0; i < forwardQueuedMax; i++) expect(batcher.add(`n${i % 3}`, i, 0)).toBe(true);
    expect(batcher.add("n1", -1, 0)).toBe(false);
    expect(batcher.drain("n0").length + batcher.size()).toBe(forwardQueuedMax);
    expect(batcher.add("n1", -1, 0)).toBe(true);
  });

  it("property: every check is sent exactly once, in order per owner, in batches within the bound", () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            owner: fc.integer({ min: 0, max: 3 }),
            dtMs: fc.integer({ min: 0, max: 4 }),
            drain: fc.boolean(),
          }),
          { maxLength: 2000 },
        ),
        fc.integer({ min: 0, max: 10 }),
        (ops, delayMs) => {
          const batcher = new ForwardBatcher<number>(delayMs);
          const sent = new Map<string, number[]>();
          const expected = new Map<string, number[]>();
          let nowMs = 0;
          ops.forEach((op, i) => {
            nowMs += op.dtMs;
            const owner = `n${op.owner}`;
            if (op.drain && i % 50 === 0) {
              const drained = batcher.drain(owner);
              if (drained.length > 0) sent.set(owner, [...(sent.get(owner) ?? []), ...drained]);
              return;
            }
            batcher.add(owner, i, nowMs);
            expected.set(owner, [...(expected.get(owner) ?? []), i]);
            for (const batch of batcher.due(nowMs)) {
              expect(batch.items.length).toBeGreaterThan(0);
              expect(batch.items.length).toBeLessThanOrEqual(forwardBatchChecksMax);
              sent.set(batch.ownerId, [...(sent.get(batch.ownerId) ?? []), ...batch.items]);
            }
          });
          for (const batch of batcher.due(nowMs + delayMs))
            sent.set(batch.ownerId, [...(sent.get(batch.ownerId) ?? []), ...batch.items]);
          expect(batcher.size()).toBe(0);
          expect(sent).toEqual(expected);
        },
      ),
      { numRuns: 200 },
    );
  });
});
