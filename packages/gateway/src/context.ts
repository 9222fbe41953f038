// What every route needs: the dependencies plus the derived helpers (ids, hashing, the command
// append that maps outcomes to v1 errors). Built once by buildApp.

import type { AuditContext, CommandOutcome, KeyCommand } from "@keyraft/core";
import type { FastifyRequest } from "fastify";
import { actorOf } from "./audit/actor.js";
import { auditRetentionMs } from "./audit/config.js";
import { V1Error } from "./errors.js";
import type { AppDeps } from "./app.js";
import { IdSource } from "./state/ids.js";
import { VerificationRecorder } from "./analytics/recorder.js";
import { GatewayMetrics } from "./metrics/gateway-metrics.js";

export interface GatewayContext {
  deps: AppDeps;
  ids: IdSource;
  analytics: VerificationRecorder;
  metrics: GatewayMetrics;
  /**
   * Appends a command with the audit context of `request` (its root key, id and time: every
   * replica derives the same audit entry) and waits for its durability; a refused command
   * becomes its v1 error.
   */
  submit(request: FastifyRequest, command: KeyCommand): Promise<Extract<CommandOutcome, { ok: true }>>;
}

export function createContext(deps: AppDeps): GatewayContext {
  const ids = new IdSource(deps.randomBytes, deps.nowMs);
  return {
    deps,
    ids,
    analytics: deps.analytics ?? new VerificationRecorder(deps.nowMs),
    metrics: deps.metrics ?? new GatewayMetrics({ defaultMetrics: false }),
    async submit(request, command) {
      const audit: AuditContext = {
        actorKeyId: actorOf(request),
        requestId: request.id,
        atMs: deps.nowMs(),
        retentionMs: auditRetentionMs(deps.auditRetentionDays),
      };
      const outcome = await deps.commandLog.append({ ...command, audit });
      if (!outcome.ok) throw new V1Error(outcome.code, outcome.message);
      return outcome;
    },
  };
}
