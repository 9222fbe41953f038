// The verification service (verify/verification.ts) on its own: what the v1 route, a forwarded
// verification and any other API version's route get from it.
import { SlidingWindowLimiter } from "@keyraft/core";
import { describe, expect, it } from "vitest";
import { hashKey, V1Error, VerificationRecorder, volatileCounterDurability } from "@keyraft/gateway";
import { Verification } from "../src/verify/verification.js";
import { harness } from "./app-harness.js";

async function setup(keyBody: Record<string, unknown>) {
  const h = await harness();
  const { key, keyId, apiId } = await h.createKey(keyBody);
  const nowMs = () => h.clock.nowMs;
  const analytics = new VerificationRecorder(nowMs);
  const verification = new Verification({
    state: h.machine.state,
    limiter: new SlidingWindowLimiter(),
    commandLog: h.log,
    counterDurability: volatileCounterDurability,
    analytics,
    nowMs,
  });
  return { h, key, keyId, apiId, verification, analytics };
}

describe("Verification", () => {
  it("answers a key without credits or limits synchronously, with the decision's result", async () => {
    const { h, key, keyId, verification } = await setup({});
    const outcome = verification.verify(hashKey(key), "req_1", {});
    expect(outcome).not.toBeInstanceOf(Promise);
    expect(outcome).toMatchObject({ result: { keyId, valid: true, code: "VALID", requestId: "req_1" } });
    expect((outcome as { triggeredRatelimit?: string }).triggeredRatelimit).toBeUndefined();
    await h.app.close();
  });

  it("spends credits on the log and answers the remaining count, then USAGE_EXCEEDED", async () => {
    const { h, key, verification } = await setup({ remaining: 2 });
    const codes: string[] = [];
    const remaining: (number | undefined)[] = [];
    for (let i = 0; i < 3; i++) {
      const outcome = verification.verify(hashKey(key), `req_${i}`, {});
      // A credit spend is waited for; a refusal spends nothing and is answered at once.
      expect(outcome instanceof Promise).toBe(i < 2);
      const { result } = await outcome;
      codes.push(result.code);
      remaining.push(result.remaining);
    }
    expect(codes).toEqual(["VALID", "VALID", "USAGE_EXCEEDED"]);
    expect(remaining).toEqual([1, 0, 0]);
    await h.app.close();
  });

  it("names the rate limit that refused a verification, also in the forwarded answer's wire shape", async () => {
    const { h, key, verification } = await setup({ ratelimit: { limit: 1, duration: 60_000 } });
    const first = await verification.verifyForwarded(hashKey(key), "req_a", {});
    expect(first).toMatchObject({ result: { valid: true, code: "VALID" }, triggered: null });
    const second = await verification.verifyForwarded(hashKey(key), "req_b", {});
    expect(second).toMatchObject({ result: { valid: false, code: "RATE_LIMITED" }, triggered: "default" });
    const third = verification.verify(hashKey(key), "req_c", {});
    expect(third).toMatchObject({ result: { code: "RATE_LIMITED" }, triggeredRatelimit: "default" });
    await h.app.close();
  });

  it("records the verifications of known keys for analytics", async () => {
    const { h, key, keyId, apiId, verification, analytics } = await setup({});
    verification.verify(hashKey(key), "req_1", { tags: ["a"] });
    verification.verify(hashKey("not a key"), "req_2", {});
    const series = analytics.select({ apiId, startMs: 0, endMs: h.clock.nowMs + 3_600_000 });
    expect(series.map(({ keyId: id, tags }) => ({ id, tags }))).toEqual([{ id: keyId, tags: ["a"] }]);
    await h.app.close();
  });

  it("throws a 400 V1Error for an invalid permission query", async () => {
    const { h, key, verification } = await setup({});
    let thrown: unknown;
    try {
      verification.verify(hashKey(key), "req_1", { authorization: { permissions: { nope: 1 } } });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(V1Error);
    expect((thrown as V1Error).statusCode).toBe(400);
    await h.app.close();
  });
});
