// coreDecisionsPerSec: the core verification decision (decideVerification from @keyraft/core)
// measured in process, without HTTP, JSON or hashing: a state built by commands holding the run's
// keys, requests drawn like the HTTP phase's. It runs on the main thread while no load runs.
import { performance } from "node:perf_hooks";
import {
  applyCommand,
  createKeyState,
  decideVerification,
  SlidingWindowLimiter,
  type KeyCommand,
  type KeyState,
  type VerifyRequest,
} from "@keyraft/core";
import type { Distribution } from "../args.js";
import { seededRandom } from "../prng.js";
import { indexSampler } from "../zipf.js";

export interface CoreMeasurement {
  /** Plain decisions (key found, valid, no limit, no credits) per second. */
  decisionsPerSec: number | null;
  /** Decisions on keys with a rate limit (the limiter judges and counts) per second. */
  ratelimitDecisionsPerSec: number | null;
  note: string | null;
}

const warmupMs = 300;
const measureMs = 1_000;
/** Requests prepared up front and cycled through, so the loop measures the decision only. */
const requestsPrepared = 65_536;

export async function measureCoreDecisions(
  keyCount: number,
  distribution: Distribution,
  zipfExponent: number,
): Promise<CoreMeasurement> {
  const nowMs = Date.now();
  const state = createKeyState();
  apply(state, { type: "createApi", apiId: "api_bench", name: "bench", nowMs });
  const plain = Math.max(1, Math.floor(keyCount / 2));
  for (let i = 0; i < keyCount; i++) {
    apply(state, createKey(`key_${i}`, i < plain ? null : { limit: 1_000_000, durationMs: 60_000 }, nowMs));
  }
  const limiter = new SlidingWindowLimiter();
  const plainRate = decisionsPerSec(state, limiter, requests(0, plain, distribution, zipfExponent), nowMs);
  const ratelimitRate =
    keyCount > plain
      ? decisionsPerSec(state, limiter, requests(plain, keyCount - plain, distribution, zipfExponent), nowMs)
      : null;
  return { decisionsPerSec: plainRate, ratelimitDecisionsPerSec: ratelimitRate, note: null };
}

function apply(state: KeyState, command: KeyCommand): void {
  const outcome = applyCommand(state, command);
  if (!outcome.ok) throw new Error(`core set-up command ${command.type} failed: ${JSON.stringify(outcome)}`);
}

function createKey(keyId: string, ratelimit: { limit: number; durationMs: number } | null, nowMs: number): KeyCommand {
  return {
    type: "createKey",
    keyId,
    apiId: "api_bench",
    hash: `hash_${keyId}`,
    start: "bench_",
    name: keyId,
    ownerId: null,
    identity: null,
    meta: null,
    expiresAtMs: null,
    remaining: null,
    refill: null,
    ratelimit,
    enabled: true,
    environment: null,
    permissions: [],
    roles: [],
    allowCreatePermissions: true,
    allowCreateRoles: true,
    nowMs,
  };
}

function requests(first: number, count: number, distribution: Distribution, zipfExponent: number): VerifyRequest[] {
  const sample = indexSampler(count, distribution, seededRandom(11), zipfExponent);
  return Array.from({ length: requestsPrepared }, (_, i): VerifyRequest => ({
    requestId: `req_${i}`,
    hash: `hash_key_${first + sample()}`,
    apiId: "api_bench",
    creditCost: 1,
  }));
}

function decisionsPerSec(
  state: KeyState,
  limiter: SlidingWindowLimiter,
  prepared: readonly VerifyRequest[],
  nowMs: number,
): number {
  let valid = 0;
  const run = (durationMs: number): { decisions: number; elapsedMs: number } => {
    const startMs = performance.now();
    let decisions = 0,
      elapsedMs = 0;
    // Check the clock every 4096 decisions: reading it is not free.
    while (elapsedMs < durationMs) {
      for (let i = 0; i < 4096; i++) {
        const decision = decideVerification(
          state,
          limiter,
          prepared[(decisions + i) % prepared.length] as VerifyRequest,
          nowMs,
        );
        if (decision.kind === "result" && decision.result.valid) valid++;
      }
      decisions += 4096;
      elapsedMs = performance.now() - startMs;
    }
    return { decisions, elapsedMs };
  };
  run(warmupMs);
  valid = 0;
  const { decisions, elapsedMs } = run(measureMs);
  // Every prepared request names an existing, enabled key of the api: all must be valid, or the
  // loop measured something else (an error path) and the figure would be meaningless.
  if (valid !== decisions)
    throw new Error(`core micro-benchmark: ${decisions - valid} of ${decisions} decisions were not VALID`);
  return Math.round(decisions / (elapsedMs / 1000));
}
