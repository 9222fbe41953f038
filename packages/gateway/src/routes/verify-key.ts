// POST /v1/keys.verifyKey: the hot path. Hash once, decide, and answer without an await unless
// credits were spent or a rate-limit count needs covering on disk first.

import { decideVerification, type RatelimitRequest, type VerifyDecision, type VerifyResult } from "@keyraft/core";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { requestIdHeader } from "../app.js";
import { hashKey } from "../auth/hash.js";
import type { GatewayContext } from "../context.js";
import type { VerifiedAnswer } from "../counters/ratelimit/cluster-limits.js";
import { bothCovered } from "../counters/ratelimit/judge-here.js";
import { badRequest } from "../errors.js";
import { verifyKeyBody, verifyKeyResponse } from "../schemas/keys.js";

interface VerifyKeyBody {
  apiId?: string;
  key: string;
  tags?: string[];
  authorization?: { permissions?: unknown };
  remaining?: { cost?: number };
  ratelimit?: { cost?: number };
  ratelimits?: RatelimitRequest[];
}

export const triggeredHeader = "Unkey-Ratelimit-Triggered";

/** Buffers the outcome for analytics (O(1), no await); verifications of unknown keys are not attributable. */
function recordOutcome(
  ctx: GatewayContext,
  decision: VerifyDecision,
  nowMs: number,
  tags: readonly string[] | undefined,
): void {
  const key = decision.key;
  if (key === undefined) return;
  ctx.analytics.record(nowMs, key.id, key.apiId, key.identityId, decision.result.code, tags);
}

/** Where a verification's answer goes: the HTTP reply, or the answer to a verification another node forwarded here (counters/ratelimit). */
interface VerifySink<R> {
  header(name: string, value: string): unknown;
  send(result: VerifyResult): R;
}

function answerSink(): VerifySink<VerifiedAnswer> {
  let triggered: string | null = null;
  return {
    header(name, value) {
      if (name === triggeredHeader) triggered = value;
    },
    send: (result) => ({ result, triggered }),
  };
}

/** The rate-limit counts a decision admitted: on disk, and in a cluster at the owner's successor (counters/ratelimit). */
function coverTouched(ctx: GatewayContext, decision: VerifyDecision): Promise<void> | null {
  const disk = ctx.deps.counterDurability.cover(decision.touched);
  const owner = decision.derived?.limitOwnerId;
  return bothCovered(
    disk,
    owner === undefined ? null : (ctx.deps.rateLimits?.coverVerification(owner, decision.touched) ?? null),
  );
}

/** Waits for the counter coverage, then the credit spend (its outcome is authoritative). */
async function finish<R>(
  ctx: GatewayContext,
  reply: VerifySink<R>,
  decision: VerifyDecision,
  cover: Promise<void> | null,
  nowMs: number,
  tags: readonly string[] | undefined,
): Promise<R> {
  const { result } = decision;
  // Coverage first: a verification whose rate-limit count cannot be covered (a 503 in a cluster
  // takeover, counters/ratelimit) must not have spent a credit.
  if (cover !== null) await cover;
  if (decision.creditSpend !== undefined) {
    // From this node's credit lease when it has one (counters/credits), else decided on the log.
    const spend = decision.creditSpend;
    const leased =
      ctx.deps.creditLeases === undefined ? null : await ctx.deps.creditLeases.spend(spend.keyId, spend.cost);
    if (leased !== null && leased.t === "admitted") {
      if (leased.remaining !== null) result.remaining = leased.remaining;
    } else if (leased !== null) {
      // The owner of the key's last credits found too few (docs/counters.md): nothing was spent.
      result.valid = false;
      result.code = "USAGE_EXCEEDED";
      result.remaining = leased.remaining;
    } else {
      const outcome = await ctx.deps.commandLog.append(spend);
      // Under replication a concurrent spend may have been ordered first: then this one was
      // refused at apply time and nothing was deducted.
      if (!outcome.ok) {
        result.valid = false;
        result.code = "USAGE_EXCEEDED";
        // What a spend on the log could still draw from: the credits in no node's lease.
        const ledger = ctx.deps.state.creditLedgers.get(spend.keyId);
        if (ledger !== undefined) result.remaining = ledger.unleased;
      } else if (typeof outcome.remaining === "number") {
        result.remaining = outcome.remaining;
      }
    }
  }
  recordOutcome(ctx, decision, nowMs, tags);
  return reply.send(result);
}

export function registerVerifyRoute(app: FastifyInstance, ctx: GatewayContext): void {
  const { deps } = ctx;
  const schema = { body: verifyKeyBody, response: verifyKeyResponse };
  // The verification here: on a request, or on a verification forwarded by another node (this node serves its limits).
  const verifyHere = <R>(
    body: Omit<VerifyKeyBody, "key">,
    hash: string,
    requestId: string,
    reply: VerifySink<R>,
  ): R | Promise<R> => {
    const nowMs = deps.nowMs();
    const decision = decideVerification(
      deps.state,
      deps.limiter,
      {
        requestId,
        hash,
        apiId: body.apiId,
        permissions: body.authorization?.permissions,
        creditCost: body.remaining?.cost ?? 1,
        defaultLimitCost: body.ratelimit?.cost,
        ratelimits: body.ratelimits,
      },
      nowMs,
    );
    if (decision.kind === "badRequest") throw badRequest(decision.message);
    if (decision.evicted.length > 0) ctx.deps.counterDurability.forget?.(decision.evicted);
    if (decision.triggeredRatelimit !== undefined) reply.header(triggeredHeader, decision.triggeredRatelimit);
    const cover = decision.touched.length === 0 ? null : coverTouched(ctx, decision);
    if (decision.creditSpend === undefined && cover === null) {
      recordOutcome(ctx, decision, nowMs, body.tags);
      return reply.send(decision.result);
    }
    return finish(ctx, reply, decision, cover, nowMs, body.tags);
  };
  deps.rateLimits?.setLocalVerifier((hash, requestId, fields) =>
    Promise.resolve(verifyHere(fields, hash, requestId, answerSink())),
  );
  const handler = (request: FastifyRequest, reply: FastifyReply) => {
    const body = request.body as VerifyKeyBody;
    reply.header(requestIdHeader, request.id);
    const hash = hashKey(body.key);
    // In a cluster, a verification with rate limits is judged by the node serving their subject.
    const elsewhere = deps.rateLimits?.verifyElsewhere(hash, body, request.id) ?? null;
    if (elsewhere === null) return verifyHere(body, hash, request.id, reply);
    return elsewhere.then(({ result, triggered }) => {
      if (triggered !== null) reply.header(triggeredHeader, triggered);
      return reply.send(result);
    });
  };
  app.post("/v1/keys.verifyKey", { schema }, handler);
  // Legacy alias (upstream's deprecated REST route).
  app.post("/v1/keys/verify", { schema: { ...schema, deprecated: true } }, handler);
}
