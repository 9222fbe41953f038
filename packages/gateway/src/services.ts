// The services the route plugins draw from, built once by buildApp (app.ts) from the embedder's
// AppDeps. A route plugin never takes all of them: it declares the few it needs as its options
// type (`Pick<GatewayServices, ...>`), and the composition root passes this object.

import type { AuditContext, CommandOutcome, KeyCommand } from "@keyraft/core";
import type { FastifyRequest } from "fastify";
import { actorOf } from "./audit/actor.js";
import { auditRetentionMs } from "./audit/config.js";
import { GatewayMetrics } from "./metrics/gateway-metrics.js";
import { VerificationRecorder } from "./analytics/recorder.js";
import type { AppDeps } from "./deps.js";
import { V1Error } from "./errors.js";
import type { KeyMigrations } from "./key-migrations.js";
import { IdSource } from "./state/ids.js";
import { Verification } from "./verify/verification.js";

export interface GatewayServices {
  state: AppDeps["state"];
  commandLog: AppDeps["commandLog"];
  limiter: AppDeps["limiter"];
  counterDurability: AppDeps["counterDurability"];
  nowMs(): number;
  randomBytes(length: number): Uint8Array;
  verificationPeers: AppDeps["verificationPeers"] | undefined;
  creditLeases: AppDeps["creditLeases"] | undefined;
  rateLimits: AppDeps["rateLimits"] | undefined;
  /** Key migrations declared by KEYRAFT_KEY_MIGRATIONS (empty when none). */
  keyMigrations: KeyMigrations;
  ids: IdSource;
  analytics: VerificationRecorder;
  verification: Verification;
  metrics: GatewayMetrics;
  /** KEYRAFT_AUDIT_RETENTION_DAYS, or undefined: the default (audit/config.ts). */
  auditRetentionDays: number | undefined;
  /**
   * Appends a command with the audit context of `request` (its root key, id and time: every
   * replica derives the same audit entry) and waits for its durability; a refused command
   * becomes its v1 error.
   */
  submit(request: FastifyRequest, command: KeyCommand): Promise<Extract<CommandOutcome, { ok: true }>>;
}

export function createServices(deps: AppDeps): GatewayServices {
  const analytics = deps.analytics ?? new VerificationRecorder(deps.nowMs);
  const metrics = deps.metrics ?? new GatewayMetrics({ defaultMetrics: false });
  const { commandLog } = deps;
  return {
    state: deps.state,
    commandLog,
    limiter: deps.limiter,
    counterDurability: deps.counterDurability,
    nowMs: deps.nowMs,
    randomBytes: deps.randomBytes,
    verificationPeers: deps.verificationPeers,
    creditLeases: deps.creditLeases,
    rateLimits: deps.rateLimits,
    keyMigrations: deps.keyMigrations ?? new Map(),
    ids: new IdSource(deps.randomBytes, deps.nowMs),
    analytics,
    verification: new Verification({ ...deps, analytics, metrics }),
    metrics,
    auditRetentionDays: deps.auditRetentionDays,
    async submit(request, command) {
      const audit: AuditContext = {
        actorKeyId: actorOf(request),
        requestId: request.id,
        atMs: deps.nowMs(),
        retentionMs: auditRetentionMs(deps.auditRetentionDays),
      };
      const outcome = await commandLog.append({ ...command, audit });
      if (!outcome.ok) throw new V1Error(outcome.code, outcome.message);
      return outcome;
    },
  };
}

/** The id a create command's outcome names (every create command's outcome carries one). */
export function createdId(outcome: { id?: string }): string {
  if (outcome.id === undefined) throw new Error("invariant: the outcome of a create command names its id");
  return outcome.id;
}
