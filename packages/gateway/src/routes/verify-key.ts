// POST /v1/keys.verifyKey: the hot path. Hash once, decide, and answer without an await unless
// credits were spent or a rate-limit count needs covering on disk first.

import { decideVerification, type RatelimitRequest, type VerifyDecision } from "@keyraft/core";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { requestIdHeader } from "../app.js";
import { hashKey } from "../auth/hash.js";
import type { GatewayContext } from "../context.js";
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
function recordOutcome(ctx: GatewayContext, decision: VerifyDecision, nowMs: number, tags: readonly string[] | undefined): void {
  const key = decision.key;
  if (key === undefined) return;
  ctx.analytics.record(nowMs, key.id, key.apiId, key.identityId, decision.result.code, tags);
}

/** Waits for the credit spend (its outcome is authoritative) and the counter coverage. */
async function finish(
  ctx: GatewayContext,
  reply: FastifyReply,
  decision: VerifyDecision,
  cover: Promise<void> | null,
  nowMs: number,
  tags: readonly string[] | undefined,
): Promise<FastifyReply> {
  const { result } = decision;
  if (decision.creditSpend !== undefined) {
    const outcome = await ctx.deps.commandLog.append(decision.creditSpend);
    // Under replication a concurrent spend may have been ordered first: then this one was
    // refused at apply time and nothing was deducted.
    if (!outcome.ok) {
      result.valid = false;
      result.code = "USAGE_EXCEEDED";
    } else if (typeof outcome.remaining === "number") {
      result.remaining = outcome.remaining;
    }
  }
  if (cover !== null) await cover;
  recordOutcome(ctx, decision, nowMs, tags);
  return reply.send(result);
}

export function registerVerifyRoute(app: FastifyInstance, ctx: GatewayContext): void {
  const { deps } = ctx;
  const schema = { body: verifyKeyBody, response: verifyKeyResponse };
  const handler = (request: FastifyRequest, reply: FastifyReply) => {
    const body = request.body as VerifyKeyBody;
    reply.header(requestIdHeader, request.id);
    const nowMs = deps.nowMs();
    const decision = decideVerification(
      deps.state,
      deps.limiter,
      {
        requestId: request.id,
        hash: hashKey(body.key),
        apiId: body.apiId,
        permissions: body.authorization?.permissions,
        creditCost: body.remaining?.cost ?? 1,
        defaultLimitCost: body.ratelimit?.cost,
        ratelimits: body.ratelimits,
      },
      nowMs,
    );
    if (decision.kind === "badRequest") throw badRequest(decision.message);
    if (decision.triggeredRatelimit !== undefined) reply.header(triggeredHeader, decision.triggeredRatelimit);
    const cover = decision.touched.length === 0 ? null : deps.counterDurability.cover(decision.touched);
    if (decision.creditSpend === undefined && cover === null) {
      recordOutcome(ctx, decision, nowMs, body.tags);
      return reply.send(decision.result);
    }
    return finish(ctx, reply, decision, cover, nowMs, body.tags);
  };
  app.post("/v1/keys.verifyKey", { schema }, handler);
  // Legacy alias (upstream's deprecated REST route).
  app.post("/v1/keys/verify", { schema: { ...schema, deprecated: true } }, handler);
}
