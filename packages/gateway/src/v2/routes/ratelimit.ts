// ratelimit.limit and ratelimit.multiLimit (docs/api-v2.md). Namespaces by id or name, created on
// first use with ratelimit.*.create_namespace; the namespace's override applies (exact identifier
// first, then keyraft's wildcard precedence); counters are shared with v1 ratelimits.limit.
// An override of limit 0 refuses every request with a cost (a block list, docs/api-v2.md "Rate limiting").

import { type OverrideRecord } from "@keyraft/core";
import type { GatewayServices } from "../../services.js";
import type { LimitAnswer } from "../../counters/ratelimit/judge-here.js";
import { bothCovered } from "../../counters/ratelimit/judge-here.js";
import {
  judgeNamespaceCheck,
  planNamespaceCheck,
  type PlannedNamespaceCheck,
} from "../../counters/ratelimit/namespace-check.js";
import { anyOf, holds, requirePermissions, type Principal } from "../auth.js";
import { Envelope, ok, v2Responses } from "../envelope.js";
import { resolveOrCreateNamespaces } from "../namespaces.js";
import { principalOf, type V2RoutePlugin } from "../route.js";
import { insufficientPermissions } from "../problem.js";
import { LimitData, LimitRequest, MultiLimitBody, MultiLimitData } from "../schemas/ratelimit.js";

interface LimitEntry {
  namespace: string;
  identifier: string;
  limit: number;
  duration: number;
  cost: number;
}

interface Judged {
  planned: PlannedNamespaceCheck;
  answer: LimitAnswer;
}

const limitPermission = (namespaceId: string) => anyOf("ratelimit.*.limit", `ratelimit.${namespaceId}.limit`);

function withOverride<T extends object>(data: T, override: OverrideRecord | undefined): T & { overrideId?: string } {
  return override === undefined ? data : { ...data, overrideId: override.id };
}

function plan(ctx: GatewayServices, namespaceId: string, entry: LimitEntry): PlannedNamespaceCheck {
  return planNamespaceCheck(ctx.state, namespaceId, entry.identifier, {
    limit: entry.limit,
    durationMs: entry.duration,
    cost: entry.cost,
    async: false,
  });
}

/**
 * Judges every entry together: on one node (or a cluster of one) atomically in one limiter call;
 * in a cluster each at its owner, first reading every counter (cost 0) and consuming only when all
 * fit, so a refused call consumes nothing unless another request raced it between the two steps.
 */
async function judgeAll(
  ctx: GatewayServices,
  ids: readonly string[],
  entries: readonly LimitEntry[],
): Promise<Judged[]> {
  const deps = ctx;
  const planned = entries.map((entry, i) => plan(ctx, ids[i]!, entry));
  if (deps.rateLimits === undefined || deps.rateLimits.alone()) {
    const judged = deps.limiter.limit(
      planned.map((item) => item.check),
      deps.nowMs(),
    );
    const cover = bothCovered(deps.counterDurability.cover(judged.touched), null);
    if (cover !== null) await cover;
    return planned.map((item, i) => {
      const outcome = judged.outcomes[i]!;
      return {
        planned: item,
        answer: {
          success: outcome.success,
          limit: outcome.limit,
          remaining: outcome.remaining,
          reset: outcome.resetAtMs,
        },
      };
    });
  }
  const reads = await Promise.all(
    planned.map((item, i) =>
      judgeNamespaceCheck(ctx, ids[i]!, entries[i]!.identifier, { ...item, check: { ...item.check, cost: 0 } }),
    ),
  );
  const fits = reads.map((read, i) => read.remaining >= planned[i]!.check.cost);
  if (!fits.every(Boolean)) {
    return planned.map((item, i) => ({ planned: item, answer: { ...reads[i]!, success: fits[i]! } }));
  }
  const answers = await Promise.all(
    planned.map((item, i) => judgeNamespaceCheck(ctx, ids[i]!, entries[i]!.identifier, item)),
  );
  return planned.map((item, i) => ({ planned: item, answer: answers[i]! }));
}

/** multiLimit: `ratelimit.*.limit`, or `ratelimit.<id>.limit` for every distinct namespace. */
function requireMultiLimit(principal: Principal, namespaceIds: readonly string[]): void {
  if (holds(principal, "ratelimit.*.limit")) return;
  const missing = [...new Set(namespaceIds)].filter((id) => !holds(principal, `ratelimit.${id}.limit`));
  if (missing.length > 0)
    throw insufficientPermissions(
      `Missing one of these permissions: ratelimit.*.limit or ${missing.map((id) => `ratelimit.${id}.limit`).join(" and ")}`,
    );
}

export const ratelimitRoutes: V2RoutePlugin = (app, ctx, done) => {
  app.post(
    "/ratelimit.limit",
    { schema: { body: LimitRequest, response: v2Responses(Envelope(LimitData)) } },
    async (request) => {
      const principal = principalOf(request);
      const body = request.body;
      const ids = await resolveOrCreateNamespaces(ctx, request, principal, [body.namespace]);
      const namespaceId = ids.get(body.namespace) ?? "";
      requirePermissions(principal, limitPermission(namespaceId));
      const planned = plan(ctx, namespaceId, body);
      const answer = await judgeNamespaceCheck(ctx, namespaceId, body.identifier, planned);
      return ok(
        request,
        withOverride(
          { limit: answer.limit, remaining: answer.remaining, reset: answer.reset, success: answer.success },
          planned.override,
        ),
      );
    },
  );

  app.post(
    "/ratelimit.multiLimit",
    { schema: { body: MultiLimitBody, response: v2Responses(Envelope(MultiLimitData)) } },
    async (request) => {
      const principal = principalOf(request);
      const entries = request.body;
      const byName = await resolveOrCreateNamespaces(
        ctx,
        request,
        principal,
        entries.map((entry) => entry.namespace),
      );
      const ids = entries.map((entry) => byName.get(entry.namespace) ?? "");
      requireMultiLimit(principal, ids);
      const judged = await judgeAll(ctx, ids, entries);
      const passed = judged.every((item) => item.answer.success);
      return ok(request, {
        passed,
        limits: judged.map(({ planned, answer }, i) =>
          withOverride(
            {
              namespace: entries[i]!.namespace,
              identifier: entries[i]!.identifier,
              limit: answer.limit,
              remaining: answer.remaining,
              reset: answer.reset,
              passed: answer.success,
            },
            planned.override,
          ),
        ),
      });
    },
  );
  done();
};
