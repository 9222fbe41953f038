import { afterEach, describe, expect, it, vi } from "vitest";
import { AppliedWaiters } from "../src/cluster/applied-waiters.js";

afterEach(() => {
  vi.useRealTimers();
});

describe("AppliedWaiters", () => {
  it("resolves a waiter once its index is applied, and an applied index at once", async () => {
    const waiters = new AppliedWaiters();
    waiters.applied(3);
    await waiters.waitFor(3, 1000);
    let done = false;
    const waiting = waiters.waitFor(5, 60_000).then(() => (done = true));
    waiters.applied(4);
    await Promise.resolve();
    expect(done).toBe(false);
    expect(waiters.size).toBe(1);
    waiters.applied(6);
    await waiting;
    expect(done).toBe(true);
    expect(waiters.size).toBe(0);
  });

  it("gives up after its timeout (a lagging node judges with its own view)", async () => {
    vi.useFakeTimers();
    const waiters = new AppliedWaiters();
    let done = false;
    const waiting = waiters.waitFor(10, 500).then(() => (done = true));
    await vi.advanceTimersByTimeAsync(499);
    expect(done).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    await waiting;
    expect(done).toBe(true);
    expect(waiters.size).toBe(0);
  });
});
