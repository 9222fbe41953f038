// Port of upstream's TestRateLimitAccuracy (svc/api/routes/v2_ratelimit_limit/accuracy_test.go):
// over several windows, limits, durations and load factors, ratelimit.limit admits at most
// `limit` per window (keyraft's sliding window never over-admits; upstream allows 1.2x) and, under
// the limit (80% load; keyraft counts in buckets and errs on the side of refusing near the limit),
// admits at least 95% of the requests. Requests are spread evenly over the windows on
// the harness clock.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { harness, type Harness } from "./app-harness.js";
import { dataOf, v2 } from "./v2-harness.js";

let h: Harness;
beforeAll(async () => {
  h = await harness();
});
afterAll(async () => {
  await h.app.close();
});

const windows = 5;

describe("v2 ratelimit.limit accuracy", () => {
  for (const limit of [5, 20]) {
    for (const durationMs of [1000, 60_000]) {
      for (const loadFactor of [0.8, 2, 5]) {
        it(`limit ${limit}, duration ${durationMs} ms, load ${loadFactor}x`, async () => {
          const identifier = `acc_${limit}_${durationMs}_${loadFactor}`;
          const requests = Math.round(windows * limit * loadFactor);
          const stepMs = (windows * durationMs) / requests;
          const startMs = h.clock.nowMs;
          let passed = 0;
          for (let i = 0; i < requests; i++) {
            h.clock.nowMs = startMs + Math.floor(i * stepMs);
            const data = dataOf<{ success: boolean }>(
              await v2(h, "ratelimit.limit", { namespace: "accuracy", identifier, limit, duration: durationMs }),
            );
            if (data.success) passed++;
          }
          h.clock.nowMs = startMs + windows * durationMs + durationMs;
          const allowed = windows * limit;
          expect(passed).toBeLessThanOrEqual(Math.min(requests, allowed));
          expect(passed).toBeGreaterThanOrEqual(Math.floor(0.95 * Math.min(requests, allowed)));
        });
      }
    }
  }
});
