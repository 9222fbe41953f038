// The driver's only sources of time. Production uses the system clock; the driver simulation
// (sim/driver-sim.ts) injects a fake one it advances step by step, so a run is replayable.

/** Wall-clock time in ms and a repeating timer. */
export interface DriverClock {
  nowMs(): number;
  setInterval(callback: () => void, intervalMs: number): unknown;
  clearInterval(handle: unknown): void;
}

export const systemClock: DriverClock = {
  nowMs: () => Date.now(),
  setInterval: (callback, intervalMs) => setInterval(callback, intervalMs),
  clearInterval: (handle) => clearInterval(handle as NodeJS.Timeout),
};
